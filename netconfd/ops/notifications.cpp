// RFC 5277 subscriptions of the NETCONF stream: create-subscription, the replay, the delivery
// of live events interleaved with RPCs, the stop time; the registration of every subscription
// operation (subscriptions.hpp).
#include "rpcargs.hpp"
#include "subscriptions.hpp"

#include "ncstore/log.hpp"

#include "events.hpp"
#include "eventsend.hpp"
#include "service.hpp"
#include "stats.hpp"

namespace ncstore::netconfd {

using namespace rpcargs;

namespace {

using Clock = std::chrono::system_clock;

constexpr const char* kStream = "NETCONF";
constexpr const char* kNmNs = "urn:ietf:params:xml:ns:netmod:notification";
// Live events a subscriber may have pending before it counts as unable to keep up.
constexpr std::size_t kQueueEvents = 1u << 20;

std::string replayComplete() {
    return std::string("<replayComplete xmlns=\"") + kNmNs + "\"/>";
}

std::string notificationComplete() {
    return std::string("<notificationComplete xmlns=\"") + kNmNs + "\"/>";
}

} // namespace

Reply Subscriptions::createSubscription(Request& r) {
    const lyd_node* rpc = r.op;
    Session& s = r.session;
    if (s.subscription) {
        // RFC 5277 2.1.1: a subscription lasts as long as its session.
        throw RpcError(ErrorTag::InUse, ErrorType::Protocol, "this session already has a subscription");
    }
    if (!s.dynamic.empty()) {
        throw RpcError(ErrorTag::InUse, ErrorType::Protocol,
                       "this session has dynamic subscriptions (establish-subscription); an RFC 5277 "
                       "subscription needs a session without them");
    }
    const std::string stream = valueOf(child(rpc, "stream"));
    if (!stream.empty() && stream != kStream) {
        throw RpcError::invalidValue("no stream " + stream + " (the server has NETCONF)", "stream");
    }
    auto sub = std::make_unique<EventSubscription>();
    sub->start = timeOf(rpc, "startTime");
    sub->stop = timeOf(rpc, "stopTime");
    const auto now = Clock::now();
    if (sub->stop && !sub->start) {
        throw RpcError::missingElement("startTime", "stopTime needs a startTime (RFC 5277 2.1.1)");
    }
    if (sub->start && *sub->start > now) {
        throw RpcError(ErrorTag::BadElement, ErrorType::Protocol,
                       "startTime is in the future (RFC 5277 2.1.1)")
            .withBadElement("startTime");
    }
    if (sub->stop && *sub->stop < *sub->start) {
        throw RpcError(ErrorTag::BadElement, ErrorType::Protocol, "stopTime is earlier than startTime")
            .withBadElement("stopTime");
    }
    if (const lyd_node* f = child(rpc, "filter")) {
        lyd_node* copy = nullptr;
        if (lyd_dup_single(f, nullptr, LYD_DUP_RECURSIVE, &copy) != LY_SUCCESS) {
            throw YangError("cannot keep the filter", svc_.ctx);
        }
        sub->filter.reset(copy);
        if (const auto error = eventFilterError(svc_.ctx, sub->filter.get(), {s.id, s.user, s.host})) {
            throw RpcError::invalidValue(*error, "filter");
        }
    }
    // Live events are queued from now on; the replay reads the log after this, so that every
    // event is either replayed or queued (deliverStream() drops what is both).
    auto conn = &s.connection();
    Session* session = &s;
    sub->live = svc_.notifications.bus().subscribe(kQueueEvents, svc_.notificationQueueBytes,
                                                   [conn, session](bool overflowed) {
                                                       if (overflowed) {
                                                           // Cut a subscriber blocked in a write too.
                                                           session->subscriberTooSlow = true;
                                                           conn->shutdown();
                                                       } else {
                                                           conn->wake();
                                                       }
                                                   });
    sub->replayPending = sub->start.has_value();
    NCS_LOG(info) << "session " << s.id << " subscribed to " << kStream << (sub->start ? " with replay" : "")
                  << (sub->filter ? " with a filter" : "");
    s.subscription = std::move(sub);
    return Reply::ok();
}

bool Subscriptions::deliverStream(Session& s) {
    if (!s.subscription) {
        return true;
    }
    EventSubscription& sub = *s.subscription;
    Outbox box(s.connection(), s.base11, s.outbox);
    // The rules in force now decide, for every event sent now (replayed ones included).
    const auto access = s.access.current();
    auto send = [&](Clock::time_point time, const std::string& content, bool filter = true) {
        // replayComplete and notificationComplete are about the subscription: never filtered.
        const std::string selected =
            filter ? shownEvent(svc_.ctx, s.access, *access, sub.filter.get(), content) : content;
        if (selected.empty()) {
            return;
        }
        box.add(time, selected);
    };
    bool complete = false;
    if (sub.replayPending) {
        sub.replayPending = false;
        sub.replayedThrough = svc_.notifications.replay(
            *sub.start, sub.stop, [&](const notify::Event& e) { send(e.time, e.content); });
        send(Clock::now(), replayComplete(), false);
        complete = sub.stop && *sub.stop <= Clock::now();
    }
    if (!complete) {
        for (const auto& e : sub.live->take()) {
            if (e->id <= sub.replayedThrough) {
                continue; // replayed already
            }
            if (sub.stop && e->time > *sub.stop) {
                complete = true;
                break;
            }
            send(e->time, e->content);
        }
    }
    const bool over = sub.live->overflowed() || s.subscriberTooSlow;
    if (!over && (complete || (sub.stop && *sub.stop <= Clock::now()))) {
        send(Clock::now(), notificationComplete(), false);
        svc_.notifications.bus().unsubscribe(sub.live.get());
        s.subscription.reset();
        NCS_LOG(info) << "session " << s.id << ": subscription complete (stopTime reached)";
    }
    // May wait for a client that does not read: its queue then overflows and cuts it.
    const bool ok = box.flush();
    counted(s, box.sent());
    if (over || s.subscriberTooSlow) {
        NCS_LOG(warning)
            << "session " << s.id << " of " << s.user << ": its subscriber does not keep up (more than "
            << svc_.notificationQueueBytes
            << " bytes of notifications pending): closing the session; it can replay from the log";
        return false;
    }
    return ok;
}

void Subscriptions::counted(Session& s, std::uint64_t notifications) {
    s.outNotifications += notifications;
    svc_.stats.outNotifications += notifications;
}

void Subscriptions::sessionEnded(Session& s) {
    if (s.subscription) {
        svc_.notifications.bus().unsubscribe(s.subscription->live.get());
        s.subscription.reset();
    }
    dropDynamic(s);
}

std::shared_ptr<Subscriptions> Subscriptions::add(Dispatcher& d, const Services& svc) {
    auto ops = std::make_shared<Subscriptions>(svc);
    d.add("notifications", "create-subscription", handler(ops, &Subscriptions::createSubscription));
    const std::string sn = "ietf-subscribed-notifications";
    d.add(sn, "establish-subscription", handler(ops, &Subscriptions::establishSubscription));
    d.add(sn, "modify-subscription", handler(ops, &Subscriptions::modifySubscription));
    d.add(sn, "delete-subscription", handler(ops, &Subscriptions::deleteSubscription));
    d.add(sn, "kill-subscription", handler(ops, &Subscriptions::killSubscription));
    return ops;
}

} // namespace ncstore::netconfd
