// Dynamic subscriptions (RFC 8639 over NETCONF, RFC 8640) and YANG-Push (RFC 8641):
// establish-, modify-, delete- and kill-subscription, and the delivery of what each follows —
// the NETCONF stream, or a datastore's changes (push-change-update, YANG Patch) or contents
// (push-update: sync-on-start, periodic).
//
// Every subscription reads the one bus of durable events (notify::Service): a datastore change
// reaches a YANG-Push subscriber as the change set the commit published, after it is durable, on
// the subscriber's own session thread. No commit waits for a subscriber; one that cannot keep up
// (its bounded queue overflows) is terminated with subscription-terminated.
#include "rpcargs.hpp"
#include "subscriptions.hpp"

#include "ncstore/log.hpp"

#include "events.hpp"
#include "eventsend.hpp"
#include "patch.hpp"
#include "readpath.hpp"
#include "service.hpp"
#include "sessiontable.hpp"
#include "stats.hpp"

#include <algorithm>

namespace ncstore::netconfd {

using namespace rpcargs;

namespace {

using Clock = std::chrono::system_clock;

constexpr const char* kStream = "NETCONF";
// Live events a subscription may have pending before it counts as unable to keep up.
constexpr std::size_t kQueueEvents = 1u << 20;
// The shortest period of a periodic subscription (RFC 8641 period-unsupported below it).
constexpr auto kMinPeriod = std::chrono::milliseconds(100);

std::string sn(const char* identity) {
    return std::string("ietf-subscribed-notifications:") + identity;
}

std::string yp(const char* identity) {
    return std::string("ietf-yang-push:") + identity;
}

/// An establish/modify error (RFC 8640 section 4: the reason identity in error-app-tag).
RpcError refusal(const std::string& reason, const std::string& message, const char* element) {
    return RpcError::invalidValue(message, element).withAppTag(reason);
}

/// A centiseconds leaf (RFC 8641) as a duration; `fallback` when absent.
std::chrono::milliseconds centiseconds(const lyd_node* parent, const char* name,
                                       std::chrono::milliseconds fallback) {
    const lyd_node* node = parent ? child(parent, name) : nullptr;
    return node ? std::chrono::milliseconds(10 * std::stoull(valueOf(node))) : fallback;
}

ds::Datastore datastoreIdentity(const lyd_node* node) {
    const std::string v = valueOf(node);
    if (v == "ietf-datastores:running") {
        return ds::Datastore::Running;
    }
    if (v == "ietf-datastores:startup") {
        return ds::Datastore::Startup;
    }
    // Candidate changes are not durable and not published; operational is not served yet.
    throw refusal(yp("datastore-not-subscribable"),
                  "datastore " + v + " cannot be subscribed to (running and startup can)", "datastore");
}

/// The selection filter among the children of `parent` (`subtreeName` or `xpathName`), if any.
const lyd_node* filterParam(const lyd_node* parent, const char* subtreeName, const char* xpathName) {
    const lyd_node* f = child(parent, subtreeName);
    return f ? f : child(parent, xpathName);
}

/// The first periodic update at or after `now` on the grid of `anchor` (RFC 8641 anchor-time).
Clock::time_point firstPeriodic(Clock::time_point now, std::optional<Clock::time_point> anchor,
                                std::chrono::milliseconds period) {
    if (!anchor) {
        return now;
    }
    const auto since = now - *anchor;
    if (since <= Clock::duration::zero()) {
        return *anchor;
    }
    const auto periods = (since + period - Clock::duration(1)) / period;
    return *anchor + periods * period;
}

} // namespace

Reply Subscriptions::establishSubscription(Request& r) {
    const lyd_node* rpc = r.op;
    Session& s = r.session;
    if (s.subscription) {
        throw RpcError(ErrorTag::InUse, ErrorType::Protocol,
                       "this session has an RFC 5277 subscription (create-subscription); dynamic "
                       "subscriptions need a session without one");
    }
    if (const lyd_node* encoding = child(rpc, "encoding");
        encoding && valueOf(encoding) != sn("encode-xml")) {
        throw refusal(sn("encoding-unsupported"),
                      "encoding " + valueOf(encoding) + " is not supported (encode-xml is)", "encoding");
    }
    if (child(rpc, "stream-filter-name") || child(rpc, "selection-filter-ref")) {
        throw refusal(sn("filter-unavailable"), "the server has no configured filters to refer to", "filter");
    }
    auto d = std::make_shared<DynamicSubscription>();
    const auto now = Clock::now();
    d->stop = timeOf(rpc, "stop-time");
    std::string revision; // replay-start-time-revision, when the replay starts later than asked
    if (const lyd_node* stream = child(rpc, "stream")) {
        if (valueOf(stream) != kStream) {
            throw refusal(sn("stream-unavailable"),
                          "no stream " + valueOf(stream) + " (the server has NETCONF)", "stream");
        }
        d->kind = DynamicSubscription::Kind::Stream;
        if (const lyd_node* f = filterParam(rpc, "stream-subtree-filter", "stream-xpath-filter")) {
            d->selection = push::Selection::of(f);
            if (const auto error =
                    eventFilterError(svc_.ctx, d->selection.filterNode(), {s.id, s.user, s.host})) {
                throw refusal(sn("filter-unsupported"), *error, "filter");
            }
        }
        if (auto start = timeOf(rpc, "replay-start-time")) {
            if (*start > now) {
                throw refusal(sn("replay-unsupported"), "replay-start-time is in the future",
                              "replay-start-time");
            }
            const auto logStart = svc_.notifications.logCreationTime();
            if (*start < logStart) {
                start = logStart;
                revision = notify::dateAndTime(logStart);
            }
            d->replayStart = start;
            d->replayPending = true;
        }
        if (d->stop && *d->stop <= (d->replayStart ? *d->replayStart : now)) {
            throw RpcError::invalidValue(d->replayStart ? "stop-time is not after replay-start-time"
                                                        : "stop-time is in the past",
                                         "stop-time");
        }
    } else if (const lyd_node* datastore = child(rpc, "datastore")) {
        d->datastore = datastoreIdentity(datastore);
        if (const lyd_node* f = filterParam(rpc, "datastore-subtree-filter", "datastore-xpath-filter")) {
            d->selection = push::Selection::of(f);
        }
        if (d->stop && *d->stop <= now) {
            throw RpcError::invalidValue("stop-time is in the past", "stop-time");
        }
        if (const lyd_node* periodic = child(rpc, "periodic")) {
            d->kind = DynamicSubscription::Kind::Periodic;
            d->period = centiseconds(periodic, "period", std::chrono::milliseconds(0));
            if (d->period < kMinPeriod) {
                throw refusal(yp("period-unsupported"), "the shortest period is 10 centiseconds", "period");
            }
            d->nextPeriodic = firstPeriodic(now, timeOf(periodic, "anchor-time"), d->period);
        } else if (const lyd_node* onChange = child(rpc, "on-change")) {
            d->kind = DynamicSubscription::Kind::OnChange;
            d->dampening = centiseconds(onChange, "dampening-period", std::chrono::milliseconds(0));
            for (const lyd_node* n = lyd_child(onChange); n; n = n->next) {
                if (n->schema && std::string_view(n->schema->name) == "excluded-change") {
                    d->excluded.push_back(valueOf(n));
                }
            }
            const lyd_node* sync = child(onChange, "sync-on-start");
            if (!sync || valueOf(sync) != "false") {
                d->syncUpdate.emplace();
            }
        } else {
            throw RpcError::missingElement("periodic",
                                           "a datastore subscription needs periodic or on-change");
        }
    } else {
        throw RpcError::missingElement("stream", "establish-subscription needs a stream or a datastore");
    }

    if (d->kind == DynamicSubscription::Kind::OnChange) {
        d->following = svc_.notifications.follow();
    }
    if (d->kind != DynamicSubscription::Kind::Periodic) {
        // Live events are queued from now on; the replay or the sync read comes after this, so
        // that every event is either in it or queued (the delivery drops what is both).
        auto* conn = &s.connection();
        d->live = svc_.notifications.bus().subscribe(kQueueEvents, svc_.notificationQueueBytes,
                                                     [conn](bool) { conn->wake(); });
    }
    try {
        if (d->syncUpdate) {
            d->syncedThrough = svc_.reads.readConfigXml(r.access, d->datastore, d->selection.filterNode(), 0,
                                                        *d->syncUpdate, [&s] { return s.abandoned(); });
        }
    } catch (...) {
        svc_.notifications.bus().unsubscribe(d->live.get());
        throw;
    }
    {
        std::lock_guard lock(subscriptionsMutex_);
        d->id = nextSubscriptionId_++;
        dynamic_.emplace(d->id, std::make_pair(s.id, d));
    }
    s.dynamic.push_back(d);
    NCS_LOG(info) << "session " << s.id << " established subscription " << d->id << " ("
                  << (d->kind == DynamicSubscription::Kind::Stream     ? "stream NETCONF"
                      : d->kind == DynamicSubscription::Kind::OnChange ? "on-change"
                                                                       : "periodic")
                  << (d->selection.filterNode() ? ", filtered" : "") << ")";
    std::string out = std::string("<id xmlns=\"") + push::kSnNs + "\">" + std::to_string(d->id) + "</id>";
    if (!revision.empty()) {
        out += std::string("<replay-start-time-revision xmlns=\"") + push::kSnNs + "\">" + revision +
               "</replay-start-time-revision>";
    }
    return Reply::output(std::move(out));
}

namespace {

/// The session's subscription `id`, or no-such-subscription (RFC 8639: a dynamic subscription
/// is modified and deleted only by its own session).
DynamicSubscription& ownSubscription(Session& s, const lyd_node* rpc) {
    const std::string id = valueOf(child(rpc, "id"));
    for (const auto& d : s.dynamic) {
        if (std::to_string(d->id) == id) {
            return *d;
        }
    }
    throw refusal(sn("no-such-subscription"), "this session has no subscription " + id, "id");
}

} // namespace

Reply Subscriptions::modifySubscription(Request& r) {
    const lyd_node* rpc = r.op;
    DynamicSubscription& d = ownSubscription(r.session, rpc);
    const bool stream = d.kind == DynamicSubscription::Kind::Stream;
    std::optional<push::Selection> selection;
    if (const lyd_node* f = stream ? filterParam(rpc, "stream-subtree-filter", "stream-xpath-filter")
                                   : filterParam(rpc, "datastore-subtree-filter", "datastore-xpath-filter")) {
        selection = push::Selection::of(f);
    } else if (filterParam(rpc, stream ? "datastore-subtree-filter" : "stream-subtree-filter",
                           stream ? "datastore-xpath-filter" : "stream-xpath-filter")) {
        throw refusal(sn("filter-unsupported"),
                      std::string("subscription ") + std::to_string(d.id) + " is to a " +
                          (stream ? "stream" : "datastore") + ": its filter is a " +
                          (stream ? "stream" : "datastore") + " filter",
                      "filter");
    }
    if (child(rpc, "stream-filter-name") || child(rpc, "selection-filter-ref")) {
        throw refusal(sn("filter-unavailable"), "the server has no configured filters to refer to", "filter");
    }
    const auto stop = timeOf(rpc, "stop-time");
    if (stop && *stop <= Clock::now()) {
        throw RpcError::invalidValue("stop-time is in the past", "stop-time");
    }
    std::optional<std::chrono::milliseconds> period;
    std::optional<std::chrono::milliseconds> dampening;
    if (const lyd_node* periodic = child(rpc, "periodic")) {
        if (d.kind != DynamicSubscription::Kind::Periodic) {
            throw refusal(yp("period-unsupported"), "the subscription is not periodic", "periodic");
        }
        period = centiseconds(periodic, "period", d.period);
        if (*period < kMinPeriod) {
            throw refusal(yp("period-unsupported"), "the shortest period is 10 centiseconds", "period");
        }
    }
    if (const lyd_node* onChange = child(rpc, "on-change")) {
        if (d.kind != DynamicSubscription::Kind::OnChange) {
            throw refusal(yp("on-change-unsupported"), "the subscription is not on-change", "on-change");
        }
        dampening = centiseconds(onChange, "dampening-period", d.dampening);
    }
    // Checked all: now change it.
    if (selection) {
        d.selection = std::move(*selection);
    }
    if (stop) {
        d.stop = stop;
    }
    if (period) {
        d.period = *period;
        d.nextPeriodic = firstPeriodic(Clock::now(), timeOf(child(rpc, "periodic"), "anchor-time"), d.period);
    }
    if (dampening) {
        d.dampening = *dampening;
    }
    NCS_LOG(info) << "session " << r.session.id << " modified subscription " << d.id;
    return Reply::ok();
}

Reply Subscriptions::deleteSubscription(Request& r) {
    Session& s = r.session;
    DynamicSubscription& d = ownSubscription(s, r.op);
    const std::uint32_t id = d.id;
    forget(d);
    std::erase_if(s.dynamic, [id](const auto& x) { return x->id == id; });
    NCS_LOG(info) << "session " << s.id << " deleted subscription " << id;
    return Reply::ok();
}

Reply Subscriptions::killSubscription(Request& r) {
    const std::string id = valueOf(child(r.op, "id"));
    std::uint32_t owner = 0;
    {
        std::lock_guard lock(subscriptionsMutex_);
        // libyang checked the id is a uint32 (sn:subscription-id).
        if (const auto found = dynamic_.find(static_cast<std::uint32_t>(std::stoul(id)));
            found != dynamic_.end()) {
            owner = found->second.first;
            found->second.second->killed = true;
        }
    }
    if (!owner) {
        throw refusal(sn("no-such-subscription"), "no subscription " + id, "id");
    }
    // Its own session ends it, with subscription-terminated, as soon as it wakes.
    if (const auto session = svc_.sessions.find(owner)) {
        session->connection().wake();
    }
    NCS_LOG(info) << "session " << r.session.id << " killed subscription " << id << " of session " << owner;
    return Reply::ok();
}

void Subscriptions::forget(const DynamicSubscription& d) {
    if (d.live) {
        svc_.notifications.bus().unsubscribe(d.live.get());
    }
    std::lock_guard lock(subscriptionsMutex_);
    dynamic_.erase(d.id);
}

void Subscriptions::dropDynamic(Session& s) {
    for (const auto& d : s.dynamic) {
        forget(*d);
    }
    s.dynamic.clear();
}

std::optional<std::chrono::system_clock::time_point> Subscriptions::deadline(const Session& s) const {
    std::optional<Clock::time_point> t = s.subscription ? s.subscription->stop : std::nullopt;
    auto earliest = [&t](Clock::time_point x) {
        if (!t || x < *t) {
            t = x;
        }
    };
    for (const auto& d : s.dynamic) {
        if (d->stop) {
            earliest(*d->stop);
        }
        if (d->kind == DynamicSubscription::Kind::Periodic) {
            earliest(d->nextPeriodic);
        } else if (!d->held.empty()) {
            earliest(d->nextChangeUpdate);
        }
    }
    return t;
}

bool Subscriptions::deliverDynamic(Session& s) {
    if (s.dynamic.empty()) {
        return true;
    }
    Outbox box(s.connection(), s.base11, s.outbox);
    // The rules in force now decide, for everything sent now.
    const auto access = s.access.current();
    const nacm::Access* limited = access->permitsAllReads() ? nullptr : access.get();
    const ly_ctx* ctx = svc_.ctx;

    // The YANG Patch edits of one change set that subscription `d` is sent ("" : none).
    auto editsOf = [&](const DynamicSubscription& d, const ds::ChangeSet& changes) {
        std::shared_ptr<const std::vector<std::string>> whole;
        std::string edits;
        for (std::size_t i = 0; i < changes.changes.size(); ++i) {
            const ds::Change& c = changes.changes[i];
            if (!d.excluded.empty() &&
                std::find(d.excluded.begin(), d.excluded.end(), push::changeType(c)) != d.excluded.end()) {
                continue;
            }
            const push::Selection::Part part = d.selection.select(c, ctx, limited);
            if (part.kind == push::Selection::Part::Kind::Whole) {
                if (!whole) {
                    whole = editCache_.edits(changes, ctx);
                }
                edits += (*whole)[i];
            } else if (part.kind == push::Selection::Part::Kind::Cut) {
                edits += push::edit(c, push::EditCache::editId(changes, i), part.node, ctx);
            }
        }
        return edits;
    };

    const auto now = Clock::now();
    for (std::size_t i = 0; i < s.dynamic.size();) {
        DynamicSubscription& d = *s.dynamic[i];
        std::optional<std::string> ended; // the notification that ends it
        try {
            if (d.killed) {
                ended = push::subscriptionTerminated(d.id, sn("no-such-subscription"));
            } else if (d.live && d.live->overflowed()) {
                NCS_LOG(warning) << "session " << s.id << " of " << s.user << ": subscription " << d.id
                                 << " does not keep up (more than " << svc_.notificationQueueBytes
                                 << " bytes of events pending): terminated";
                // RFC 8639 has no reason for a queue that overflowed: suspended for want of
                // resources, and never resumed.
                box.add(Clock::now(), push::subscriptionSuspended(d.id, sn("insufficient-resources")));
                ended = push::subscriptionTerminated(d.id, sn("suspension-timeout"));
            } else if (d.kind == DynamicSubscription::Kind::Stream) {
                auto send = [&](Clock::time_point time, const std::string& content) {
                    const std::string shown =
                        shownEvent(ctx, s.access, *access, d.selection.filterNode(), content);
                    if (!shown.empty()) {
                        box.add(time, shown);
                    }
                };
                if (d.replayPending) {
                    d.replayPending = false;
                    d.replayedThrough = svc_.notifications.replay(
                        *d.replayStart, d.stop, [&](const notify::Event& e) { send(e.time, e.content); });
                    box.add(Clock::now(), push::replayCompleted(d.id));
                }
                for (const auto& e : d.live->take()) {
                    if (e->id <= d.replayedThrough) {
                        continue; // replayed already
                    }
                    if (d.stop && e->time > *d.stop) {
                        break;
                    }
                    send(e->time, e->content);
                }
            } else if (d.kind == DynamicSubscription::Kind::OnChange) {
                if (d.syncUpdate) {
                    box.add(now, push::pushUpdate(d.id, *d.syncUpdate));
                    d.syncUpdate.reset();
                }
                for (auto& e : d.live->take()) {
                    if (e->changes && e->id > d.syncedThrough && e->changes->datastore == d.datastore) {
                        d.held.push_back(std::move(e));
                    }
                }
                if (!d.held.empty() && now >= d.nextChangeUpdate) {
                    if (d.dampening.count() == 0) {
                        for (const auto& e : d.held) {
                            const std::string edits = editsOf(d, *e->changes);
                            if (!edits.empty()) {
                                box.add(e->time, push::pushChangeUpdate(d.id, std::to_string(e->id), edits));
                            }
                        }
                    } else {
                        // Dampened: everything since the last update in one patch.
                        std::string edits;
                        for (const auto& e : d.held) {
                            edits += editsOf(d, *e->changes);
                        }
                        if (!edits.empty()) {
                            box.add(d.held.back()->time,
                                    push::pushChangeUpdate(d.id,
                                                           std::to_string(d.held.front()->id) + "-" +
                                                               std::to_string(d.held.back()->id),
                                                           edits));
                            d.nextChangeUpdate = now + d.dampening;
                        }
                    }
                    d.held.clear();
                }
            } else if (now >= d.nextPeriodic) {
                std::string contents;
                svc_.reads.readConfigXml(limited, d.datastore, d.selection.filterNode(), 0, contents,
                                         [&s] { return s.abandoned(); });
                box.add(now, push::pushUpdate(d.id, contents));
                while (d.nextPeriodic <= now) {
                    d.nextPeriodic += d.period;
                }
            }
            if (!ended && d.stop && *d.stop <= now) {
                // A dynamic subscription ends at its stop-time without a word (RFC 8639 has
                // subscription-completed for configured subscriptions only).
                ended = std::string();
            }
        } catch (const std::exception& e) {
            NCS_LOG(error) << "session " << s.id << ": subscription " << d.id << " fails: " << e.what()
                           << ": terminated";
            ended = push::subscriptionTerminated(d.id, sn("filter-unavailable"));
        }
        if (ended) {
            if (!ended->empty()) {
                box.add(Clock::now(), *ended);
            }
            forget(d);
            NCS_LOG(info) << "session " << s.id << ": subscription " << d.id << " ended";
            s.dynamic.erase(s.dynamic.begin() + static_cast<std::ptrdiff_t>(i));
        } else {
            ++i;
        }
    }
    const bool ok = box.flush();
    counted(s, box.sent());
    return ok;
}

} // namespace ncstore::netconfd
