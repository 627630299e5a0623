// Sending one event to one subscriber, for RFC 5277 and RFC 8639 subscriptions alike: what NACM
// lets the session see of it (RFC 8341 3.4.6: the event type; 3.4.5: the edits of a
// netconf-config-change it may read), what the subscription's filter selects, the framing.
#pragma once

#include "access.hpp"

#include "ncstore/yang.hpp"

#include <chrono>
#include <string>

namespace ncstore::netconfd {

/// The event `content` as a libyang notification tree, or null when it does not parse.
Tree parseEvent(const ly_ctx* ctx, const std::string& content);

/// What of event `content` the session is sent: NACM's view of it through `filterNode` (a
/// filter node as filter.hpp reads them; nullptr: no filter). "": the event is not sent.
std::string shownEvent(const ly_ctx* ctx, const SessionAccess& session, const nacm::Access& access,
                       const lyd_node* filterNode, const std::string& content);

/// Appends one framed <notification> (RFC 5277 envelope) to `out`.
void appendNotification(std::string& out, bool base11, std::chrono::system_clock::time_point time,
                        const std::string& content);

} // namespace ncstore::netconfd
