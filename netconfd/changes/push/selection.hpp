// What part of a datastore a YANG-Push subscription follows (RFC 8641 selection filters):
// a datastore-subtree-filter or datastore-xpath-filter, or everything, seen through NACM.
//
// Promises:
//  - One filter, two uses: the data a push-update sends (readview: the same select-and-print as
//    get-config, NACM included) and the part of each change a push-change-update sends.
//  - A change is judged on itself: the changed node with its ancestors and their keys (its new
//    value for a create or replace, its old one for a delete). A subtree content match or an
//    XPath predicate on a sibling that did not change does not select it (the change set, not
//    the datastore, is what is filtered; so do sysrepo's on-change subscriptions).
//  - Cost: a filter made only of containment and selection nodes (subtree), or an XPath that is a
//    plain absolute path, is decided per change by comparing schema steps, with no tree built;
//    only a change above the selection (its value must be cut), other filters, and users with
//    NACM read limits build the change's small tree and filter it.
#pragma once

#include "filter.hpp"
#include "nacm.hpp"

#include "ncstore/changes.hpp"
#include "ncstore/yang.hpp"

#include <optional>
#include <string>
#include <vector>

namespace ncstore::netconfd::push {

class Selection {
public:
    /// Everything.
    Selection() = default;
    /// The selection of establish-/modify-subscription's `datastore-subtree-filter` (anydata)
    /// or `datastore-xpath-filter` (leaf) node `param`, copied (libyang checked the XPath's
    /// syntax and prefixes when it parsed the RPC).
    static Selection of(const lyd_node* param);

    /// The filter as the read path takes it (readview.hpp, filter.hpp); nullptr: everything.
    const lyd_node* filterNode() const { return holder_.get(); }

    /// What of one change a subscriber may see.
    struct Part {
        enum class Kind { None, Whole, Cut } kind = Kind::None;
        Tree forest;                    ///< Cut: the selected part of the change, with ancestors
        const lyd_node* node = nullptr; ///< Cut: the changed node in `forest`: the value to send
    };
    /// `access`: the subscriber's NACM rights (nullptr: may read everything).
    Part select(const ds::Change& c, const ly_ctx* ctx, const nacm::Access* access) const;

private:
    using Path = std::vector<filter::SelectedStep>;

    Tree holder_;
    /// The filter as schema paths, when it is nothing more (the fast path).
    std::optional<std::vector<Path>> paths_;
};

} // namespace ncstore::netconfd::push
