// What the server keeps about one NETCONF session: its connection (any transport), who it is,
// counters.
#pragma once

#include "connection.hpp"
#include "eventsend.hpp"
#include "selection.hpp"
#include "sessionaccess.hpp"

#include "ncstore/yang.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ncstore::netconfd {

namespace notify {
class Subscription;
struct Event;
} // namespace notify

/// A session's RFC 5277 subscription (create-subscription): one per session, until it ends.
struct EventSubscription {
    std::shared_ptr<notify::Subscription> live; ///< the bus's queue of live events
    Tree filter;                                ///< a copy of the subscription's filter; null: all
    std::optional<std::chrono::system_clock::time_point> start; ///< replay from here
    std::optional<std::chrono::system_clock::time_point> stop;  ///< end after the events of this time
    bool replayPending = false;                                 ///< the replay runs once the <ok/> went out
    std::uint64_t replayedThrough = 0; ///< live events with an id up to this one were replayed
};

/// A dynamic subscription (RFC 8639 establish-subscription), to the NETCONF stream or (RFC 8641,
/// YANG-Push) to a datastore, on change or periodic. The owning session's thread reads and writes
/// it; other threads only set `killed` (kill-subscription) and wake the session.
struct DynamicSubscription {
    using Clock = std::chrono::system_clock;
    enum class Kind { Stream, OnChange, Periodic };

    std::uint32_t id = 0;
    Kind kind = Kind::Stream;
    /// The bus's queue of live events (not for periodic subscriptions, which read the datastore).
    std::shared_ptr<notify::Subscription> live;
    /// On-change: while held, events carry their change sets (notify::Service::follow()).
    std::shared_ptr<void> following;
    /// The stream's filter, or the datastore's selection filter.
    push::Selection selection;
    std::optional<Clock::time_point> stop; ///< stop-time: ends after the events of this time

    // Stream: the replay from the log, once the reply went out.
    std::optional<Clock::time_point> replayStart;
    bool replayPending = false;
    std::uint64_t replayedThrough = 0; ///< live events up to this id were replayed

    // Datastore.
    ds::Datastore datastore = ds::Datastore::Running;
    std::optional<std::string> syncUpdate;  ///< on-change: the push-update of sync-on-start, to send
    std::uint64_t syncedThrough = 0;        ///< on-change: commits up to this id are in the sync
    std::vector<std::string> excluded;      ///< on-change: change types not sent (excluded-change)
    std::chrono::milliseconds dampening{0}; ///< on-change: at least this long between updates
    Clock::time_point nextChangeUpdate;     ///< on-change: no update before this (dampening)
    std::vector<std::shared_ptr<const notify::Event>> held; ///< on-change: changes dampened
    std::chrono::milliseconds period{0};                    ///< periodic: the period
    Clock::time_point nextPeriodic;                         ///< periodic: the next push-update

    std::atomic<bool> killed{false};
};

/// Why a session ended (ietf-netconf-monitoring / RFC 6470 termination reasons).
enum class TermReason { Closed, Killed, Dropped, Timeout, BadHello, Other };
const char* toString(TermReason r);

class Session {
public:
    Session(std::unique_ptr<transport::Connection> conn, std::uint32_t sessionId, AccessControl& nacm)
        : id(sessionId), user(conn->user()), host(conn->host()), port(conn->port()),
          login(std::chrono::system_clock::now()), access(nacm, user), conn_(std::move(conn)) {}
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    /// The connection: read and written by the session's own thread only; other threads may
    /// call wake() and shutdown() on it.
    transport::Connection& connection() const { return *conn_; }

    /// Ends the session from another thread (kill-session): its I/O fails at once, an RPC in
    /// progress finishes without being answered.
    void kill(std::uint32_t by) {
        killedBy = by;
        killRequested = true;
        conn_->shutdown();
    }

    /// The client no longer waits for the answer of the RPC in progress: the session was killed
    /// or its peer hung up. The session's thread (while it works on that RPC).
    bool abandoned() const { return killRequested || conn_->peerGone(); }

    const std::uint32_t id;
    const std::string user;
    const std::string host;
    const std::uint16_t port;
    const std::chrono::system_clock::time_point login;
    /// What this session may do (NACM, access.hpp): asked per RPC and per notification.
    const SessionAccess access;

    std::atomic<std::uint64_t> inRpcs{0};
    std::atomic<std::uint64_t> inBadRpcs{0};
    std::atomic<std::uint64_t> outRpcErrors{0};
    std::atomic<std::uint64_t> outNotifications{0};

    std::atomic<bool> killRequested{false};
    std::atomic<std::uint32_t> killedBy{0};
    bool base11 = false;  ///< chunked framing (set once, by the session's thread, at hello)
    bool started = false; ///< the hello exchange succeeded (RFC 6470 session-start was raised)
    /// The session's subscription; the session's thread only.
    std::unique_ptr<EventSubscription> subscription;
    /// The session's dynamic subscriptions (RFC 8639), in the order they were made.
    std::vector<std::shared_ptr<DynamicSubscription>> dynamic;
    /// Where notifications are built for sending (eventsend.hpp); the session's thread only.
    OutboxBuffers outbox;
    /// The subscriber could not keep up: its queue overflowed and the session is being cut.
    std::atomic<bool> subscriberTooSlow{false};

private:
    std::unique_ptr<transport::Connection> conn_;
};

} // namespace ncstore::netconfd
