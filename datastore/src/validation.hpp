// Which validation an edit needs, decided from the compiled schema, so that validation follows
// the change and not the size of the tree (libyang 2.1.30 only validates whole trees: 56 ms at
// 100k interfaces for a one-entry edit). Private to the datastore.
//
// - A leaf whose value changes needs no validation beyond its type (checked when the edit was
//   parsed) when no must/when/leafref/unique anywhere reads it, it has no must/when itself and it
//   is no leafref or instance-identifier: "free" leaves, such as a device's status.
// - A record (an entry of a split list, see records.hpp) is "local" when every constraint inside
//   it reads only nodes inside it, no constraint outside reads into it, and its list has no
//   min/max-elements or unique and no when inside. Creating or changing such an entry is checked by
//   validating a copy of the entry alone; deleting it needs no check.
// - Anything else is validated the libyang way, whole tree.
#pragma once

#include <libyang/libyang.h>

#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace ncstore::ds::detail {

class ValidationPlanner {
public:
    explicit ValidationPlanner(const ly_ctx* ctx);

    bool leafIsFree(const lysc_node* leaf) const;
    bool recordIsLocal(const lysc_node* list);

private:
    void collect(const lysc_node* node);
    void addAtoms(const lysc_node* owner, const lysc_node* ctxNode, const lyxp_expr* expr,
                  const lysc_prefix* prefixes);
    void addTypeAtoms(const lysc_node* owner, const lysc_type* type);

    std::vector<std::pair<const lysc_node*, const lysc_node*>> refs_; // (constraint owner, node read)
    std::unordered_set<const lysc_node*> referenced_;
    std::unordered_set<const lysc_node*> constrained_; // has must/when/leafref/inst-id itself
    bool instanceIdentifiers_ = false;
    std::unordered_map<const lysc_node*, bool> localCache_;
};

} // namespace ncstore::ds::detail
