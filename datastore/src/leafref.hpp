// Leafref checks by key lookups instead of libyang 2.1.30's XPath scan. Private to the datastore.
//
// libyang 2.1.30 resolves every leafref by evaluating its path as XPath over the data, which
// visits every instance of every list on the way: one check of
// /org-openroadm-device/interface/name reads all interfaces, so validating a ROADM with C
// roadm-connections (each referencing interfaces, each interface a circuit-pack and its port)
// costs O(C^2) (0.4 s per one-connection edit at C = 1024). The leafref paths real models use
// are simple: an absolute or relative chain of nodes whose list steps are filtered by key
// predicates "[key = current()/../leaf]", ending at a list's key. Those are answered with
// libyang's hashed key lookups (lyd_find_sibling_val), O(1) per list step.
//
// The accelerator swaps the type plugin of every require-instance leafref type of a context for
// a copy whose validate callback first tries that lookup; anything it cannot answer (a path shape
// it does not plan, a value not found) goes to libyang's own lyplg_type_validate_leafref, so a
// reference is only ever refused by libyang, with libyang's error. The compiled schema is public
// libyang data (lysc_type::plugin); the swap is undone when the accelerator is destroyed.
#pragma once

#include <libyang/libyang.h>

#include <atomic>
#include <cstdint>
#include <memory>

namespace ncstore::ds::detail {

class LeafrefAccelerator {
public:
    /// Plans and swaps every leafref of the implemented modules of `ctx`. `ctx` must not be
    /// recompiled (no module loaded or feature changed) while the accelerator lives.
    explicit LeafrefAccelerator(const ly_ctx* ctx);
    ~LeafrefAccelerator();
    LeafrefAccelerator(const LeafrefAccelerator&) = delete;
    LeafrefAccelerator& operator=(const LeafrefAccelerator&) = delete;

    struct Counters {
        std::uint64_t planned = 0;   // (leafref node) pairs answered by lookups when possible
        std::uint64_t hits = 0;      // checks answered by lookups
        std::uint64_t fallbacks = 0; // checks handed to libyang
    };
    Counters counters() const;

    /// True when `leaf` needs nothing outside the subtree of `entry` (a list, an ancestor of
    /// `leaf`) but the targets of its leafrefs: every require-instance leafref of its type is
    /// planned, its path is absolute, and its predicates read only nodes inside `entry`. Such a
    /// leaf can be checked in a copy of its entry, under an AbsoluteLeafrefRoot of the real data.
    bool absoluteWithin(const lysc_node* leaf, const lysc_node* entry) const;

    class Impl;

private:
    std::unique_ptr<Impl> impl_;
};

/// While it lives, absolute leafref paths checked on this thread (by an accelerated context)
/// resolve in `forest` instead of the forest of the node checked: a copy of one list entry is
/// then validated against the references of the whole datastore.
class AbsoluteLeafrefRoot {
public:
    explicit AbsoluteLeafrefRoot(const lyd_node* forest);
    ~AbsoluteLeafrefRoot();
    AbsoluteLeafrefRoot(const AbsoluteLeafrefRoot&) = delete;
    AbsoluteLeafrefRoot& operator=(const AbsoluteLeafrefRoot&) = delete;

private:
    const lyd_node* previous_;
};

} // namespace ncstore::ds::detail
