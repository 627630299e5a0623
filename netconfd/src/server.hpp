// ncstored's NETCONF server: sessions over SSH (transport/), the capability exchange, and RPC
// dispatch to the datastore.
//
// Promises:
//  - Every connection has its own thread, from its SSH handshake to its end (transport/ssh.hpp):
//    handshakes run in parallel, idle sessions sleep in poll() and cost no CPU, and a slow RPC
//    or a client that does not read delays nobody else.
//  - Whatever a client sends (broken framing, broken XML, a hello that is not one, messages past
//    --max-message-size) ends at most its own session, with an rpc-error where RFC 6241 asks
//    for one; it never ends the server.
//  - stop(): no new sessions; RPCs in flight finish and are answered; sessions are closed;
//    then the datastore drains its pending commits (its destructor).
#pragma once

#include "access.hpp"
#include "confirm.hpp"
#include "dispatch.hpp"
#include "history.hpp"
#include "options.hpp"
#include "patch.hpp"
#include "reply.hpp"
#include "rpcparse.hpp"
#include "service.hpp"
#include "session.hpp"
#include "ssh.hpp"
#include "stats.hpp"
#include "users.hpp"

#include "ncstore/datastore.hpp"
#include "ncstore/yang.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace ncstore::cluster {
class Member;
}

namespace ncstore::netconfd {

class Server {
public:
    /// Builds the context, opens the store, prepares users and host keys. Throws on failure.
    /// `member`: this server's place in its dqlite cluster (--backend dqlite), shown in the state
    /// data (ncstore-cluster); it must outlive the server.
    explicit Server(const ServerConfig& config, cluster::Member* member = nullptr);
    ~Server();
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    /// Binds and starts accepting; prints the login (first start) and the listening line.
    void start();
    /// Asks the server to stop (thread-safe, returns at once).
    void requestStop();
    /// Blocks until requestStop(), then shuts down in order.
    void run();
    /// Its dqlite node said it does not lead (thread-safe): reads stop relying on the read
    /// lease (ds::Store::revokeReadLease) while the server may still be serving.
    void leadershipInDoubt();

    std::uint16_t port() const { return port_; }
    const ly_ctx* context() const { return ctx_.get(); }

    /// The capabilities of the server's <hello>.
    const std::vector<std::string>& capabilities() const { return capabilities_; }

    /// Runs one parsed message and returns its reply (exposed for tests).
    Reply dispatch(ParsedRpc& request, Session& s);

private:
    /// One NETCONF session, on its connection's thread, from <hello> to its end.
    void serve(std::unique_ptr<transport::SshConnection> conn);
    TermReason runSession(Session& s);
    /// Parses and runs one message; false when the session must end (close-session, a reply
    /// that could not be sent).
    bool handleMessage(Session& s, const std::string& message);
    void housekeepingLoop();
    void endSession(Session& s, TermReason reason);
    std::shared_ptr<Session> findSession(std::uint32_t id) const;

    /// Fills dispatch_ with the operations below.
    void registerOperations();

    // RPC handlers, one file per family (ops_*.cpp): each returns the reply or throws RpcError /
    // ds::Error.
    Reply opGet(Request& r);
    Reply opGetConfig(Request& r);
    Reply read(Request& r, bool config);
    /// What a read of `source` shows `r`'s user (with the server's state data: <get> and the
    /// operational datastore) through `filterNode` (filter.hpp; nullptr: all), printed with the
    /// with-defaults flag `wd`.
    std::string readXml(const Request& r, ds::Datastore source, bool withState, const lyd_node* filterNode,
                        std::uint32_t wd);
    Reply opGetData(Request& r);
    Reply opEditData(Request& r);
    /// edit-config and edit-data: the RPC's <config> (an anyxml or anydata with the edit) applied
    /// to `target` with `options`; missing-element without one (operation-not-supported for :url).
    Reply applyEdit(Request& r, ds::Datastore target, const ds::EditOptions& options);
    Reply opEditConfig(Request& r);
    Reply opCopyConfig(Request& r);
    Reply opDeleteConfig(Request& r);
    Reply opValidate(Request& r);
    Reply opCommit(Request& r);
    Reply opCancelCommit(Request& r);
    Reply opDiscardChanges(Request& r);
    Reply opLock(Request& r);
    Reply opUnlock(Request& r);
    Reply lockOrUnlock(Request& r, bool lock);
    Reply opCloseSession(Request& r);
    Reply opKillSession(Request& r);
    Reply opGetSchema(Request& r);
    Reply opCreateSubscription(Request& r);
    Reply opEstablishSubscription(Request& r);
    Reply opModifySubscription(Request& r);
    Reply opDeleteSubscription(Request& r);
    Reply opKillSubscription(Request& r);
    Reply opRollback(Request& r);
    Reply opCompare(Request& r);
    /// A copy of running into `out`; returns the commit it is at (history: stateAfter()).
    std::uint64_t copyRunning(Tree& out, const char* why) const;

