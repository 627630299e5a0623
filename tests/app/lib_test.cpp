// libncstore-app against a fake ncstored: a unix socket in a temporary directory that speaks the
// protocol with the codec, asserts what the library sends and answers as the server would.
#include "ncstore/app.hpp"

#include "ncstore/app/protocol.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <future>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace app = ncstore::app;
namespace proto = ncstore::app::proto;
using proto::Field;
using proto::Fields;
using proto::Type;
using namespace std::chrono_literals;

namespace {

// What the library must have done by then; a failing test waits this long at most per step.
constexpr auto kWait = 5s;

class FakeServer {
public:
    explicit FakeServer(const std::filesystem::path& dir) : path_((dir / proto::kSocketName).string()) {
        listener_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (listener_ < 0) {
            throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
        }
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        std::strncpy(addr.sun_path, path_.c_str(), sizeof(addr.sun_path) - 1);
        if (::bind(listener_, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0 ||
            ::listen(listener_, 4) != 0) {
            throw std::runtime_error("bind/listen " + path_ + ": " + std::strerror(errno));
        }
    }
    ~FakeServer() {
        closeConnection();
        ::close(listener_);
    }
    FakeServer(const FakeServer&) = delete;
    FakeServer& operator=(const FakeServer&) = delete;

    const std::string& path() const { return path_; }

    void accept() {
        if (!wait(listener_, kWait)) {
            throw std::runtime_error("no client connected");
        }
        conn_ = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
        if (conn_ < 0) {
            throw std::runtime_error(std::string("accept: ") + std::strerror(errno));
        }
        decoder_ = proto::Decoder();
    }

    /// The next message, or none when nothing came within `timeout`; throws when the client closed.
    std::optional<proto::Message> tryRead(std::chrono::milliseconds timeout) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        for (;;) {
            if (auto m = decoder_.next()) {
                return m;
            }
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0 || !wait(conn_, left)) {
                return std::nullopt;
            }
            char buffer[65536];
            const ssize_t n = ::recv(conn_, buffer, sizeof(buffer), 0);
            if (n <= 0) {
                throw std::runtime_error("the client closed the connection");
            }
            decoder_.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
        }
    }
    proto::Message read() {
        auto m = tryRead(kWait);
        if (!m) {
            throw std::runtime_error("the client sent nothing");
        }
        return std::move(*m);
    }
    /// True once the client closed its end (anything it still sends is skipped).
    bool clientClosed(std::chrono::milliseconds timeout) {
        try {
            while (tryRead(timeout)) {
            }
            return false;
        } catch (const std::runtime_error&) {
            return true;
        }
    }

    void send(Type type, std::uint32_t id, Fields fields = {}) {
        proto::Message m;
        m.type = type;
        m.id = id;
        m.fields = std::move(fields);
        sendRaw(proto::encode(m));
    }
    void sendRaw(const std::string& bytes) {
        ASSERT_EQ(::send(conn_, bytes.data(), bytes.size(), MSG_NOSIGNAL),
                  static_cast<ssize_t>(bytes.size()));
    }
    void reply(const proto::Message& request, Type type = Type::Ok, Fields fields = {}) {
        send(type, request.id, std::move(fields));
    }
    void closeConnection() {
        if (conn_ >= 0) {
            ::close(conn_);
            conn_ = -1;
        }
    }

private:
    static bool wait(int fd, std::chrono::milliseconds timeout) {
        pollfd p{fd, POLLIN, 0};
        return ::poll(&p, 1, static_cast<int>(timeout.count())) == 1;
    }

    std::string path_;
    int listener_ = -1;
    int conn_ = -1;
    proto::Decoder decoder_;
};

std::optional<std::uint64_t> num(const proto::Message& m, Field f) {
    return m.fields.integer(f);
}
std::optional<std::string> text(const proto::Message& m, Field f) {
    const auto v = m.fields.text(f);
    return v ? std::optional<std::string>(std::string(*v)) : std::nullopt;
}
std::optional<std::string> text(const Fields& fields, Field f) {
    const auto v = fields.text(f);
    return v ? std::optional<std::string>(std::string(*v)) : std::nullopt;
}

Fields change(app::Change::Op op, const std::string& path) {
    Fields c;
    c.add(Field::ChangeOp, static_cast<std::uint64_t>(op)).add(Field::Path, path);
    return c;
}

template <class T> T ready(std::future<T>& f) {
    if (f.wait_for(kWait) != std::future_status::ready) {
        throw std::runtime_error("the future was not satisfied in time");
    }
    return f.get();
}

/// Records what callbacks saw, for the test thread to wait on.
template <class T> class Inbox {
public:
    void put(T v) {
        {
            std::lock_guard lock(mutex_);
            items_.push_back(std::move(v));
        }
        cv_.notify_all();
    }
    T take() {
        std::unique_lock lock(mutex_);
        if (!cv_.wait_for(lock, kWait, [this] { return !items_.empty(); })) {
            throw std::runtime_error("no callback ran in time");
        }
        T v = std::move(items_.front());
        items_.erase(items_.begin());
        return v;
    }
    std::size_t size() const {
        std::lock_guard lock(mutex_);
        return items_.size();
    }

private:
    mutable std::mutex mutex_;
    std::condition_variable cv_;
    std::vector<T> items_;
};

class AppLib : public ::testing::Test {
protected:
    std::unique_ptr<app::Connection> connect(app::Connection::Options options = {}) {
        if (options.socket.empty() && !useEnv_) {
            options.socket = server.path();
        }
        options.appName = "test-app";
        auto side = std::async(std::launch::async, [this] {
            server.accept();
            auto m = server.read();
            server.reply(m, Type::Ok,
                         Fields()
                             .add(Field::Session, std::uint64_t{7})
                             .add(Field::Version, std::uint64_t{1})
                             .add(Field::User, "alice"));
            return m;
        });
        auto c = std::make_unique<app::Connection>(std::move(options));
        hello = side.get();
        return c;
    }
    static app::Connection::Options quick() {
        app::Connection::Options o;
        o.timeout = kWait;
        return o;
    }

    /// subscribe() as the server answers it with subscription `id`; the Subscribe it sent in `sent`.
    app::Registration subscribe(app::Connection& c, app::SubscribeOptions o, std::uint64_t id,
                                proto::Message* sent = nullptr) {
        auto reg = std::async(std::launch::async, [&c, &o] { return c.subscribe(std::move(o)); });
        const auto m = server.read();
        EXPECT_EQ(m.type, Type::Subscribe);
        server.reply(m, Type::Ok,
                     Fields().add(Field::Subscription, id).add(Field::CommitId, std::uint64_t{1}));
        if (sent) {
            *sent = m;
        }
        return ready(reg);
    }

