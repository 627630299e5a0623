// ncstored's NETCONF server: SSH endpoint, sessions, and RPC dispatch to the datastore.
//
// Promises:
//  - One thread accepts (libnetconf2 does handshakes serially); every session has its own
//    thread that sleeps in poll() on the session's socket and an eventfd, so idle sessions cost
//    no CPU and a slow RPC on one session never delays another.
//  - A failing or malformed RPC produces an rpc-error and never ends the server.
//  - stop(): no new sessions; RPCs in flight finish and are answered; sessions are closed;
//    then the datastore drains its pending commits (its destructor).
//  - Only one Server exists per process (libnetconf2 keeps global state).
#pragma once

#include "locks.hpp"
#include "options.hpp"
#include "stats.hpp"
#include "users.hpp"

#include "ncstore/datastore.hpp"
#include "ncstore/yang.hpp"

#include <nc_server.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace ncstore::netconfd {

class Session;

class Server {
public:
    /// Builds the context, opens the store, prepares users and host keys. Throws on failure.
    explicit Server(const ServerConfig& config);
    ~Server();
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    /// Binds and starts accepting; prints the login (first start) and the listening line.
    void start();
    /// Asks the server to stop (thread-safe, returns at once).
    void requestStop();
    /// Blocks until requestStop(), then shuts down in order.
    void run();

    std::uint16_t port() const { return port_; }
    const ly_ctx* context() const { return ctx_.get(); }

    // Used by the RPC handlers (operations.cpp) and the libnetconf2 callbacks.
    nc_server_reply* dispatch(lyd_node* rpc, nc_session* ncs);

private:
    friend class Session;
    struct Reply;

    void acceptLoop();
    void housekeepingLoop();
    void serveSession(std::shared_ptr<Session> s);
    void endSession(Session& s);
    std::shared_ptr<Session> findSession(std::uint32_t id) const;

    // RPC handlers: each returns the reply or throws RpcError / ds::Error.
    nc_server_reply* opGet(const lyd_node* rpc, Session& s, bool config);
    nc_server_reply* opEditConfig(const lyd_node* rpc, Session& s);
    nc_server_reply* opCopyConfig(const lyd_node* rpc, Session& s);
    nc_server_reply* opDeleteConfig(const lyd_node* rpc, Session& s);
    nc_server_reply* opLock(const lyd_node* rpc, Session& s, bool lock);
    nc_server_reply* opKillSession(const lyd_node* rpc, Session& s);
    nc_server_reply* opValidate(const lyd_node* rpc, Session& s);
    nc_server_reply* opCommit(Session& s);
    nc_server_reply* opDiscardChanges(Session& s);
    nc_server_reply* opGetSchema(const lyd_node* rpc);

    /// The content of a `config` anyxml as a configuration (strict, no state): the tree
    /// parseRpcMessage() parsed with the message, or else parsed from the anyxml's content.
    Tree parseConfig(const lyd_node* anyxml, std::uint64_t& parseUs) const;
    /// ietf-netconf-monitoring and ietf-yang-library state data.
    Tree stateData() const;
    void checkWritable(ds::Datastore target, const Session& s) const;

    ServerConfig config_;
    Context ctx_;
    std::unique_ptr<ds::Store> store_;
    UserDb users_;
    LockTable locks_;
    Stats stats_;
    std::uint16_t port_ = 0;
    std::string contentId_;

    std::atomic<bool> stopping_{false};
    std::mutex stopMutex_;
    std::condition_variable stopCv_;
    std::thread acceptThread_;
    std::thread housekeepingThread_;

    mutable std::mutex sessionsMutex_;
    std::condition_variable sessionsCv_;
    std::map<std::uint32_t, std::shared_ptr<Session>> sessions_;
    std::map<std::uint32_t, std::thread> sessionThreads_;
    std::vector<std::thread> finishedThreads_;
};

} // namespace ncstore::netconfd
