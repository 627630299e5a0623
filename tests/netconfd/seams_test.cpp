// The server's three seams (docs/architecture.md), each used as a new capability would use it,
// on a running Server: an RPC handler added and removed at run time (rpc/dispatcher.hpp), a
// state provider (read/stateprovider.hpp) and a second transport (transport/connection.hpp),
// here a socketpair, beside the server's SSH listener.
#include "server.hpp"

#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <future>
#include <list>
#include <thread>

namespace ncstore::netconfd {
namespace {

constexpr const char* kEom = "]]>]]>";

/// A file descriptor, closed with its owner.
class Fd {
public:
    explicit Fd(int fd = -1) : fd_(fd) {}
    ~Fd() {
        if (fd_ >= 0) {
            ::close(fd_);
        }
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    int get() const { return fd_; }

private:
    int fd_;
};

/// One end of a socketpair as a NETCONF connection of user "admin".
class PipeConnection final : public transport::Connection {
public:
    explicit PipeConnection(int fd) : fd_(fd), wake_(::eventfd(0, EFD_NONBLOCK)) {}
    const std::string& user() const override { return user_; }
    const std::string& host() const override { return host_; }
    std::uint16_t port() const override { return 0; }
    // RFC 6022 has no identity for a local socket; the test's transport borrows SSH's.
    const char* monitoringTransport() const override { return "ietf-netconf-monitoring:netconf-ssh"; }
    ReadResult read(std::string& out, std::chrono::milliseconds timeout) override {
        if (broken_) {
            return ReadResult::Closed;
        }
        pollfd fds[2] = {{fd_.get(), POLLIN, 0}, {wake_.get(), POLLIN, 0}};
        const int n = ::poll(fds, 2, static_cast<int>(timeout.count()));
        if (n == 0) {
            return ReadResult::Timeout;
        }
        if (n < 0 || broken_) {
            return ReadResult::Closed;
        }
        if (fds[1].revents & POLLIN) {
            std::uint64_t v = 0;
            EXPECT_EQ(::read(wake_.get(), &v, sizeof v), static_cast<ssize_t>(sizeof v));
            return ReadResult::Woken;
        }
        char buf[4096];
        const ssize_t got = ::read(fd_.get(), buf, sizeof buf);
        if (got <= 0) {
            return ReadResult::Closed;
        }
        out.append(buf, static_cast<std::size_t>(got));
        return ReadResult::Data;
    }
    bool write(std::string_view data) override {
        while (!data.empty()) {
            const ssize_t sent = ::send(fd_.get(), data.data(), data.size(), MSG_NOSIGNAL);
            if (sent <= 0 || broken_) {
                return false;
            }
            data.remove_prefix(static_cast<std::size_t>(sent));
        }
        return true;
    }
    void wake() override {
        const std::uint64_t one = 1;
        EXPECT_EQ(::write(wake_.get(), &one, sizeof one), static_cast<ssize_t>(sizeof one));
    }
    void shutdown() override {
        broken_ = true;
        ::shutdown(fd_.get(), SHUT_RDWR);
        wake();
    }
    void close() override { ::shutdown(fd_.get(), SHUT_RDWR); }
    bool peerGone() const override {
        pollfd p{fd_.get(), POLLRDHUP, 0};
        return broken_ || (::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)));
    }

private:
    Fd fd_;
    Fd wake_;
    std::string user_ = "admin";
    std::string host_ = "socketpair";
    std::atomic<bool> broken_{false};
};

/// Hands each connect()'s server end to the server on a thread of its own.
class PipeListener final : public transport::Listener {
public:
    void start(Serve serve) override { serve_ = std::move(serve); }
    void stop() override {
        for (auto& t : threads_) {
            t.join();
        }
        threads_.clear();
    }
    std::uint16_t port() const override { return 0; }
    /// The client end of a new connection.
    int connect() {
        int sv[2];
        EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
        threads_.emplace_back([this, fd = sv[1]] { serve_(std::make_unique<PipeConnection>(fd)); });
        return sv[0];
    }

private:
    Serve serve_;
    std::list<std::thread> threads_;
};

/// A client session over the socketpair, base:1.0 framing.
class Client {
public:
    explicit Client(int fd) : fd_(fd) {
        hello_ = receive();
        send("<hello xmlns=\"urn:ietf:params:xml:ns:netconf:base:1.0\"><capabilities><capability>"
             "urn:ietf:params:netconf:base:1.0</capability></capabilities></hello>");
    }
    const std::string& hello() const { return hello_; }
    /// The reply to the operation `body`.
    std::string rpc(const std::string& body) {
        send("<rpc message-id=\"" + std::to_string(++id_) +
             "\" xmlns=\"urn:ietf:params:xml:ns:netconf:base:1.0\">" + body + "</rpc>");
        return receive();
    }

private:
    void send(const std::string& message) {
        const std::string framed = message + kEom;
        ASSERT_EQ(::send(fd_.get(), framed.data(), framed.size(), MSG_NOSIGNAL),
                  static_cast<ssize_t>(framed.size()));
    }
    std::string receive() {
        for (;;) {
            if (const auto end = buffer_.find(kEom); end != std::string::npos) {
                std::string message = buffer_.substr(0, end);
                buffer_.erase(0, end + std::strlen(kEom));
                return message;
            }
            pollfd p{fd_.get(), POLLIN, 0};
            if (::poll(&p, 1, 10000) != 1) {
                ADD_FAILURE() << "no reply within 10 s";
                return {};
            }
            char buf[4096];
            const ssize_t got = ::read(fd_.get(), buf, sizeof buf);
            if (got <= 0) {
                return {};
            }
            buffer_.append(buf, static_cast<std::size_t>(got));
        }
    }