    /// Reads the next message, which must be `type`, and answers it Ok.
    proto::Message expectOk(Type type, Fields fields = {}) {
        auto m = server.read();
        EXPECT_EQ(m.type, type) << proto::toString(m.type);
        server.reply(m, Type::Ok, std::move(fields));
        return m;
    }

    /// Releases `reg` as the server answers it: the message it sent must be `type` with `field` = `id`.
    void release(app::Registration& reg, Type type, Field field, std::uint64_t id) {
        auto released = std::async(std::launch::async, [&reg] { reg.release(); });
        const auto m = expectOk(type);
        EXPECT_EQ(num(m, field), id);
        ready(released);
    }

    ncstore::test::TempDir dir;
    FakeServer server{dir.path()};
    proto::Message hello;
    bool useEnv_ = false;
};

TEST_F(AppLib, HelloSaysWhoAndReadsTheSession) {
    auto c = connect(quick());
    EXPECT_EQ(hello.type, Type::Hello);
    EXPECT_EQ(text(hello, Field::AppName), "test-app");
    EXPECT_EQ(num(hello, Field::Version), 1u);
    EXPECT_EQ(c->session(), 7u);
    EXPECT_EQ(c->user(), "alice");
    EXPECT_TRUE(c->connected());
    EXPECT_EQ(c->fd(), -1); // no pollMode
}

TEST_F(AppLib, SocketFromTheEnvironment) {
    ASSERT_EQ(::setenv("NCSTORE_APP_SOCKET", server.path().c_str(), 1), 0);
    useEnv_ = true;
    auto c = connect(quick());
    ::unsetenv("NCSTORE_APP_SOCKET");
    EXPECT_EQ(c->user(), "alice");
    app::Connection::Options none;
    EXPECT_THROW(app::Connection{none}, app::Error);
}

TEST_F(AppLib, RefusedHelloThrowsTheServersError) {
    auto side = std::async(std::launch::async, [this] {
        server.accept();
        const auto m = server.read();
        server.reply(m, Type::Error,
                     Fields().add(Field::ErrorTag, "access-denied").add(Field::Message, "not you"));
    });
    auto o = quick();
    o.socket = server.path();
    try {
        app::Connection c(o);
        ADD_FAILURE() << "connected";
    } catch (const app::Error& e) {
        EXPECT_EQ(e.tag(), "access-denied");
        EXPECT_STREQ(e.what(), "not you");
    }
    side.get();
}

TEST_F(AppLib, AnEventInTheSameWriteAsTheHelloReplyIsNotLost) {
    auto side = std::async(std::launch::async, [this] {
        server.accept();
        const auto m = server.read();
        proto::Message ok;
        ok.type = Type::Ok;
        ok.id = m.id;
        ok.fields.add(Field::Session, std::uint64_t{7}).add(Field::User, "alice");
        proto::Message verify;
        verify.type = Type::Verify;
        verify.fields.add(Field::Subscription, std::uint64_t{99}).add(Field::Event, std::uint64_t{5});
        server.sendRaw(proto::encode(ok) + proto::encode(verify));
    });
    auto o = quick();
    o.socket = server.path();
    app::Connection c(o);
    side.get();
    const auto m = server.read(); // answered although no recv() brought it after the hello
    EXPECT_EQ(m.type, Type::VerifyDone);
    EXPECT_EQ(num(m, Field::Event), 5u);
}

TEST_F(AppLib, DestroyedFromInsideItsOwnCallback) {
    std::promise<void> done;
    auto c = connect(quick());
    app::SubscribeOptions o;
    o.xpath = "/m:*";
    o.onApply = [&](const app::ChangeSet&) {
        c.reset(); // the destructor must not join the thread it runs on
        done.set_value();
    };
    auto reg = subscribe(*c, std::move(o), 5);
    reg.keep();
    server.send(Type::Apply, 0, Fields().add(Field::Subscription, std::uint64_t{5}));
    auto doneFuture = done.get_future();
    ready(doneFuture);
    EXPECT_TRUE(server.clientClosed(kWait));
}

