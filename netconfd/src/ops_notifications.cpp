// RFC 5277 subscriptions of the NETCONF stream: create-subscription, the replay, the delivery
// of live events interleaved with RPCs, the stop time; RFC 6470 session events.
#include "rpcargs.hpp"
#include "server.hpp"

#include "ncstore/log.hpp"

#include "events.hpp"
#include "filter.hpp"
#include "framing.hpp"

namespace ncstore::netconfd {

using namespace rpcargs;

namespace {

using Clock = std::chrono::system_clock;

constexpr const char* kStream = "NETCONF";
constexpr const char* kNmNs = "urn:ietf:params:xml:ns:netmod:notification";
constexpr std::string_view kNcnNs = "urn:ietf:params:xml:ns:yang:ietf-netconf-notifications";
// Live events a subscriber may have pending before it counts as unable to keep up.
constexpr std::size_t kQueueEvents = 1u << 20;
// Notifications written to the connection in one go.
constexpr std::size_t kWriteBatch = 1u << 20;

std::optional<Clock::time_point> timeParameter(const lyd_node* rpc, const char* name) {
    const lyd_node* node = child(rpc, name);
    if (!node) {
        return std::nullopt;
    }
    auto t = notify::parseDateAndTime(valueOf(node));
    if (!t) {
        throw RpcError::invalidValue(std::string("bad ") + name + " " + valueOf(node), name);
    }
    return t;
}

/// The event as a libyang notification tree (for a filter), or null when it does not parse.
Tree parseEvent(const ly_ctx* ctx, const std::string& content) {
    ly_in* in = nullptr;
    if (ly_in_new_memory(content.c_str(), &in) != LY_SUCCESS) {
        return nullptr;
    }
    lyd_node* tree = nullptr;
    const LY_ERR rc = lyd_parse_op(ctx, nullptr, in, LYD_XML, LYD_TYPE_NOTIF_YANG, &tree, nullptr);
    ly_in_free(in, 0);
    Tree owned{tree};
    return rc == LY_SUCCESS ? std::move(owned) : nullptr;
}

/// What of `content` the subscription's filter selects ("": nothing, the event is not sent).
std::string filtered(const ly_ctx* ctx, const EventSubscription& sub, const std::string& content) {
    if (!sub.filter) {
        return content;
    }
    const Tree event = parseEvent(ctx, content);
    if (!event) {
        NCS_LOG(error) << "notifications: an event does not parse: " << content.substr(0, 200);
        return {};
    }
    return filter::applyXml(event.get(), sub.filter.get(), LYD_PRINT_SHRINK);
}

/// NACM (RFC 8341 3.4.6): whether the session may receive the event `content`, by its type. An
/// event whose type cannot be read is withheld (never more permissive than the rules).
bool permitted(const ly_ctx* ctx, const SessionAccess& session, const nacm::Access& access,
               const std::string& content) {
    const auto type = notify::eventType(content);
    const lys_module* module =
        type ? ly_ctx_get_module_implemented_ns(ctx, std::string(type->ns).c_str()) : nullptr;
    if (!module) {
        NCS_LOG(error) << "notifications: an event of no known module is withheld: "
                       << content.substr(0, 200);
        return false;
    }
    return session.maySend(access, module->name, type->name);
}

/// RFC 8341 3.4.5 and 3.4.6 for an RFC 6470 netconf-config-change: each edit names a data node
/// by its path (keys included), so an edit whose target `access` may not read is left out. An
/// event that had edits and keeps none says nothing the user may know: "" (not sent). Other
/// events are returned as they are.
std::string readableEvent(const ly_ctx* ctx, const nacm::Access& access, const std::string& content) {
    const auto type = notify::eventType(content);
    if (!type || type->name != "netconf-config-change" || type->ns != kNcnNs) {
        return content;
    }
    Tree event = parseEvent(ctx, content);
    if (!event) {
        NCS_LOG(error) << "notifications: a config-change does not parse and is withheld: "
                       << content.substr(0, 200);
        return {};
    }
    std::size_t kept = 0;
    std::size_t dropped = 0;
    for (lyd_node *e = lyd_child(event.get()), *next = nullptr; e; e = next) {
        next = e->next;
        if (!e->schema || std::string_view(e->schema->name) != "edit") {
            continue;
        }
        const lyd_node* target = child(e, "target");
        if (target && access.readablePath(ctx, valueOf(target))) {
            ++kept;
        } else {
            lyd_free_tree(e);
            ++dropped;
        }
    }
    if (dropped == 0) {
        return content;
    }
    return kept > 0 ? printTree(event.get(), LYD_XML, LYD_PRINT_SHRINK) : std::string();
}

/// Appends one framed <notification> to `out`.
void appendNotification(std::string& out, bool base11, Clock::time_point time, const std::string& content) {
    std::string message(transport::kHeaderRoom, ' ');
    message += notify::notificationMessage(time, content);
    out += transport::frameInPlace(message,
                                   base11 ? transport::Framing::Chunked : transport::Framing::EndOfMessage);
}

std::string replayComplete() {
    return std::string("<replayComplete xmlns=\"") + kNmNs + "\"/>";
}

std::string notificationComplete() {
    return std::string("<notificationComplete xmlns=\"") + kNmNs + "\"/>";
}

} // namespace

Reply Server::opCreateSubscription(Request& r) {
    const lyd_node* rpc = r.op;
    Session& s = r.session;
    if (s.subscription) {
        // RFC 5277 2.1.1: a subscription lasts as long as its session.
        throw RpcError(ErrorTag::InUse, ErrorType::Protocol, "this session already has a subscription");
    }
    const std::string stream = valueOf(child(rpc, "stream"));
    if (!stream.empty() && stream != kStream) {
        throw RpcError::invalidValue("no stream " + stream + " (the server has NETCONF)", "stream");
    }
    auto sub = std::make_unique<EventSubscription>();
    sub->start = timeParameter(rpc, "startTime");
    sub->stop = timeParameter(rpc, "stopTime");
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
            throw YangError("cannot keep the filter", ctx_.get());
        }
        sub->filter.reset(copy);
        // A filter that cannot be evaluated is refused now, not at the first event.
        const Tree probe = parseEvent(ctx_.get(), notify::sessionStart({s.id, s.user, s.host}));
        try {
            filter::apply(probe.get(), sub->filter.get());
        } catch (const filter::Error& e) {
            throw RpcError::invalidValue(std::string("invalid filter: ") + e.what(), "filter");
        }
    }
    // Live events are queued from now on; the replay reads the log after this, so that every
    // event is either replayed or queued (deliverNotifications() drops what is both).
    auto conn = &s.connection();
    Session* session = &s;
    sub->live = notifications_->bus().subscribe(kQueueEvents, config_.notificationQueueBytes,
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

std::optional<std::chrono::system_clock::time_point> Server::subscriptionDeadline(const Session& s) const {
    return s.subscription ? s.subscription->stop : std::nullopt;
}

bool Server::deliverNotifications(Session& s) {
    if (!s.subscription) {
        return true;
    }
    EventSubscription& sub = *s.subscription;
    std::string out;
    bool ok = true;
    auto flush = [&] {
        if (!out.empty()) {
            ok = ok && s.connection().write(out);
            out.clear();
        }
    };
    std::uint64_t sent = 0;
    // The rules in force now decide, for every event sent now (replayed ones included).
    const auto access = s.access.current();
    auto send = [&](Clock::time_point time, const std::string& content, bool filter = true) {
        // replayComplete and notificationComplete are about the subscription: never filtered.
        if (filter && !access->permitsAllNotifications() &&
            !permitted(ctx_.get(), s.access, *access, content)) {
            return;
        }
        std::string readable;
        const std::string* shown = &content;
        if (filter && !access->permitsAllReads()) {
            readable = readableEvent(ctx_.get(), *access, content);
            if (readable.empty()) {
                return;
            }
            shown = &readable;
        }
        const std::string selected = filter ? filtered(ctx_.get(), sub, *shown) : *shown;
        if (selected.empty()) {
            return;
        }
        appendNotification(out, s.base11, time, selected);
        ++sent;
        if (out.size() >= kWriteBatch) {
            flush();
        }
    };
    bool complete = false;
    if (sub.replayPending) {
        sub.replayPending = false;
        sub.replayedThrough = notifications_->replay(
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
        notifications_->bus().unsubscribe(sub.live.get());
        s.subscription.reset();
        NCS_LOG(info) << "session " << s.id << ": subscription complete (stopTime reached)";
    }
    flush(); // may wait for a client that does not read: its queue then overflows and cuts it
    if (sent > 0) {
        s.outNotifications += sent;
        stats_.outNotifications += sent;
    }
    if (over || s.subscriberTooSlow) {
        NCS_LOG(warning)
            << "session " << s.id << " of " << s.user << ": its subscriber does not keep up (more than "
            << config_.notificationQueueBytes
            << " bytes of notifications pending): closing the session; it can replay from the log";
        return false;
    }
    return ok;
}

void Server::raiseSessionStart(const Session& s) {
    notifications_->raise(notify::sessionStart({s.id, s.user, s.host}));
}

void Server::raiseSessionEnd(const Session& s, TermReason reason) {
    notifications_->raise(notify::sessionEnd({s.id, s.user, s.host}, toString(reason), s.killedBy.load()));
}

} // namespace ncstore::netconfd
