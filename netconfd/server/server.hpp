// ncstored's NETCONF server: it builds the services (store, NACM, notifications, confirmed
// commit, history, read path, dispatcher), registers the operations (ops/) and the state
// providers (state/), accepts connections (transport/) and keeps the session table; each
// connection runs the session loop (sessionloop.hpp). Everything a session asks for goes through
// the dispatcher; nothing of an operation is defined here.
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

#include "appserver.hpp"
#include "confirm.hpp"
#include "connection.hpp"
#include "dispatcher.hpp"
#include "history.hpp"
#include "options.hpp"
#include "readpath.hpp"
#include "service.hpp"
#include "session.hpp"
#include "sessionaccess.hpp"
#include "sessionloop.hpp"
#include "sessiontable.hpp"
#include "stats.hpp"
#include "subscriptions.hpp"
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
#include <vector>

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
    /// Serves the connections `listener` hands over, from now until the server stops (it is
    /// started here and stopped by run()). start() adds the SSH listener of the options; another
    /// transport is one more call. Throws when the listener cannot start or the server stops.
    void addListener(std::unique_ptr<transport::Listener> listener);
    /// Its dqlite node said it does not lead (thread-safe): reads stop relying on the read
    /// lease (ds::Store::revokeReadLease) while the server may still be serving.
    void leadershipInDoubt();

    std::uint16_t port() const { return port_; }
    const ly_ctx* context() const { return ctx_.get(); }

    /// The capabilities of the server's <hello>.
    const std::vector<std::string>& capabilities() const { return capabilities_; }

    /// Where operations are added and removed while the server runs (rpc/dispatcher.hpp).
    Dispatcher& dispatcher() { return *dispatcher_; }
    /// Where state providers are added and removed while the server runs (read/readpath.hpp).
    ReadPath& reads() { return *reads_; }

private:
    void housekeepingLoop();
    /// The RPC counters, then the datastore's group commit (writes per transaction): the line
    /// logged every --stats-interval and at shutdown.
    std::string statisticsLine() const;

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
    SessionTable sessions_;
    std::unique_ptr<XPathEvaluator> xpath_;  // XPath filters' workers (none: evaluated in process)
    std::unique_ptr<ReadPath> reads_;        // after store_ and xpath_: gone before them
    std::unique_ptr<Dispatcher> dispatcher_; // its entries use everything above
    std::shared_ptr<Subscriptions> subscriptions_;
    std::unique_ptr<SessionLoop> sessionLoop_; // what every connection runs, over all of the above
    std::vector<std::string> capabilities_;
    std::uint16_t port_ = 0;

    std::atomic<bool> stopping_{false};
    std::mutex stopMutex_;
    std::condition_variable stopCv_;
    std::thread housekeepingThread_;

    // Applications (netconfd/app): ended before the listeners, while what they use is alive.
    std::unique_ptr<app::AppServer> apps_;
    // Last: stopped first, while everything their sessions use is alive.
    std::mutex listenersMutex_;
    std::vector<std::unique_ptr<transport::Listener>> listeners_;
};

} // namespace ncstore::netconfd