TEST_F(AppLib, EditApplyCommitAndErrors) {
    auto c = connect(quick());

    auto edited = std::async(std::launch::async, [&] {
        return c->edit("<cfg/>",
                       app::EditOptions{app::Datastore::Candidate, app::DefaultOperation::Replace, "why"});
    });
    auto m = server.read();
    EXPECT_EQ(m.type, Type::Edit);
    EXPECT_EQ(num(m, Field::Datastore), 2u);
    EXPECT_EQ(num(m, Field::DefaultOp), 1u);
    EXPECT_EQ(text(m, Field::Config), "<cfg/>");
    EXPECT_EQ(text(m, Field::Comment), "why");
    EXPECT_FALSE(m.fields.text(Field::Deferred));
    EXPECT_TRUE(m.fields.all(Field::Item).empty());
    server.reply(m, Type::Ok, Fields().add(Field::CommitId, std::uint64_t{41}));
    EXPECT_EQ(ready(edited), 41u);

    app::Batch batch;
    batch.xml("<c/>").merge("/m:a", "1").create("/m:b", "2").replace("/m:c", "").erase("/m:d").remove("/m:e");
    auto applied = std::async(std::launch::async, [&] { return c->apply(batch); });
    m = server.read();
    EXPECT_EQ(m.type, Type::Edit);
    EXPECT_EQ(num(m, Field::Datastore), 0u);
    EXPECT_EQ(num(m, Field::DefaultOp), 0u);
    EXPECT_EQ(text(m, Field::Config), "<c/>");
    EXPECT_FALSE(m.fields.text(Field::Comment));
    ASSERT_FALSE(m.fields.list.empty());
    const auto items = m.fields.all(Field::Item);
    ASSERT_EQ(items.size(), 5u);
    const char* paths[] = {"/m:a", "/m:b", "/m:c", "/m:d", "/m:e"};
    const std::optional<std::string> values[] = {"1", "2", "", std::nullopt, std::nullopt};
    const std::uint64_t ops[] = {0, 1, 2, 3, 4}; // merge create replace delete remove
    for (std::size_t i = 0; i < items.size(); ++i) {
        const auto item = Fields::decode(items[i]);
        EXPECT_EQ(item.integer(Field::ItemOp), ops[i]) << i;
        EXPECT_EQ(text(item, Field::Path), paths[i]) << i;
        EXPECT_EQ(text(item, Field::Value), values[i]) << i;
    }
    // Config comes before the items: the server applies them after it.
    std::size_t configAt = 0, firstItemAt = 0;
    for (std::size_t i = 0; i < m.fields.list.size(); ++i) {
        if (m.fields.list[i].first == Field::Config) {
            configAt = i;
        }
        if (m.fields.list[i].first == Field::Item && firstItemAt == 0) {
            firstItemAt = i;
        }
    }
    EXPECT_LT(configAt, firstItemAt);
    server.reply(m, Type::Ok, Fields().add(Field::CommitId, std::uint64_t{42}));
    EXPECT_EQ(ready(applied), 42u);

    // A refusal reaches the caller with every rpc-error field.
    auto refused = std::async(std::launch::async, [&] { return c->apply(app::Batch().create("/m:b", "2")); });
    m = server.read();
    EXPECT_FALSE(m.fields.text(Field::Config)); // no xml(): no Config
    server.reply(m, Type::Error,
                 Fields()
                     .add(Field::ErrorTag, "data-exists")
                     .add(Field::AppTag, "my-app-tag")
                     .add(Field::Path, "/m:b")
                     .add(Field::Message, "it exists")
                     .add(Field::Info, "<bad-element>b</bad-element>"));
    try {
        refused.get();
        ADD_FAILURE() << "no error";
    } catch (const app::Error& e) {
        EXPECT_EQ(e.tag(), "data-exists");
        EXPECT_EQ(e.appTag(), "my-app-tag");
        EXPECT_EQ(e.path(), "/m:b");
        EXPECT_STREQ(e.what(), "it exists");
        EXPECT_EQ(e.info(), "<bad-element>b</bad-element>");
    }

    auto committed = std::async(std::launch::async, [&] { return c->commit("go"); });
    m = server.read();
    EXPECT_EQ(m.type, Type::Commit);
    EXPECT_EQ(text(m, Field::Comment), "go");
    server.reply(m, Type::Ok, Fields().add(Field::CommitId, std::uint64_t{43}));
    EXPECT_EQ(ready(committed), 43u);

    // editAsync outside a callback: an ordinary edit, not deferred.
    auto future = c->editAsync(app::Batch().merge("/m:z", "9"));
    m = server.read();
    EXPECT_EQ(m.type, Type::Edit);
    EXPECT_FALSE(m.fields.text(Field::Deferred));
    EXPECT_EQ(future.wait_for(0s), std::future_status::timeout);
    server.reply(m, Type::Ok, Fields().add(Field::CommitId, std::uint64_t{44}));
    EXPECT_EQ(ready(future), 44u);
}

TEST_F(AppLib, GetPushNotify) {
    auto c = connect(quick());
    auto got = std::async(std::launch::async, [&] {
        return c->get(app::Datastore::Operational, "/m:state", app::WithDefaults::ReportAll);
    });
    auto m = server.read();
    EXPECT_EQ(m.type, Type::Get);
    EXPECT_EQ(num(m, Field::Datastore), 3u);
    EXPECT_EQ(text(m, Field::XPath), "/m:state");
    EXPECT_EQ(num(m, Field::WithDefaults), 2u);
    EXPECT_FALSE(m.fields.text(Field::View));
    EXPECT_FALSE(m.fields.text(Field::Event));
    server.reply(m, Type::Data, Fields().add(Field::Xml, "<state/>").add(Field::CommitId, std::uint64_t{5}));
    EXPECT_EQ(ready(got), "<state/>");

    auto pushed = std::async(std::launch::async, [&] { c->push("<p/>", app::Lifetime::Persistent); });
    m = expectOk(Type::Push);
    EXPECT_EQ(text(m, Field::Xml), "<p/>");
    EXPECT_EQ(num(m, Field::Lifetime), 1u);
    ready(pushed);

    auto deleted = std::async(std::launch::async, [&] { c->pushDelete("/m:p"); });
    m = expectOk(Type::PushDelete);
    EXPECT_EQ(text(m, Field::XPath), "/m:p");
    EXPECT_EQ(num(m, Field::Lifetime), 0u);
    ready(deleted);

    auto notified = std::async(std::launch::async, [&] { c->notify("<alarm/>", "2024-01-02T03:04:05Z"); });
    m = expectOk(Type::Notify);
    EXPECT_EQ(text(m, Field::Xml), "<alarm/>");
    EXPECT_EQ(text(m, Field::EventTime), "2024-01-02T03:04:05Z");
    ready(notified);
}

TEST_F(AppLib, SubscribeSendsItsOptionsAndReleaseUnsubscribes) {
    auto c = connect(quick());
    app::SubscribeOptions o;
    o.xpath = "/m:*";
    o.priority = 3;
    o.initial = true;
    o.mandatory = true;
    o.since = 17;
    o.deadline = 2500ms;
    o.verify = [](const app::ChangeSet&, app::Verification&) {};
    proto::Message sent;
    auto reg = subscribe(*c, std::move(o), 5, &sent);
    EXPECT_EQ(text(sent, Field::XPath), "/m:*");
    EXPECT_EQ(num(sent, Field::Priority), 3u);
    EXPECT_EQ(num(sent, Field::Flags), 1u | 2u | 4u | 8u | 16u);
    EXPECT_EQ(num(sent, Field::Since), 17u);
    EXPECT_EQ(num(sent, Field::DeadlineMs), 2500u);

    app::SubscribeOptions plain;
    plain.xpath = "/n:*";
    plain.apply = false;
    auto reg2 = subscribe(*c, std::move(plain), 6, &sent);
    EXPECT_EQ(num(sent, Field::Flags), 0u);
    EXPECT_FALSE(sent.fields.text(Field::Since));

    auto released = std::async(std::launch::async, [&] { reg.release(); });
    const auto m = expectOk(Type::Unsubscribe);
    EXPECT_EQ(num(m, Field::Subscription), 5u);
    ready(released);
    reg.release(); // once only
    reg2.keep();   // kept: nothing sent
    auto pushed = std::async(std::launch::async, [&] { c->push("<p/>"); });
    expectOk(Type::Push);
    ready(pushed);
}

