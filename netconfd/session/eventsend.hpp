// Sending one event to one subscriber, for RFC 5277 and RFC 8639 subscriptions alike: what NACM
// lets the session see of it (RFC 8341 3.4.6: the event type; 3.4.5: the edits of a
// netconf-config-change it may read), what the subscription's filter selects, the framing and
// the writing.
#pragma once

#include "connection.hpp"
#include "events.hpp"
#include "sessionaccess.hpp"

#include "ncstore/yang.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ncstore::netconfd {

/// The event `content` as a libyang notification tree, or null when it does not parse.
Tree parseEvent(const ly_ctx* ctx, const std::string& content);

/// Why events cannot be filtered through `filterNode` (filter.hpp's Error), or nullopt: tried on
/// an event of the subscribing session itself, so that a bad filter is refused when the session
/// subscribes, not at the first event.
std::optional<std::string> eventFilterError(const ly_ctx* ctx, const lyd_node* filterNode,
                                            const notify::Actor& session);

/// What of event `content` the session is sent: NACM's view of it through `filterNode` (a
/// filter node as filter.hpp reads them; nullptr: no filter). "": the event is not sent.
std::string shownEvent(const ly_ctx* ctx, const SessionAccess& session, const nacm::Access& access,
                       const lyd_node* filterNode, const std::string& content);

/// The buffers an Outbox builds notifications in, kept by a subscribed session from one delivery
/// to the next: grown afresh for every delivery (one per commit under load), their allocations
/// and copies took a fifth of a subscriber session's CPU in B12. Session's thread only.
struct OutboxBuffers {
    std::string out;     ///< framed notifications not yet written
    std::string scratch; ///< the notification being framed
    bool inUse = false;  ///< an Outbox writes through them (one at a time)
};

/// The notifications one delivery writes to a session: each in its RFC 5277 envelope, framed as
/// the session speaks, written in batches of about 1 MiB, counted. What was not flushed is
/// dropped with it; buffers grown past kKeptBytes by a large notification (a replayed bulk
/// edit) are given back then, so that an idle subscriber holds little. One Outbox at a time per
/// buffers (a second one throws std::logic_error).
class Outbox {
public:
    static constexpr std::size_t kKeptBytes = 64u << 10;

    Outbox(transport::Connection& conn, bool base11, OutboxBuffers& buffers);
    ~Outbox();
    Outbox(const Outbox&) = delete;
    Outbox& operator=(const Outbox&) = delete;

    void add(std::chrono::system_clock::time_point eventTime, std::string_view content);
    /// Writes what is pending (waiting for a client that does not read, up to the write
    /// timeout); false once a write failed.
    bool flush();
    std::uint64_t sent() const { return sent_; }

private:
    transport::Connection& conn_;
    const bool base11_;
    OutboxBuffers& buf_;
    std::uint64_t sent_ = 0;
    bool ok_ = true;
};

} // namespace ncstore::netconfd