    Fd fd_;
    std::string buffer_;
    std::string hello_;
    int id_ = 0;
};

constexpr const char* kModule = R"(module seam-test {
  yang-version 1.1;
  namespace "urn:ncstore:test:seam";
  prefix st;
  container gauges {
    config false;
    leaf temperature { type int32; }
  }
  rpc ping {
    input { leaf text { type string; } }
    output { leaf echo { type string; } }
  }
}
)";

constexpr const char* kPing = "<ping xmlns=\"urn:ncstore:test:seam\"><text>hi</text></ping>";

/// The device's own gauges, as an application would provide them.
class Gauges final : public StateProvider {
public:
    std::vector<Top> tops() const override { return {{"seam-test", "gauges"}}; }
    Tree state(const ly_ctx* ctx) const override {
        ++calls;
        lyd_node* node = nullptr;
        EXPECT_EQ(lyd_new_path(nullptr, ctx, "/seam-test:gauges/temperature", "41", 0, &node), LY_SUCCESS);
        return Tree{node};
    }
    mutable std::atomic<int> calls{0};
};

class Seams : public ::testing::Test {
protected:
    void SetUp() override {
        std::filesystem::create_directories(dir_.path() / "yang");
        std::ofstream(dir_.path() / "yang" / "seam-test.yang") << kModule;
        ServerConfig config;
        config.dataDir = dir_.path() / "data";
        config.port = 0;
        config.durability = "off";
        config.yangDirs = {dir_.path() / "yang"};
        server_ = std::make_unique<Server>(config);
        server_->start();
        auto listener = std::make_unique<PipeListener>();
        pipes_ = listener.get();
        server_->addListener(std::move(listener));
    }
    void TearDown() override { server_.reset(); }
    Client connect() { return Client(pipes_->connect()); }

    ncstore::test::TempDir dir_;
    std::unique_ptr<Server> server_;
    PipeListener* pipes_ = nullptr; // owned by the server
};

Reply echo(Request& r) {
    const lyd_node* text = lyd_child(r.op);
    return Reply::output(std::string("<echo xmlns=\"urn:ncstore:test:seam\">") +
                         (text ? lyd_get_value(text) : "") + "</echo>");
}

TEST_F(Seams, ARegisteredRpcIsAnsweredAndAnUnregisteredOneIsNotSupported) {
    Client c = connect();
    EXPECT_NE(c.rpc(kPing).find("operation-not-supported"), std::string::npos);
    server_->dispatcher().add("seam-test", "ping", Operation{echo});
    const std::string reply = c.rpc(kPing);
    EXPECT_NE(reply.find("<echo xmlns=\"urn:ncstore:test:seam\">hi</echo>"), std::string::npos) << reply;
    EXPECT_TRUE(server_->dispatcher().remove("seam-test", "ping"));
    EXPECT_FALSE(server_->dispatcher().remove("seam-test", "ping"));
    EXPECT_NE(c.rpc(kPing).find("operation-not-supported"), std::string::npos);
}