TEST_F(AppLib, VerifyAcceptsRefusesAndExtends) {
    Inbox<app::ChangeSet> seen;
    std::atomic<int> calls{0};
    auto c = connect(quick());
    app::SubscribeOptions o;
    o.xpath = "/m:*";
    o.verify = [&](const app::ChangeSet& changes, app::Verification& v) {
        seen.put(changes);
        switch (calls++) {
        case 0:
            return;
        case 1:
            v.extend(7000ms);
            throw app::Error("refused", "invalid-value", "/m:a", "my-tag", "<why/>");
        default:
            throw std::runtime_error("boom");
        }
    };
    auto reg = subscribe(*c, std::move(o), 5);

    Fields moved = change(app::Change::Op::Move, "/m:l[k='y']");
    moved.add(Field::Where, std::uint64_t{0});
    Fields created = change(app::Change::Op::Create, "/m:l[k='x']");
    created.add(Field::Xml, "<l><k>x</k></l>")
        .add(Field::Where, std::uint64_t{1})
        .add(Field::Anchor, "/m:l[k='w']");
    Fields updated = change(app::Change::Op::Update, "/m:a");
    updated.add(Field::OldValue, "1").add(Field::NewValue, "2");
    server.send(Type::Verify, 0,
                Fields()
                    .add(Field::Subscription, std::uint64_t{5})
                    .add(Field::Event, std::uint64_t{11})
                    .add(Field::Change, updated)
                    .add(Field::Change, created)
                    .add(Field::Change, moved)
                    .add(Field::DeadlineMs, std::uint64_t{5000}));
    auto m = server.read();
    EXPECT_EQ(m.type, Type::VerifyDone);
    EXPECT_EQ(m.id, 11u);
    EXPECT_EQ(num(m, Field::Event), 11u);
    EXPECT_FALSE(m.fields.text(Field::ErrorTag));
    EXPECT_FALSE(m.fields.text(Field::Message));

    const auto set = seen.take();
    EXPECT_EQ(set.commitId, 0u);
    EXPECT_FALSE(set.initial);
    ASSERT_EQ(set.changes.size(), 3u);
    EXPECT_EQ(set.changes[0].op, app::Change::Op::Update);
    EXPECT_STREQ(app::toString(set.changes[0].op), "update");
    EXPECT_EQ(set.changes[0].path, "/m:a");
    EXPECT_EQ(set.changes[0].oldValue, "1");
    EXPECT_EQ(set.changes[0].newValue, "2");
    EXPECT_FALSE(set.changes[0].first);
    EXPECT_FALSE(set.changes[0].anchor);
    EXPECT_EQ(set.changes[1].op, app::Change::Op::Create);
    EXPECT_EQ(set.changes[1].xml, "<l><k>x</k></l>");
    EXPECT_FALSE(set.changes[1].oldValue);
    EXPECT_FALSE(set.changes[1].newValue);
    EXPECT_FALSE(set.changes[1].first);
    EXPECT_EQ(set.changes[1].anchor, "/m:l[k='w']");
    EXPECT_EQ(set.changes[2].op, app::Change::Op::Move);
    EXPECT_TRUE(set.changes[2].first);
    EXPECT_FALSE(set.changes[2].anchor);

    // Refused with an app::Error: every field carried, after the extension.
    server.send(Type::Verify, 0,
                Fields().add(Field::Subscription, std::uint64_t{5}).add(Field::Event, std::uint64_t{12}));
    m = server.read();
    EXPECT_EQ(m.type, Type::Extend);
    EXPECT_EQ(m.id, 12u);
    EXPECT_EQ(num(m, Field::Event), 12u);
    EXPECT_EQ(num(m, Field::DeadlineMs), 7000u);
    m = server.read();
    EXPECT_EQ(m.type, Type::VerifyDone);
    EXPECT_EQ(num(m, Field::Event), 12u);
    EXPECT_EQ(text(m, Field::ErrorTag), "invalid-value");
    EXPECT_EQ(text(m, Field::AppTag), "my-tag");
    EXPECT_EQ(text(m, Field::Path), "/m:a");
    EXPECT_EQ(text(m, Field::Message), "refused");
    EXPECT_EQ(text(m, Field::Info), "<why/>");
    EXPECT_TRUE(seen.take().changes.empty());

    // Any other exception: operation-failed with its what().
    server.send(Type::Verify, 0,
                Fields().add(Field::Subscription, std::uint64_t{5}).add(Field::Event, std::uint64_t{13}));
    m = server.read();
    EXPECT_EQ(m.type, Type::VerifyDone);
    EXPECT_EQ(num(m, Field::Event), 13u);
    EXPECT_EQ(text(m, Field::ErrorTag), "operation-failed");
    EXPECT_EQ(text(m, Field::Message), "boom");
    seen.take();

    // No verify callback (an unknown subscription, or an apply-only one): accepted.
    app::SubscribeOptions applyOnly;
    applyOnly.xpath = "/n:*";
    auto reg2 = subscribe(*c, std::move(applyOnly), 6);
    for (const std::uint64_t sub : {6u, 99u}) {
        server.send(Type::Verify, 0,
                    Fields().add(Field::Subscription, sub).add(Field::Event, std::uint64_t{14 + sub}));
        m = server.read();
        EXPECT_EQ(m.type, Type::VerifyDone);
        EXPECT_EQ(num(m, Field::Event), 14 + sub);
        EXPECT_FALSE(m.fields.text(Field::ErrorTag));
    }
    EXPECT_EQ(calls.load(), 3);
    release(reg, Type::Unsubscribe, Field::Subscription, 5);
    release(reg2, Type::Unsubscribe, Field::Subscription, 6);
}

TEST_F(AppLib, AbortGetsTheChangeSetOfItsVerify) {
    Inbox<app::ChangeSet> aborted;
    auto c = connect(quick());
    app::SubscribeOptions o;
    o.xpath = "/m:*";
    o.verify = [](const app::ChangeSet&, app::Verification&) {};
    o.onAbort = [&](const app::ChangeSet& changes) { aborted.put(changes); };
    auto reg = subscribe(*c, std::move(o), 5);
    server.send(Type::Verify, 0,
                Fields()
                    .add(Field::Subscription, std::uint64_t{5})
                    .add(Field::Event, std::uint64_t{21})
                    .add(Field::Change, change(app::Change::Op::Delete, "/m:gone")));
    EXPECT_EQ(server.read().type, Type::VerifyDone);
    server.send(Type::Abort, 0,
                Fields().add(Field::Subscription, std::uint64_t{5}).add(Field::Event, std::uint64_t{21}));
    const auto set = aborted.take();
    ASSERT_EQ(set.changes.size(), 1u);
    EXPECT_EQ(set.changes[0].op, app::Change::Op::Delete);
    EXPECT_EQ(set.changes[0].path, "/m:gone");
    release(reg, Type::Unsubscribe, Field::Subscription, 5);
}

