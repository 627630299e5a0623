// The content of YANG-Push (RFC 8641) and dynamic subscription (RFC 8639) notifications:
// push-change-update as a YANG Patch (RFC 8072) made from a durable change set (ncstore/changes.hpp),
// push-update, and the subscription state notifications, printed straight to XML text.
//
// Promises:
//  - The patch is the change set itself, in its order: one edit per change (create or insert,
//    replace, delete, move), never a comparison of trees. Applying its edits in order to the
//    selected data as it was before the commit gives the selected data after it.
//  - Targets and points are RESTCONF data-resource paths (RFC 8040 3.5.3: module-qualified where
//    the module changes, list keys as "=v1,v2", every reserved character percent-encoded).
//  - Values are printed by libyang from the change set's own nodes (XML namespaces and
//    identityref prefixes as libyang writes them); default nodes inside a created subtree are
//    left out, as in every reply of basic mode explicit.
//  - Pure functions, safe on any thread; EditCache is thread-safe.
//  - Cost: linear in what they print. EditCache prints each change set's edits once however many
//    subscribers send them whole.
#pragma once

#include "ncstore/changes.hpp"

#include <libyang/libyang.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace ncstore::netconfd::push {

inline constexpr const char* kSnNs = "urn:ietf:params:xml:ns:yang:ietf-subscribed-notifications";
inline constexpr const char* kYpNs = "urn:ietf:params:xml:ns:yang:ietf-yang-push";

/// The RESTCONF data-resource path of a change set's path ("/m:a/b[k='v']" -> "/m:a/b=v").
/// Throws notify::PathError on a path it cannot read.
std::string restconfPath(std::string_view path);

/// RFC 8641 change-type of a change ("create", "delete", "insert", "move", "replace"): what
/// excluded-change names.
const char* changeType(const ds::Change& c);

/// One YANG Patch <edit> for change `c` with id `editId`. `value`: the node to send as its value
/// (a selection's part of the change); nullptr: the change's own new value.
std::string edit(const ds::Change& c, std::string_view editId, const lyd_node* value, const ly_ctx* ctx);

/// A <push-change-update> for subscription `id` around `edits` (concatenated edit() texts).
std::string pushChangeUpdate(std::uint32_t id, std::string_view patchId, std::string_view edits);
/// A <push-update> for subscription `id` with `contents` (the selected data, XML) as its
/// datastore-contents.
std::string pushUpdate(std::uint32_t id, std::string_view contents);
/// <subscription-terminated> with `reason`, an identity written "module:name".
std::string subscriptionTerminated(std::uint32_t id, std::string_view reason);
/// <subscription-suspended> with `reason`, an identity written "module:name".
std::string subscriptionSuspended(std::uint32_t id, std::string_view reason);
/// <replay-completed>.
std::string replayCompleted(std::uint32_t id);

/// The edit() texts of whole change sets (every change with its own value), made once for all
/// the subscribers that send them, kept for the few most recent change sets.
class EditCache {
public:
    explicit EditCache(std::size_t keep = 16) : keep_(keep) {}
    /// The edits of `changes` (index i: change i, edit-id editId(changes, i)), made on the first
    /// call.
    std::shared_ptr<const std::vector<std::string>> edits(const ds::ChangeSet& changes, const ly_ctx* ctx);
    /// The edit-id of change `i`: "<commit id>.<i + 1>", unique in a patch that joins commits.
    static std::string editId(const ds::ChangeSet& changes, std::size_t i) {
        return std::to_string(changes.commitId) + "." + std::to_string(i + 1);
    }

private:
    struct Entry {
        std::once_flag once;
        std::shared_ptr<const std::vector<std::string>> edits;
    };
    const std::size_t keep_;
    std::mutex mutex_;
    std::map<std::uint64_t, std::shared_ptr<Entry>> entries_; ///< by commit id
};

} // namespace ncstore::netconfd::push
