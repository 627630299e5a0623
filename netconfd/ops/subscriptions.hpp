// Subscriptions: RFC 5277 (create-subscription, replay, stop time) and RFC 8639/8641 dynamic
// subscriptions to the NETCONF stream and to datastores (YANG-Push, on change and periodic),
// and their delivery, interleaved with the RPCs of the subscribing session.
//
// Promises:
//  - The operations' handlers are registered with add(); the session loop calls deliver() after
//    every RPC and whenever the session wakes, and deadline() to know how long it may sleep;
//    sessionEnded() ends what the session subscribed to, without notifications.
//  - A subscriber that cannot keep up (more than notificationQueueBytes pending) ends its own
//    session (deliver() returns false); it never holds up the writers or other subscribers.
//  - kill-subscription may name another session's subscription: that session is woken and drops
//    it on its own thread; nothing else of a session's subscriptions is touched by other threads.
#pragma once

#include "patch.hpp"
#include "services.hpp"
#include "session.hpp"

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

namespace ncstore::netconfd {

class Subscriptions {
public:
    explicit Subscriptions(const Services& svc) : svc_(svc) {}

    /// Registers the subscription operations in `d`; the entries keep the object alive.
    static std::shared_ptr<Subscriptions> add(Dispatcher& d, const Services& svc);

    Reply createSubscription(Request& r);
    Reply establishSubscription(Request& r);
    Reply modifySubscription(Request& r);
    Reply deleteSubscription(Request& r);
    Reply killSubscription(Request& r);

    /// Sends what the session's subscriptions have pending (its RFC 5277 subscription, then its
    /// dynamic ones). False when the session must end (a subscriber could not keep up, or the
    /// connection broke).
    bool deliver(Session& s) { return deliverStream(s) && deliverDynamic(s); }
    /// When the session must next look at its subscriptions without being woken (a stop time,
    /// a periodic update, the end of a dampening period), if ever.
    std::optional<std::chrono::system_clock::time_point> deadline(const Session& s) const;
    /// The session ends: its subscriptions go, without notifications.
    void sessionEnded(Session& s);

private:
    /// The session's RFC 5277 subscription, if any: the replay once, then live events; ends the
    /// subscription at its stop time.
    bool deliverStream(Session& s);
    /// The same for the session's dynamic subscriptions (push.cpp).
    bool deliverDynamic(Session& s);
    /// Counts `notifications` sent to `s` (its and the server's statistics).
    void counted(Session& s, std::uint64_t notifications);
    /// Ends subscription `d` for the bus and kill-subscription (its session drops it).
    void forget(const DynamicSubscription& d);
    /// Ends the session's dynamic subscriptions, without notifications.
    void dropDynamic(Session& s);

    Services svc_;
    // Dynamic subscriptions of every session, by id (kill-subscription finds them here).
    mutable std::mutex subscriptionsMutex_;
    std::map<std::uint32_t, std::pair<std::uint32_t, std::shared_ptr<DynamicSubscription>>>
        dynamic_; ///< session, it
    std::uint32_t nextSubscriptionId_ = 1;
    push::EditCache editCache_; // YANG-Push edits of recent change sets, shared by subscribers
};

} // namespace ncstore::netconfd