TEST_F(AppLib, ApplyDeliversDecodedChangesOnTheCallbackThread) {
    Inbox<std::pair<app::ChangeSet, std::thread::id>> applied;
    auto c = connect(quick());
    app::SubscribeOptions o;
    o.xpath = "/m:*";
    o.onApply = [&](const app::ChangeSet& changes) { applied.put({changes, std::this_thread::get_id()}); };
    auto reg = subscribe(*c, std::move(o), 5);

    Fields created = change(app::Change::Op::Create, "/m:a");
    created.add(Field::NewValue, "1");
    server.send(Type::Resync, 0,
                Fields()
                    .add(Field::Subscription, std::uint64_t{5})
                    .add(Field::CommitId, std::uint64_t{70})
                    .add(Field::Message, "lost"));
    server.send(Type::Apply, 0,
                Fields()
                    .add(Field::Subscription, std::uint64_t{5})
                    .add(Field::CommitId, std::uint64_t{77})
                    .add(Field::Change, created)
                    .add(Field::Change, change(app::Change::Op::Replace, "/m:any"))
                    .add(Field::Flags, std::uint64_t{4}));
    server.send(Type::Apply, 0,
                Fields().add(Field::Subscription, std::uint64_t{5}).add(Field::CommitId, std::uint64_t{78}));
    auto [set, thread] = applied.take();
    EXPECT_NE(thread, std::this_thread::get_id());
    EXPECT_EQ(set.commitId, 77u);
    EXPECT_TRUE(set.initial);
    ASSERT_EQ(set.changes.size(), 2u);
    EXPECT_EQ(set.changes[0].op, app::Change::Op::Create);
    EXPECT_EQ(set.changes[0].newValue, "1");
    EXPECT_EQ(set.changes[1].op, app::Change::Op::Replace);
    auto [next, thread2] = applied.take(); // in order, on the same thread
    EXPECT_EQ(next.commitId, 78u);
    EXPECT_FALSE(next.initial);
    EXPECT_EQ(thread2, thread);
    release(reg, Type::Unsubscribe, Field::Subscription, 5);
}

TEST_F(AppLib, AnInitialApplyRightBehindTheSubscribeReplyFindsItsSubscription) {
    Inbox<app::ChangeSet> applied;
    auto c = connect(quick());
    app::SubscribeOptions o;
    o.xpath = "/m:*";
    o.initial = true;
    o.onApply = [&](const app::ChangeSet& changes) { applied.put(changes); };
    auto reg = std::async(std::launch::async, [&] { return c->subscribe(std::move(o)); });
    const auto m = server.read();
    ASSERT_EQ(m.type, Type::Subscribe);
    proto::Message ok;
    ok.type = Type::Ok;
    ok.id = m.id;
    ok.fields.add(Field::Subscription, std::uint64_t{5}).add(Field::CommitId, std::uint64_t{9});
    proto::Message initial;
    initial.type = Type::Apply;
    initial.fields.add(Field::Subscription, std::uint64_t{5})
        .add(Field::CommitId, std::uint64_t{9})
        .add(Field::Change, change(app::Change::Op::Create, "/m:a"))
        .add(Field::Flags, std::uint64_t{4});
    server.sendRaw(proto::encode(ok) + proto::encode(initial)); // one write: no time in between
    const auto set = applied.take();
    EXPECT_TRUE(set.initial);
    EXPECT_EQ(set.commitId, 9u);
    ASSERT_EQ(set.changes.size(), 1u);
    auto registration = ready(reg);
    release(registration, Type::Unsubscribe, Field::Subscription, 5);
}

TEST_F(AppLib, PullProviderAnswersAndFails) {
    Inbox<std::string> filters;
    auto c = connect(quick());
    auto registered = std::async(std::launch::async, [&] {
        return c->provide(
            "/m:state",
            [&](const std::string& filter) -> std::string {
                filters.put(filter);
                if (filter == "/m:state/broken") {
                    throw app::Error("no data", "resource-denied", "/m:state", "", "<i/>");
                }
                return "<state><x>1</x></state>";
            },
            3000ms, 1000ms);
    });
    auto m = expectOk(Type::Provide, Fields().add(Field::Provider, std::uint64_t{3}));
    EXPECT_EQ(text(m, Field::XPath), "/m:state");
    EXPECT_EQ(num(m, Field::CacheMs), 1000u);
    EXPECT_EQ(num(m, Field::DeadlineMs), 3000u);
    auto reg = ready(registered);

    server.send(Type::Pull, 0,
                Fields()
                    .add(Field::Provider, std::uint64_t{3})
                    .add(Field::Event, std::uint64_t{21})
                    .add(Field::XPath, "/m:state/x")
                    .add(Field::DeadlineMs, std::uint64_t{3000}));
    m = server.read();
    EXPECT_EQ(m.type, Type::PullDone);
    EXPECT_EQ(m.id, 21u);
    EXPECT_EQ(num(m, Field::Event), 21u);
    EXPECT_EQ(text(m, Field::Xml), "<state><x>1</x></state>");
    EXPECT_FALSE(m.fields.text(Field::ErrorTag));
    EXPECT_EQ(filters.take(), "/m:state/x");

    server.send(Type::Pull, 0,
                Fields()
                    .add(Field::Provider, std::uint64_t{3})
                    .add(Field::Event, std::uint64_t{22})
                    .add(Field::XPath, "/m:state/broken"));
    m = server.read();
    EXPECT_EQ(m.type, Type::PullDone);
    EXPECT_EQ(num(m, Field::Event), 22u);
    EXPECT_FALSE(m.fields.text(Field::Xml));
    EXPECT_EQ(text(m, Field::ErrorTag), "resource-denied");
    EXPECT_EQ(text(m, Field::Message), "no data");
    EXPECT_EQ(text(m, Field::Path), "/m:state");
    EXPECT_EQ(text(m, Field::Info), "<i/>");

    auto released = std::async(std::launch::async, [&] { reg.release(); });
    m = expectOk(Type::Unregister);
    EXPECT_EQ(num(m, Field::Provider), 3u);
    EXPECT_FALSE(m.fields.text(Field::Handler));
    ready(released);

    // A pull of a provider released meanwhile fails rather than staying unanswered.
    server.send(Type::Pull, 0,
                Fields().add(Field::Provider, std::uint64_t{3}).add(Field::Event, std::uint64_t{23}));
    m = server.read();
    EXPECT_EQ(m.type, Type::PullDone);
    EXPECT_EQ(text(m, Field::ErrorTag), "operation-failed");
}

