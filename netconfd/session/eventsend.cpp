// Sending one event to one subscriber: NACM, the subscription's filter, the framing.
#include "eventsend.hpp"

#include "ncstore/log.hpp"

#include "events.hpp"
#include "filter.hpp"
#include "framing.hpp"

#include <stdexcept>

namespace ncstore::netconfd {

namespace {

constexpr std::string_view kNcnNs = "urn:ietf:params:xml:ns:yang:ietf-netconf-notifications";
// Notifications written to the connection in one go.
constexpr std::size_t kWriteBatch = 1u << 20;

/// What of `content` the filter selects ("": nothing, the event is not sent).
std::string filtered(const ly_ctx* ctx, const lyd_node* filterNode, const std::string& content) {
    if (!filterNode) {
        return content;
    }
    const Tree event = parseEvent(ctx, content);
    if (!event) {
        NCS_LOG(error) << "notifications: an event does not parse: " << content.substr(0, 200);
        return {};
    }
    return filter::applyXml(event.get(), filterNode, LYD_PRINT_SHRINK);
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
        lyd_node* target = nullptr;
        if (lyd_find_path(e, "target", 0, &target) == LY_SUCCESS &&
            access.readablePath(ctx, lyd_get_value(target))) {
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

} // namespace

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

std::optional<std::string> eventFilterError(const ly_ctx* ctx, const lyd_node* filterNode,
                                            const notify::Actor& session) {
    const Tree probe = parseEvent(ctx, notify::sessionStart(session));
    try {
        filter::apply(probe.get(), filterNode);
    } catch (const filter::Error& e) {
        return std::string("invalid filter: ") + e.what();
    }
    return std::nullopt;
}

std::string shownEvent(const ly_ctx* ctx, const SessionAccess& session, const nacm::Access& access,
                       const lyd_node* filterNode, const std::string& content) {
    if (!access.permitsAllNotifications() && !permitted(ctx, session, access, content)) {
        return {};
    }
    if (!access.permitsAllReads()) {
        const std::string readable = readableEvent(ctx, access, content);
        return readable.empty() ? readable : filtered(ctx, filterNode, readable);
    }
    return filtered(ctx, filterNode, content);
}

Outbox::Outbox(transport::Connection& conn, bool base11, OutboxBuffers& buffers)
    : conn_(conn), base11_(base11), buf_(buffers) {
    if (buf_.inUse) {
        throw std::logic_error("two notification outboxes share one session's buffers");
    }
    buf_.inUse = true; // out is empty: the Outbox before this one emptied it as it ended
}

Outbox::~Outbox() {
    buf_.inUse = false;
    buf_.out.clear();
    for (std::string* b : {&buf_.out, &buf_.scratch}) {
        if (b->capacity() > kKeptBytes) {
            std::string().swap(*b);
        }
    }
}

/// Appends one framed <notification> to what is pending.
void Outbox::add(std::chrono::system_clock::time_point eventTime, std::string_view content) {
    buf_.scratch.assign(transport::kHeaderRoom, ' ');
    notify::appendNotificationMessage(buf_.scratch, eventTime, content);
    buf_.out += transport::frameInPlace(buf_.scratch, base11_ ? transport::Framing::Chunked
                                                              : transport::Framing::EndOfMessage);
    ++sent_;
    if (buf_.out.size() >= kWriteBatch) {
        flush();
    }
}

bool Outbox::flush() {
    if (!buf_.out.empty()) {
        ok_ = ok_ && conn_.write(buf_.out);
        buf_.out.clear();
    }
    return ok_;
}

} // namespace ncstore::netconfd
