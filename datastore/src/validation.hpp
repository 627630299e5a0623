// Which validation an edit needs, decided from the compiled schema, so that validation follows
// the change and not the size of the tree (libyang 2.1.30 only validates whole trees: 56 ms at
// 100k interfaces for a one-entry edit). Private to the datastore.
//
// - A leaf whose value changes needs no validation beyond its type (checked when the edit was
//   parsed) when no must/when/leafref/unique anywhere reads it, it has no must/when itself and it
//   is no leafref or instance-identifier: "free" leaves, such as a device's status.
// - A record (an entry of a split list, see records.hpp) is "local" when its list has no
//   min/max-elements or unique and
//     - every constraint inside it reads only nodes inside it, except leafrefs with absolute
//       paths whose predicates read inside it (Open ROADM's interface -> circuit-pack/port):
//       those are resolved in the real data (leafref.hpp, AbsoluteLeafrefRoot);
//     - nothing outside it reads into it, except leafrefs ("referrers").
//     - constraints inside may also read the shell of its top-level node (records.hpp).
//   Creating or changing such an entry is checked by validating a copy of the entry alone, with
//   that shell when it is read (a `when` that would delete data in the copy sends the edit to
//   whole-tree validation).
//   Deleting it, or a node inside it, needs no check unless a referrer instance holds the value
//   of a deleted node that it may point to; changing a leaf that a referrer reads needs the
//   whole tree.
// - Anything else is validated the libyang way, whole tree (its leafrefs also by key lookups).
#pragma once

#include <libyang/libyang.h>

#include "leafref.hpp"

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace ncstore::ds::detail {

class ValidationPlanner {
public:
    /// `leafrefs`, when given, must outlive the planner.
    explicit ValidationPlanner(const ly_ctx* ctx, const LeafrefAccelerator* leafrefs = nullptr);

    bool leafIsFree(const lysc_node* leaf) const;
    bool recordIsLocal(const lysc_node* list);
    /// For a local record list: whether constraints inside its entries read the shell of their
    /// top-level node (Open ROADM: `when` on info/node-type), which their copy must then carry.
    bool recordReadsShell(const lysc_node* list);
    /// For a local record list: whether a `when` inside its entries may delete data.
    bool recordHasWhen(const lysc_node* list);
    /// The leafrefs outside the record of `node` that read it (see above); empty for most.
    const std::vector<const lysc_node*>& referrers(const lysc_node* node) const;
    /// Appends (schema, value) of every node in `subtree` that a referrer may point to.
    void collectReferenced(const lyd_node* subtree,
                           std::vector<std::pair<const lysc_node*, std::string>>& out) const;
    /// Whether an instance of a referrer of the `deleted` nodes in `forest` holds one of their
    /// values: it may now point to nothing, which only whole-tree validation can tell.
    bool referrersMayDangle(const lyd_node* forest,
                            const std::vector<std::pair<const lysc_node*, std::string>>& deleted) const;

private:
    enum class Kind { Leafref, Other };
    struct Ref {
        const lysc_node* owner; // the node the constraint belongs to
        const lysc_node* atom;  // a node it reads (nullptr: unknown)
        Kind kind;
    };

    void collect(const lysc_node* node);
    void addAtoms(const lysc_node* owner, const lysc_node* ctxNode, const lyxp_expr* expr,
                  const lysc_prefix* prefixes, Kind kind);
    void addTypeAtoms(const lysc_node* owner, const lysc_type* type);
    bool refIsLocalTo(const Ref& ref, const lysc_node* list, bool& readsShell) const;

    const LeafrefAccelerator* leafrefs_;
    std::vector<Ref> refs_;
    std::unordered_set<const lysc_node*> referenced_;
    std::unordered_map<const lysc_node*, std::vector<const lysc_node*>> referrers_;
    std::unordered_set<const lysc_node*> holdsReferenced_; // referenced nodes and their ancestors
    std::unordered_set<const lysc_node*> constrained_;     // has must/when/leafref/inst-id itself
    std::unordered_set<const lysc_node*> withWhen_;
    bool instanceIdentifiers_ = false;
    struct Locality {
        bool local;
        bool readsShell;
        bool hasWhen;
    };
    const Locality& locality(const lysc_node* list);
    std::unordered_map<const lysc_node*, Locality> localCache_;
    std::vector<const lysc_node*> recordLists_;
};

/// Validates the records `roots` of `tree` on their own (see above): copies of them, with their
/// container chains (and the shells of their top-level nodes, when read), in one forest. False
/// when that fails or a record is gone: the caller then validates the whole tree, whose verdict
/// is the real one. With `addDefaults`, adds their default nodes in `tree` when they pass.
bool validateLocally(const ly_ctx* ctx, ValidationPlanner& planner, lyd_node* tree,
                     const std::vector<lyd_node*>& roots, bool addDefaults);

} // namespace ncstore::ds::detail