    /// Sends what the session's subscriptions have pending (deliverStream, then deliverDynamic).
    /// False when the session must end (a subscriber could not keep up, or the connection broke).
    bool deliverNotifications(Session& s) { return deliverStream(s) && deliverDynamic(s); }
    /// The session's RFC 5277 subscription, if any: the replay once, then live events; ends the
    /// subscription at its stop time.
    bool deliverStream(Session& s);
    /// The same for the session's dynamic subscriptions (ops_push.cpp).
    bool deliverDynamic(Session& s);
    /// When the session must next look at its subscriptions without being woken (a stop time,
    /// a periodic update, the end of a dampening period), if ever.
    std::optional<std::chrono::system_clock::time_point> subscriptionDeadline(const Session& s) const;
    /// Counts `notifications` sent to `s` (its and the server's statistics).
    void counted(Session& s, std::uint64_t notifications);
    /// The RPC counters, then the datastore's group commit (writes per transaction): the line
    /// logged every --stats-interval and at shutdown.
    std::string statisticsLine() const;
    /// Ends subscription `d` for the bus and kill-subscription (its session drops it).
    void forget(const DynamicSubscription& d);
    /// Ends the session's dynamic subscriptions (its end), without notifications.
    void dropDynamic(Session& s);
    /// ietf-netconf-notifications events of the session's life (RFC 6470).
    void raiseSessionStart(const Session& s);
    void raiseSessionEnd(const Session& s, TermReason reason);

    /// The content of a `config` anyxml as a configuration (strict, no state): the tree
    /// parseRpc() parsed with the message, or else parsed from the anyxml's content.
    Tree parseConfig(ParsedRpc& req, const lyd_node* anyxml, std::uint64_t& parseUs) const;
    /// ietf-netconf-monitoring, ietf-yang-library, NACM counters and commit history state data:
    /// all of it, or what a read filtered by `filterNode` can select of it (its top-level nodes
    /// in filter::topLevelScope(); the filter still has to be applied).
    Tree stateData(const lyd_node* filterNode = nullptr) const;
    /// A write of `r`'s session: its NACM write check (access.hpp). `mayChangeNacm`: the write
    /// may change running's /nacm.
    WriteCheck writeCheck(const Request& r, bool mayChangeNacm, bool install = true);
    /// Throws access-denied unless `r`'s user may read all of `source` (copy-config).
    void requireReadable(const Request& r, ds::Datastore source) const;

    ServerConfig config_;
    Context ctx_;
    std::unique_ptr<ds::Store> store_;
    std::unique_ptr<AccessControl> nacm_;               // NACM: the policy in force, the counters
    std::unique_ptr<notify::Service> notifications_;    // after store_: gone before it
    std::unique_ptr<confirm::ConfirmedCommit> confirm_; // uses both above: gone before them
    cluster::Member* member_ = nullptr;
    std::unique_ptr<history::History> history_; // after store_: gone before it
    UserDb users_;
    Stats stats_;
    DispatchTable dispatch_;
    std::vector<std::string> capabilities_;
    std::uint16_t port_ = 0;

    std::atomic<bool> stopping_{false};
    std::mutex stopMutex_;
    std::condition_variable stopCv_;
    std::thread housekeepingThread_;

    mutable std::mutex sessionsMutex_;
    std::condition_variable sessionsCv_;
    std::map<std::uint32_t, std::shared_ptr<Session>> sessions_;
    std::uint32_t nextSessionId_ = 1;

    // Dynamic subscriptions of every session, by id (kill-subscription finds them here).
    mutable std::mutex subscriptionsMutex_;
    std::map<std::uint32_t, std::pair<std::uint32_t, std::shared_ptr<DynamicSubscription>>>
        dynamic_; ///< session, it
    std::uint32_t nextSubscriptionId_ = 1;
    push::EditCache editCache_; // YANG-Push edits of recent change sets, shared by subscribers
    // Last: stopped first, while everything its sessions use is alive.
    std::unique_ptr<transport::SshListener> listener_;
};

} // namespace ncstore::netconfd
