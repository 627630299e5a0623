// The content of the notifications ncstored sends: RFC 6470 (ietf-netconf-notifications) events
// and the RFC 5277 envelope, printed straight to XML text.
//
// Promises:
//  - Pure functions of their arguments (and the context's module namespaces): no I/O, no state,
//    safe on any thread, safe to fuzz.
//  - Every name and value a client or a data node controls is XML-escaped; instance-identifiers
//    are printed in their XML encoding (RFC 7950 9.13.2: every node name qualified, here with its
//    module name as prefix, declared on the element that carries the value).
//  - Cost: linear in the size of what they describe (one pass over the change set); they are
//    called where a commit is made durable, so they must stay cheap.
#pragma once

#include "ncstore/changes.hpp"

#include <libyang/libyang.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ncstore::netconfd::notify {

inline constexpr const char* kNotificationNs = "urn:ietf:params:xml:ns:netconf:notification:1.0";
inline constexpr const char* kBaseNotificationsNs = "urn:ietf:params:xml:ns:yang:ietf-netconf-notifications";

/// RFC 3339 date-and-time in UTC with microseconds ("2026-12-01T06:40:00.123456Z").
std::string dateAndTime(std::chrono::system_clock::time_point t);
/// dateAndTime(t), appended to `out`: no allocation of its own, no lock (every notification sent
/// to every subscriber carries one).
void appendDateAndTime(std::string& out, std::chrono::system_clock::time_point t);
/// The inverse; nullopt when `text` is not a yang:date-and-time.
std::optional<std::chrono::system_clock::time_point> parseDateAndTime(std::string_view text);

class PathError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// One step of a data path as change sets print them ("/m:a/b[k='v']/n:c"), views into it.
struct PathStep {
    std::string_view module; ///< the node's module, inherited from the step before when not written
    std::string_view name;
    struct Predicate {
        std::string_view module;  ///< the key's module
        std::string_view key;     ///< a key's name; "." for a leaf-list value; digits for a position
        std::string_view literal; ///< the value with its quotes ('...' or "..."); "" for a position
    };
    std::vector<Predicate> predicates;
};
/// The steps of `path`. Throws PathError on a path it cannot read.
std::vector<PathStep> splitPath(std::string_view path);
/// The value of a quoted literal of splitPath(): without its quotes (nothing is escaped in it).
inline std::string_view unquoted(std::string_view literal) {
    return literal.size() >= 2 ? literal.substr(1, literal.size() - 2) : std::string_view();
}

/// Appends `<element xmlns:m="ns"...>/m:a/m:b[m:k='v']</element>`: the XML encoding of the
/// instance-identifier `path`, given as libyang prints data paths ("/m:a/b[k='v']/n:c", module
/// names as prefixes, only where the module changes). Throws PathError on a path it cannot read
/// or a module the context does not have.
void appendInstanceIdentifier(std::string& out, const char* element, std::string_view path,
                              const ly_ctx* ctx);

/// Who made a change or a session, as RFC 6470's changed-by and session events name them.
struct Actor {
    std::uint32_t session = 0; ///< 0: the server itself
    std::string user;
    std::string host; ///< the client's address; left out when it is not an IP address
};

/// RFC 6470 netconf-config-change for one durable change set (one edit per change).
std::string configChange(const ds::ChangeSet& changes, const Actor& by, const ly_ctx* ctx);
/// RFC 6470 netconf-session-start.
std::string sessionStart(const Actor& session);
/// RFC 6470 netconf-session-end; `killedBy` only with reason "killed".
std::string sessionEnd(const Actor& session, const std::string& reason, std::uint32_t killedBy);

/// RFC 6470 netconf-confirmed-commit; `event`: start, cancel, timeout, extend or complete;
/// `timeout` (seconds) is printed with start and extend only.
std::string confirmedCommit(const Actor& session, const std::string& event,
                            std::optional<std::uint32_t> timeout);

/// The event type of a notification's content: its top element's namespace and local name.
struct EventType {
    std::string_view ns;
    std::string_view name;
};
/// Reads the start tag of `content` (as the functions above print it); nullopt when it is not an
/// element with a namespace.
std::optional<EventType> eventType(std::string_view content);

/// The whole <notification> message (RFC 5277 section 4) around `content`.
std::string notificationMessage(std::chrono::system_clock::time_point eventTime, std::string_view content);
/// notificationMessage(), appended to `out`.
void appendNotificationMessage(std::string& out, std::chrono::system_clock::time_point eventTime,
                               std::string_view content);

} // namespace ncstore::netconfd::notify
