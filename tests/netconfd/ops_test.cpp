// The operation families of ops/ tested alone (issue 36): each family registered in a dispatcher
// of its own over Services built here, with no Server, no transport and no session loop. What a
// client would see is checked on the replies: their kind, error-tag, error-info and data.
#include "confirm.hpp"
#include "dispatcher.hpp"
#include "history.hpp"
#include "ops.hpp"
#include "readpath.hpp"
#include "rpcparse.hpp"
#include "server_context.hpp"
#include "service.hpp"
#include "sessiontable.hpp"
#include "stats.hpp"
#include "temp_store.hpp"

#include <gtest/gtest.h>

namespace ncstore::netconfd {
namespace {

/// A session's connection that carries nothing: the handlers never touch it.
class NoConnection final : public transport::Connection {
public:
    explicit NoConnection(std::string user) : user_(std::move(user)) {}
    const std::string& user() const override { return user_; }
    const std::string& host() const override { return host_; }
    std::uint16_t port() const override { return 0; }
    const char* monitoringTransport() const override { return "ietf-netconf-monitoring:netconf-ssh"; }
    ReadResult read(std::string&, std::chrono::milliseconds) override { return ReadResult::Closed; }
    bool write(std::string_view) override { return false; }
    void wake() override {}
    void shutdown() override {}
    void close() override {}
    bool peerGone() const override { return false; }

private:
    std::string user_;
    std::string host_ = "test";
};

/// The services a family is given, as Server builds them, around a store in a temporary dir.
class OpsTest : public ::testing::Test {
protected:
    OpsTest()
        : ctx_(test::serverContext()), store_(ncstore::test::openStore(ctx_, dir_)), nacm_(ctx_, "admin"),
          notifications_(*store_, ctx_, {}),
          confirm_(
              *store_, ctx_, [](const lyd_node*) {}, [](const confirm::Notice&) {}),
          history_(*store_, ctx_, {}), reads_(ctx_, *store_),
          dispatcher_(nacm_, stats_), services_{ctx_,     *store_, nacm_,     notifications_, confirm_,
                                                history_, reads_,  sessions_, stats_,         1 << 20} {}

    std::shared_ptr<Session> session() {
        return sessions_.add([&](std::uint32_t id) {
            return std::make_shared<Session>(std::make_unique<NoConnection>("admin"), id, nacm_);
        });
    }

    Reply rpc(Session& s, const std::string& op) {
        ParsedRpc parsed = parseRpc(
            ctx_, "<rpc message-id=\"1\" xmlns=\"urn:ietf:params:xml:ns:netconf:base:1.0\">" + op + "</rpc>");
        EXPECT_FALSE(parsed.error) << op;
        return dispatcher_.dispatch(parsed, s);
    }

    static const RpcError& error(const Reply& r) {
        static const RpcError none(ErrorTag::OperationFailed, ErrorType::Application, "no rpc-error");
        EXPECT_EQ(r.kind, Reply::Kind::Error);
        return r.errors.empty() ? none : r.errors.front();
    }

    ncstore::test::TempDir dir_;
    const ly_ctx* ctx_;
    std::unique_ptr<ds::Store> store_;
    AccessControl nacm_;
    notify::Service notifications_;
    confirm::ConfirmedCommit confirm_;
    history::History history_;
    ReadPath reads_;
    SessionTable sessions_;
    Stats stats_;
    Dispatcher dispatcher_;
    Services services_;
};

constexpr const char* kLockRunning = "<lock><target><running/></target></lock>";
constexpr const char* kUnlockRunning = "<unlock><target><running/></target></unlock>";
constexpr const char* kGetConfig = "<get-config><source><running/></source></get-config>";
constexpr const char* kCreateEth0 =
    "<edit-config><target><running/></target><config><interfaces "
    "xmlns=\"urn:ietf:params:xml:ns:yang:ietf-interfaces\"><interface><name>eth0</name><type "
    "xmlns:ianaift=\"urn:ietf:params:xml:ns:yang:iana-if-type\">ianaift:ethernetCsmacd</type></interface>"
    "</interfaces></config></edit-config>";

TEST_F(OpsTest, TheLockFamilyAloneGrantsDeniesAndReleasesWithTheHolderInTheError) {
    addLockOperations(dispatcher_, services_);
    auto a = session();
    auto b = session();

    EXPECT_EQ(rpc(*a, kLockRunning).kind, Reply::Kind::Ok);
    const Reply denied = rpc(*b, kLockRunning);
    EXPECT_EQ(error(denied).tag, ErrorTag::LockDenied);
    EXPECT_EQ(error(denied).sessionId, a->id);
    const Reply notHolder = rpc(*b, kUnlockRunning);
    EXPECT_EQ(error(notHolder).tag, ErrorTag::OperationFailed);
    EXPECT_NE(std::string(error(notHolder).what()).find("held by session " + std::to_string(a->id)),
              std::string::npos)
        << error(notHolder).what();

    EXPECT_EQ(rpc(*a, kUnlockRunning).kind, Reply::Kind::Ok);
    EXPECT_EQ(error(rpc(*a, kUnlockRunning)).tag, ErrorTag::OperationFailed); // not locked any more
    EXPECT_EQ(rpc(*b, kLockRunning).kind, Reply::Kind::Ok);

    // Only the family registered here answers: the others are not part of this dispatcher.
    EXPECT_EQ(error(rpc(*a, kGetConfig)).tag, ErrorTag::OperationNotSupported);
}

TEST_F(OpsTest, TheConfigFamilyWritesAndReadsTheStoreAndHonoursAnotherSessionsLock) {
    addConfigOperations(dispatcher_, services_);
    addLockOperations(dispatcher_, services_);
    auto a = session();
    auto b = session();

    EXPECT_EQ(rpc(*a, kCreateEth0).kind, Reply::Kind::Ok);
    const Reply read = rpc(*b, kGetConfig);
    ASSERT_EQ(read.kind, Reply::Kind::Data);
    EXPECT_NE(read.data.find("<name>eth0</name>"), std::string::npos) << read.data;

    EXPECT_EQ(rpc(*b, kLockRunning).kind, Reply::Kind::Ok);
    const Reply refused = rpc(*a, kCreateEth0);
    EXPECT_EQ(error(refused).tag, ErrorTag::InUse);
    EXPECT_NE(std::string(error(refused).what()).find("locked by session " + std::to_string(b->id)),
              std::string::npos)
        << error(refused).what();

    // What the family wrote is the store's running, not a copy of its own.
    std::string running;
    store_->read(ds::Datastore::Running, [&](const lyd_node* t) { running = t ? print(t, LYD_XML, 0) : ""; });
    EXPECT_NE(running.find("<name>eth0</name>"), std::string::npos) << running;
}

} // namespace
} // namespace ncstore::netconfd