TEST_F(AppLib, RpcHandlerSync) {
    auto c = connect(quick());
    auto registered = std::async(std::launch::async, [&] {
        return c->handleRpc("/m:reset", [](const std::string& input) -> std::string {
            if (input == "<reset><bad/></reset>") {
                throw app::Error("bad input", "invalid-value", "/m:reset/bad");
            }
            return "<done/>";
        });
    });
    auto m = expectOk(Type::RegisterRpc, Fields().add(Field::Handler, std::uint64_t{4}));
    EXPECT_EQ(text(m, Field::Path), "/m:reset");
    EXPECT_EQ(num(m, Field::DeadlineMs), 5000u);
    auto reg = ready(registered);

    server.send(Type::Call, 0,
                Fields()
                    .add(Field::Handler, std::uint64_t{4})
                    .add(Field::Event, std::uint64_t{31})
                    .add(Field::Xml, "<reset/>")
                    .add(Field::DeadlineMs, std::uint64_t{5000}));
    m = server.read();
    EXPECT_EQ(m.type, Type::RpcDone);
    EXPECT_EQ(m.id, 31u);
    EXPECT_EQ(num(m, Field::Event), 31u);
    EXPECT_EQ(text(m, Field::Xml), "<done/>");
    EXPECT_FALSE(m.fields.text(Field::ErrorTag));

    server.send(Type::Call, 0,
                Fields()
                    .add(Field::Handler, std::uint64_t{4})
                    .add(Field::Event, std::uint64_t{32})
                    .add(Field::Xml, "<reset><bad/></reset>"));
    m = server.read();
    EXPECT_EQ(m.type, Type::RpcDone);
    EXPECT_EQ(num(m, Field::Event), 32u);
    EXPECT_EQ(text(m, Field::ErrorTag), "invalid-value");
    EXPECT_EQ(text(m, Field::Message), "bad input");
    EXPECT_EQ(text(m, Field::Path), "/m:reset/bad");

    auto released = std::async(std::launch::async, [&] { reg.release(); });
    m = expectOk(Type::Unregister);
    EXPECT_EQ(num(m, Field::Handler), 4u);
    ready(released);
}

TEST_F(AppLib, RpcHandlerAsyncAnsweredFromAnotherThreadOnce) {
    std::promise<std::shared_ptr<app::Responder>> kept;
    auto c = connect(quick());
    auto registered = std::async(std::launch::async, [&] {
        return c->handleRpcAsync(
            "/m:slow",
            [&](const std::string& input, std::shared_ptr<app::Responder> responder) {
                if (input == "<keep/>") {
                    kept.set_value(std::move(responder));
                } else if (input == "<throw/>") {
                    throw std::runtime_error("handler broke");
                } // else dropped without an answer
            },
            9000ms);
    });
    auto m = expectOk(Type::RegisterRpc, Fields().add(Field::Handler, std::uint64_t{8}));
    EXPECT_EQ(num(m, Field::DeadlineMs), 9000u);
    auto reg = ready(registered);

    server.send(Type::Call, 0,
                Fields()
                    .add(Field::Handler, std::uint64_t{8})
                    .add(Field::Event, std::uint64_t{41})
                    .add(Field::Xml, "<keep/>"));
    auto future = kept.get_future();
    auto responder = ready(future);
    std::thread other([responder] {
        responder->extend(2000ms);
        responder->reply("<out/>");
        responder->reply("<again/>");                 // ignored
        responder->fail(app::Error("too late", "x")); // ignored
        responder->extend(1000ms);                    // answered: nothing to extend
    });
    other.join();
    m = server.read();
    EXPECT_EQ(m.type, Type::Extend);
    EXPECT_EQ(num(m, Field::Event), 41u);
    EXPECT_EQ(num(m, Field::DeadlineMs), 2000u);
    m = server.read();
    EXPECT_EQ(m.type, Type::RpcDone);
    EXPECT_EQ(num(m, Field::Event), 41u);
    EXPECT_EQ(text(m, Field::Xml), "<out/>");
    responder.reset(); // answered: its destructor says nothing

    server.send(Type::Call, 0,
                Fields()
                    .add(Field::Handler, std::uint64_t{8})
                    .add(Field::Event, std::uint64_t{42})
                    .add(Field::Xml, "<drop/>"));
    m = server.read();
    EXPECT_EQ(m.type, Type::RpcDone);
    EXPECT_EQ(num(m, Field::Event), 42u);
    EXPECT_EQ(text(m, Field::ErrorTag), "operation-failed");
    EXPECT_EQ(text(m, Field::Message), "the handler did not answer");

    server.send(Type::Call, 0,
                Fields()
                    .add(Field::Handler, std::uint64_t{8})
                    .add(Field::Event, std::uint64_t{43})
                    .add(Field::Xml, "<throw/>"));
    m = server.read();
    EXPECT_EQ(m.type, Type::RpcDone);
    EXPECT_EQ(num(m, Field::Event), 43u);
    EXPECT_EQ(text(m, Field::Message), "handler broke");

    // Nothing else was sent for those calls: the next message is this push.
    auto pushed = std::async(std::launch::async, [&] { c->push("<p/>"); });
    expectOk(Type::Push);
    ready(pushed);
    release(reg, Type::Unregister, Field::Handler, 8);
}

