// One NETCONF session's life on its connection, whatever the transport: the <hello> exchange,
// then framing, RPCs through the dispatcher and notifications, until the session ends.
//
// Promises:
//  - serve() runs on the connection's own thread and returns when the session has ended: it
//    enters the session table, raises RFC 6470 session-start once the hello exchange succeeded
//    and session-end when it ends, and leaves no lock, candidate change or unconfirmed commit
//    of the session behind (RFC 6241 8.3.5.2, 8.4.1).
//  - Whatever a client sends (broken framing, broken XML, a hello that is not one, a message
//    past the size limit) ends at most its own session, with an rpc-error where RFC 6241 asks
//    for one (malformed-message only to base:1.1 clients, RFC 6241 Appendix A).
//  - A session that is not subscribed and sends nothing for `idleTimeout` seconds is closed; no
//    <hello> within `authTimeout` seconds ends it too. An idle session sleeps in its
//    connection's read and costs no CPU.
//  - Once `stopping` is set, no new session starts and each running one ends after the RPC in
//    flight has been answered.
#pragma once

#include "confirm.hpp"
#include "connection.hpp"
#include "dispatcher.hpp"
#include "service.hpp"
#include "session.hpp"
#include "sessionaccess.hpp"
#include "sessiontable.hpp"
#include "stats.hpp"
#include "subscriptions.hpp"

#include "ncstore/datastore.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ncstore::netconfd {

class SessionLoop {
public:
    struct Limits {
        std::uint64_t maxMessageSize; ///< bytes of one message (--max-message-size)
        unsigned authTimeout;         ///< seconds for the client's <hello>
        unsigned idleTimeout;         ///< seconds; 0: idle sessions stay
    };
    /// What a session uses; every part outlives the loop (the server owns them all).
    struct Parts {
        const ly_ctx* ctx;
        const std::vector<std::string>& capabilities; ///< the server's <hello>
        const Dispatcher& dispatcher;
        Subscriptions& subscriptions;
        notify::Service& notifications;
        ds::Store& store;
        confirm::ConfirmedCommit& confirm;
        SessionTable& sessions;
        AccessControl& nacm;
        Stats& stats;
        const std::atomic<bool>& stopping;
        Limits limits;
    };

    explicit SessionLoop(Parts parts) : p_(parts) {}

    /// Serves `conn` as one session, on the calling thread, until the session ends.
    void serve(std::unique_ptr<transport::Connection> conn) const;

private:
    TermReason run(Session& s) const;
    /// Parses and runs one message; false when the session must end (close-session, a reply
    /// that could not be sent).
    bool handleMessage(Session& s, const std::string& message) const;
    void end(Session& s, TermReason reason) const;

    Parts p_;
};

} // namespace ncstore::netconfd
