// Sending one event to one subscriber, for RFC 5277 and RFC 8639 subscriptions alike: what NACM
// lets the session see of it (RFC 8341 3.4.6: the event type; 3.4.5: the edits of a
// netconf-config-change it may read), what the subscription's filter selects, the framing and
// the writing.
#pragma once

#include "access.hpp"
#include "events.hpp"
#include "ssh.hpp"

#include "ncstore/yang.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

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

/// The notifications one delivery writes to a session: each in its RFC 5277 envelope, framed as
/// the session speaks, written in batches of about 1 MiB, counted.
class Outbox {
public:
    Outbox(transport::SshConnection& conn, bool base11) : conn_(conn), base11_(base11) {}
    void add(std::chrono::system_clock::time_point eventTime, const std::string& content);
    /// Writes what is pending (waiting for a client that does not read, up to the write
    /// timeout); false once a write failed.
    bool flush();
    std::uint64_t sent() const { return sent_; }

private:
    transport::SshConnection& conn_;
    const bool base11_;
    std::string out_;
    std::string scratch_;
    std::uint64_t sent_ = 0;
    bool ok_ = true;
};

} // namespace ncstore::netconfd