TEST_F(AppLib, ReadsInsideAVerifyAreAnsweredWhileTheCallbackWaits) {
    Inbox<std::string> reads;
    auto c = connect(quick());
    app::SubscribeOptions o;
    o.xpath = "/m:*";
    o.verify = [&](const app::ChangeSet&, app::Verification& v) {
        reads.put(v.get("/m:a"));
        reads.put(v.getBefore("/m:b"));
        reads.put(c->get(app::Datastore::Running, "/m:c"));
    };
    auto reg = subscribe(*c, std::move(o), 5);
    server.send(Type::Verify, 0,
                Fields().add(Field::Subscription, std::uint64_t{5}).add(Field::Event, std::uint64_t{51}));

    auto m = server.read();
    EXPECT_EQ(m.type, Type::Get);
    EXPECT_EQ(num(m, Field::View), 1u);
    EXPECT_EQ(num(m, Field::Event), 51u);
    EXPECT_EQ(num(m, Field::Datastore), 0u);
    EXPECT_EQ(text(m, Field::XPath), "/m:a");
    server.reply(m, Type::Data, Fields().add(Field::Xml, "<after/>"));
    EXPECT_EQ(reads.take(), "<after/>");

    m = server.read();
    EXPECT_EQ(m.type, Type::Get);
    EXPECT_FALSE(m.fields.text(Field::View));
    EXPECT_FALSE(m.fields.text(Field::Event));
    EXPECT_EQ(text(m, Field::XPath), "/m:b");
    server.reply(m, Type::Data, Fields().add(Field::Xml, "<before/>"));
    EXPECT_EQ(reads.take(), "<before/>");

    m = server.read();
    EXPECT_EQ(m.type, Type::Get);
    EXPECT_EQ(text(m, Field::XPath), "/m:c");
    server.reply(m, Type::Data, Fields().add(Field::Xml, "<c/>"));
    EXPECT_EQ(reads.take(), "<c/>");

    m = server.read();
    EXPECT_EQ(m.type, Type::VerifyDone);
    EXPECT_FALSE(m.fields.text(Field::ErrorTag));
    release(reg, Type::Unsubscribe, Field::Subscription, 5);
}

TEST_F(AppLib, EditAsyncInsideACallbackIsDeferredAndCompletesWithoutTheCallbackThread) {
    std::promise<std::future<std::uint64_t>> started;
    std::promise<void> returned;
    std::promise<void> blocking;
    std::promise<void> unblock;
    auto unblocked = unblock.get_future().share();
    std::atomic<int> calls{0};
    auto c = connect(quick());
    app::SubscribeOptions o;
    o.xpath = "/m:*";
    o.onApply = [&](const app::ChangeSet&) {
        if (calls++ == 0) {
            started.set_value(c->editAsync(
                app::Batch().merge("/m:x", "1"),
                app::EditOptions{app::Datastore::Running, app::DefaultOperation::Merge, "from apply"}));
            returned.set_value();
        } else {
            // Holds the callback thread: the edit's future must complete all the same.
            blocking.set_value();
            unblocked.wait_for(kWait);
        }
    };
    auto reg = subscribe(*c, std::move(o), 5);
    server.send(Type::Apply, 0,
                Fields().add(Field::Subscription, std::uint64_t{5}).add(Field::CommitId, std::uint64_t{1}));
    auto m = server.read();
    EXPECT_EQ(m.type, Type::Edit);
    EXPECT_EQ(num(m, Field::Deferred), 1u);
    EXPECT_EQ(text(m, Field::Comment), "from apply");
    EXPECT_EQ(m.fields.all(Field::Item).size(), 1u);
    auto startedFuture = started.get_future();
    auto edit = ready(startedFuture);
    auto returnedFuture = returned.get_future();
    ready(returnedFuture); // the callback did not wait for the reply

    server.send(Type::Apply, 0,
                Fields().add(Field::Subscription, std::uint64_t{5}).add(Field::CommitId, std::uint64_t{2}));
    auto blockingFuture = blocking.get_future();
    ready(blockingFuture);
    EXPECT_EQ(edit.wait_for(0s), std::future_status::timeout);
    server.reply(m, Type::Ok, Fields().add(Field::CommitId, std::uint64_t{88}));
    EXPECT_EQ(ready(edit), 88u);
    unblock.set_value();
    release(reg, Type::Unsubscribe, Field::Subscription, 5);
}

TEST_F(AppLib, BlockingRequestsThatWouldWaitForThemselvesThrowInsideACallback) {
    Inbox<std::string> outcomes;
    auto c = connect(quick());
    app::SubscribeOptions o;
    o.xpath = "/m:*";
    o.onApply = [&](const app::ChangeSet&) {
        const auto attempt = [&](const char* name, auto&& f) {
            try {
                f();
                outcomes.put(std::string(name) + ": returned");
            } catch (const std::logic_error&) {
                outcomes.put(std::string(name) + ": logic_error");
            } catch (const std::exception& e) {
                outcomes.put(std::string(name) + ": " + e.what());
            }
        };
        attempt("edit", [&] { c->edit("<x/>"); });
        attempt("apply", [&] { c->apply(app::Batch().merge("/m:x", "1")); });
        attempt("commit", [&] { c->commit(); });
    };
    auto reg = subscribe(*c, std::move(o), 5);
    server.send(Type::Apply, 0, Fields().add(Field::Subscription, std::uint64_t{5}));
    EXPECT_EQ(outcomes.take(), "edit: logic_error");
    EXPECT_EQ(outcomes.take(), "apply: logic_error");
    EXPECT_EQ(outcomes.take(), "commit: logic_error");
    // None of them was sent: the next message is this push.
    auto pushed = std::async(std::launch::async, [&] { c->push("<p/>"); });
    expectOk(Type::Push);
    ready(pushed);
    release(reg, Type::Unsubscribe, Field::Subscription, 5);
}