TEST_F(Seams, AHandlerRemovedWhileItRunsFinishesItsRpc) {
    std::promise<void> entered;
    std::promise<void> release;
    auto released = release.get_future().share();
    server_->dispatcher().add("seam-test", "ping", Operation{[&, released](Request& r) {
                                  entered.set_value();
                                  released.wait();
                                  return echo(r);
                              }});
    Client c = connect();
    auto reply = std::async(std::launch::async, [&] { return c.rpc(kPing); });
    entered.get_future().wait();
    EXPECT_TRUE(server_->dispatcher().remove("seam-test", "ping"));
    release.set_value();
    EXPECT_NE(reply.get().find(">hi</echo>"), std::string::npos);
    EXPECT_NE(c.rpc(kPing).find("operation-not-supported"), std::string::npos);
}

TEST_F(Seams, AStateProviderIsReadByGetAndOnlyWhenItsFilterCanSelectIt) {
    auto gauges = std::make_shared<Gauges>();
    server_->reads().addProvider("gauges", gauges);
    Client c = connect();
    const std::string filtered =
        c.rpc("<get><filter type=\"subtree\"><gauges xmlns=\"urn:ncstore:test:seam\"/></filter></get>");
    EXPECT_NE(filtered.find("<temperature>41</temperature>"), std::string::npos) << filtered;
    EXPECT_NE(c.rpc("<get/>").find("<temperature>41</temperature>"), std::string::npos);
    EXPECT_EQ(gauges->calls, 2);
    // A read whose filter selects only other top-level nodes does not ask it; nor does get-config.
    const std::string other = c.rpc("<get><filter type=\"subtree\"><netconf-state "
                                    "xmlns=\"urn:ietf:params:xml:ns:yang:ietf-netconf-monitoring\"><sessions/"
                                    "></netconf-state></filter></get>");
    EXPECT_NE(other.find("<session-id>"), std::string::npos) << other;
    EXPECT_EQ(c.rpc("<get-config><source><running/></source></get-config>").find("temperature"),
              std::string::npos);
    EXPECT_EQ(gauges->calls, 2);
    EXPECT_TRUE(server_->reads().removeProvider("gauges"));
    EXPECT_EQ(c.rpc("<get/>").find("temperature"), std::string::npos);
}

TEST_F(Seams, ASecondTransportServesSessionsBesideSsh) {
    EXPECT_NE(server_->port(), 0); // the SSH listener of start()
    Client a = connect();
    Client b = connect();
    EXPECT_NE(a.hello().find("<session-id>"), std::string::npos) << a.hello();
    EXPECT_NE(a.hello().find("urn:ietf:params:netconf:base:1.1"), std::string::npos);
    // Both sessions are in the session table, with the transport's user and host.
    const std::string sessions =
        a.rpc("<get><filter type=\"subtree\"><netconf-state "
              "xmlns=\"urn:ietf:params:xml:ns:yang:ietf-netconf-monitoring\"><sessions/>"
              "</netconf-state></filter></get>");
    std::size_t entries = 0;
    for (std::size_t at = sessions.find("<source-host>socketpair</source-host>"); at != std::string::npos;
         at = sessions.find("<source-host>socketpair</source-host>", at + 1)) {
        ++entries;
    }
    EXPECT_EQ(entries, 2u) << sessions;
    // And they read and write the one store.
    EXPECT_NE(b.rpc("<edit-config><target><running/></target><config><interfaces "
                    "xmlns=\"urn:ietf:params:xml:ns:yang:ietf-interfaces\"><interface><name>p0</name><type "
                    "xmlns:ianaift=\"urn:ietf:params:xml:ns:yang:iana-if-type\">ianaift:ethernetCsmacd</type>"
                    "</interface></interfaces></config></edit-config>")
                  .find("<ok/>"),
              std::string::npos);
    EXPECT_NE(a.rpc("<get-config><source><running/></source></get-config>").find("<name>p0</name>"),
              std::string::npos);
    EXPECT_NE(b.rpc("<close-session/>").find("<ok/>"), std::string::npos);
}

} // namespace
} // namespace ncstore::netconfd