TEST_F(AppLib, PollModeRunsCallbacksInDispatch) {
    std::vector<std::pair<std::uint64_t, std::thread::id>> applied;
    std::vector<std::string> outcomes;
    std::optional<std::future<std::uint64_t>> edit;
    auto o = quick();
    o.pollMode = true;
    auto c = connect(o);
    ASSERT_GE(c->fd(), 0);
    const auto readable = [&](std::chrono::milliseconds timeout) {
        pollfd p{c->fd(), POLLIN, 0};
        return ::poll(&p, 1, static_cast<int>(timeout.count())) == 1;
    };
    EXPECT_FALSE(readable(0ms));

    app::SubscribeOptions s;
    s.xpath = "/m:*";
    s.onApply = [&](const app::ChangeSet& changes) {
        applied.emplace_back(changes.commitId, std::this_thread::get_id());
        try {
            c->edit("<x/>");
            outcomes.push_back("edit returned");
        } catch (const std::logic_error&) {
            outcomes.push_back("logic_error");
        }
        if (!edit) {
            edit = c->editAsync(app::Batch().remove("/m:y"));
        }
    };
    auto reg = subscribe(*c, std::move(s), 5);
    EXPECT_FALSE(readable(0ms));
    c->dispatch(); // nothing waits: returns at once
    EXPECT_TRUE(applied.empty());

    server.send(Type::Apply, 0,
                Fields().add(Field::Subscription, std::uint64_t{5}).add(Field::CommitId, std::uint64_t{1}));
    server.send(Type::Apply, 0,
                Fields().add(Field::Subscription, std::uint64_t{5}).add(Field::CommitId, std::uint64_t{2}));
    ASSERT_TRUE(readable(kWait));
    EXPECT_TRUE(applied.empty()); // no callback thread: nothing runs before dispatch()
    // The two frames may reach the client apart: dispatch while fd() says events wait.
    while (applied.size() < 2 && readable(kWait)) {
        c->dispatch();
    }
    ASSERT_EQ(applied.size(), 2u);
    EXPECT_EQ(applied[0].first, 1u);
    EXPECT_EQ(applied[1].first, 2u);
    EXPECT_EQ(applied[0].second, std::this_thread::get_id());
    EXPECT_EQ(outcomes, (std::vector<std::string>{"logic_error", "logic_error"}));
    EXPECT_FALSE(readable(0ms));

    const auto m = server.read();
    EXPECT_EQ(m.type, Type::Edit);
    EXPECT_EQ(num(m, Field::Deferred), 1u);
    server.reply(m, Type::Ok, Fields().add(Field::CommitId, std::uint64_t{3}));
    ASSERT_TRUE(edit);
    EXPECT_EQ(ready(*edit), 3u);

    // Outside dispatch() the same thread may block again.
    auto committed = std::async(std::launch::async, [&] { return c->commit(); });
    expectOk(Type::Commit, Fields().add(Field::CommitId, std::uint64_t{4}));
    EXPECT_EQ(ready(committed), 4u);
    release(reg, Type::Unsubscribe, Field::Subscription, 5);
}

TEST_F(AppLib, ServerClosingFailsWhatWaits) {
    auto c = connect(quick());
    auto got = std::async(std::launch::async, [&] { return c->get(app::Datastore::Running); });
    EXPECT_EQ(server.read().type, Type::Get);
    server.closeConnection();
    try {
        ready(got);
        ADD_FAILURE() << "no error";
    } catch (const app::Error& e) {
        EXPECT_STREQ(e.what(), "connection to ncstored closed");
        EXPECT_EQ(e.tag(), "operation-failed");
    }
    EXPECT_FALSE(c->connected());
    EXPECT_THROW(c->push("<p/>"), app::Error); // at once: nothing to wait for
}

TEST_F(AppLib, AProtocolErrorOfTheServerClosesTheConnection) {
    auto c = connect(quick());
    auto got = std::async(std::launch::async, [&] { return c->get(app::Datastore::Running); });
    EXPECT_EQ(server.read().type, Type::Get);
    std::string header;
    for (int i = 0; i < 4; ++i) {
        header.push_back(static_cast<char>(((proto::kDefaultMaxMessage + 1) >> (8 * i)) & 0xff));
    }
    server.sendRaw(header); // a frame past the limit
    EXPECT_THROW(ready(got), app::Error);
    EXPECT_FALSE(c->connected());
    EXPECT_TRUE(server.clientClosed(kWait));
}

TEST_F(AppLib, AnUnknownMessageTypeClosesTheConnection) {
    auto c = connect(quick());
    server.send(static_cast<Type>(200), 0);
    EXPECT_TRUE(server.clientClosed(kWait));
    EXPECT_FALSE(c->connected());
}

TEST_F(AppLib, ARequestTimesOutAndALateReplyIsIgnored) {
    auto o = quick();
    o.timeout = 200ms;
    auto c = connect(o);
    try {
        c->get(app::Datastore::Running);
        ADD_FAILURE() << "no timeout";
    } catch (const app::Error& e) {
        EXPECT_NE(std::string(e.what()).find("no reply"), std::string::npos) << e.what();
    }
    const auto late = server.read();
    auto got = std::async(std::launch::async, [&] { return c->get(app::Datastore::Running, "/m:b"); });
    const auto m = server.read();
    server.reply(late, Type::Data, Fields().add(Field::Xml, "<late/>"));
    server.reply(m, Type::Data, Fields().add(Field::Xml, "<b/>"));
    EXPECT_EQ(ready(got), "<b/>");
    EXPECT_TRUE(c->connected());
}

TEST_F(AppLib, AMessageTooBigIsRefusedBeforeItIsSent) {
    auto c = connect(quick());
    try {
        c->push(std::string(proto::kDefaultMaxMessage, 'x'));
        ADD_FAILURE() << "sent";
    } catch (const app::Error& e) {
        EXPECT_EQ(e.tag(), "too-big");
    }
    auto pushed = std::async(std::launch::async, [&] { c->push("<small/>"); });
    const auto m = expectOk(Type::Push);
    EXPECT_EQ(text(m, Field::Xml), "<small/>");
    ready(pushed);
}

TEST_F(AppLib, DestructorReturnsPromptlyWithARequestPendingAndTheServerSilent) {
    auto o = quick();
    o.timeout = 60s; // not what ends the request
    auto c = connect(o);
    auto got =
        std::async(std::launch::async, [conn = c.get()] { return conn->get(app::Datastore::Running); });
    EXPECT_EQ(server.read().type, Type::Get);
    const auto start = std::chrono::steady_clock::now();
    c.reset();
    EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
    EXPECT_THROW(ready(got), app::Error);
    EXPECT_TRUE(server.clientClosed(kWait));
}

TEST_F(AppLib, DestructorWaitsForTheRunningCallback) {
    std::promise<void> entered;
    std::promise<void> leave;
    auto leaveFuture = leave.get_future();
    std::atomic<bool> left{false};
    auto c = connect(quick());
    app::SubscribeOptions o;
    o.xpath = "/m:*";
    o.verify = [&](const app::ChangeSet&, app::Verification&) {
        entered.set_value();
        leaveFuture.wait_for(kWait);
        left = true;
    };
    auto reg = subscribe(*c, std::move(o), 5); // released after the connection: nothing to do
    server.send(Type::Verify, 0,
                Fields().add(Field::Subscription, std::uint64_t{5}).add(Field::Event, std::uint64_t{61}));
    auto enteredFuture = entered.get_future();
    ready(enteredFuture);
    auto destroyed = std::async(std::launch::async, [&] { c.reset(); });
    EXPECT_EQ(destroyed.wait_for(100ms), std::future_status::timeout); // still in the callback
    EXPECT_FALSE(left);
    leave.set_value();
    EXPECT_EQ(destroyed.wait_for(2s), std::future_status::ready);
    EXPECT_TRUE(left);
}

} // namespace
