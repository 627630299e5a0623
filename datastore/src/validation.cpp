#include "validation.hpp"

#include "records.hpp"
#include "trees.hpp"

#include "ncstore/log.hpp"
#include "ncstore/yang.hpp"

#include <algorithm>
#include <functional>

namespace ncstore::ds::detail {

namespace {

/// The list whose entries are records holding `node` (records.hpp's cutting rule, on the
/// schema): the topmost list, when it is ordered-by-system and only containers are above it.
const lysc_node* recordListOf(const lysc_node* node) {
    const lysc_node* list = nullptr;
    for (const lysc_node* n = node; n; n = lysc_data_parent(n)) {
        if (n->nodetype == LYS_LIST) {
            list = n;
        }
    }
    if (!list || (list->flags & LYS_ORDBY_USER)) {
        return nullptr;
    }
    for (const lysc_node* p = lysc_data_parent(list); p; p = lysc_data_parent(p)) {
        if (p->nodetype != LYS_CONTAINER) {
            return nullptr;
        }
    }
    return list;
}

/// The record that holds `node`, as a schema node: its record list, else its top-level node.
const lysc_node* recordSchemaOf(const lysc_node* node) {
    if (const lysc_node* list = recordListOf(node)) {
        return list;
    }
    const lysc_node* top = node;
    while (lysc_data_parent(top)) {
        top = lysc_data_parent(top);
    }
    return top;
}

/// Calls `fn` for every data instance of `schema` in `forest`.
void forEachInstance(const lyd_node* forest, const lysc_node* schema,
                     const std::function<void(const lyd_node*)>& fn) {
    std::vector<const lysc_node*> chain;
    for (const lysc_node* s = schema; s; s = lysc_data_parent(s)) {
        chain.push_back(s);
    }
    std::function<void(const lyd_node*, std::size_t)> down = [&](const lyd_node* first, std::size_t level) {
        const lysc_node* s = chain[level];
        lyd_node* found = nullptr;
        if (!first || lyd_find_sibling_val(first, s, nullptr, 0, &found) != LY_SUCCESS || !found) {
            return;
        }
        // Instances of one schema node are adjacent siblings.
        for (const lyd_node* n = found; n && n->schema == s; n = n->next) {
            if (level == 0) {
                fn(n);
            } else {
                down(lyd_child(n), level - 1);
            }
        }
    };
    if (forest) {
        down(lyd_first_sibling(forest), chain.size() - 1);
    }
}

} // namespace

ValidationPlanner::ValidationPlanner(const ly_ctx* ctx, const LeafrefAccelerator* leafrefs)
    : leafrefs_(leafrefs) {
    uint32_t idx = 0;
    const lys_module* mod = nullptr;
    while ((mod = ly_ctx_get_module_iter(ctx, &idx))) {
        if (!mod->implemented || !mod->compiled) {
            continue;
        }
        for (const lysc_node* top = mod->compiled->data; top; top = top->next) {
            collect(top);
        }
    }
    for (const Ref& ref : refs_) {
        referenced_.insert(ref.atom);
        if (ref.kind == Kind::Leafref && ref.atom && !schemaWithin(ref.owner, recordSchemaOf(ref.atom))) {
            auto& owners = referrers_[ref.atom];
            if (std::find(owners.begin(), owners.end(), ref.owner) == owners.end()) {
                owners.push_back(ref.owner);
            }
            for (const lysc_node* s = ref.atom; s; s = lysc_data_parent(s)) {
                holdsReferenced_.insert(s);
            }
        }
    }
    // Decided now, so that the start-up log says which lists are validated whole-tree and why.
    for (const lysc_node* list : recordLists_) {
        locality(list);
    }
}

const std::vector<const lysc_node*>& ValidationPlanner::referrers(const lysc_node* node) const {
    static const std::vector<const lysc_node*> none;
    auto it = referrers_.find(node);
    return it == referrers_.end() ? none : it->second;
}

void ValidationPlanner::collectReferenced(const lyd_node* subtree,
                                          std::vector<std::pair<const lysc_node*, std::string>>& out) const {
    if (!subtree->schema || !holdsReferenced_.count(subtree->schema)) {
        return;
    }
    if (subtree->schema->nodetype & (LYS_LEAF | LYS_LEAFLIST)) {
        if (referrers_.count(subtree->schema)) {
            out.emplace_back(subtree->schema, lyd_get_value(subtree));
        }
        return;
    }
    for (const lyd_node* child = lyd_child(subtree); child; child = child->next) {
        collectReferenced(child, out);
    }
}

bool ValidationPlanner::referrersMayDangle(
    const lyd_node* forest, const std::vector<std::pair<const lysc_node*, std::string>>& deleted) const {
    std::unordered_map<const lysc_node*, std::unordered_set<std::string>> values; // by referrer
    for (const auto& [atom, value] : deleted) {
        for (const lysc_node* owner : referrers(atom)) {
            values[owner].insert(value);
        }
    }
    bool found = false;
    for (const auto& [owner, ownerValues] : values) {
        // clang 14 (the fuzz build) cannot capture a structured binding.
        const auto& set = ownerValues;
        forEachInstance(forest, owner,
                        [&](const lyd_node* n) { found = found || set.count(lyd_get_value(n)); });
        if (found) {
            return true;
        }
    }
    return false;
}

void ValidationPlanner::addAtoms(const lysc_node* owner, const lysc_node* ctxNode, const lyxp_expr* expr,
                                 const lysc_prefix* prefixes, Kind kind) {
    ly_set* raw = nullptr;
    if (lys_find_expr_atoms(ctxNode, owner->module, expr, prefixes, 0, &raw) != LY_SUCCESS) {
        // Unknown reach: make the owner non-local by a reference to nowhere in particular.
        refs_.push_back({owner, nullptr, kind});
        return;
    }
    Set set{raw};
    for (uint32_t i = 0; i < set->count; ++i) {
        refs_.push_back({owner, set->snodes[i], kind});
    }
}

void ValidationPlanner::addTypeAtoms(const lysc_node* owner, const lysc_type* type) {
    if (type->basetype == LY_TYPE_LEAFREF) {
        const auto* lref = reinterpret_cast<const lysc_type_leafref*>(type);
        constrained_.insert(owner);
        if (lref->require_instance) {
            addAtoms(owner, owner, lref->path, lref->prefixes, Kind::Leafref);
        }
    } else if (type->basetype == LY_TYPE_INST) {
        constrained_.insert(owner);
        instanceIdentifiers_ = true;
    } else if (type->basetype == LY_TYPE_UNION) {
        const auto* u = reinterpret_cast<const lysc_type_union*>(type);
        LY_ARRAY_COUNT_TYPE i;
        LY_ARRAY_FOR(u->types, i) {
            addTypeAtoms(owner, u->types[i]);
        }
    }
}

void ValidationPlanner::collect(const lysc_node* node) {
    const lysc_node* n = node;
    if (!(n->flags & LYS_CONFIG_W) && !(n->nodetype & (LYS_CHOICE | LYS_CASE))) {
        return; // state data is never validated here (LYD_VALIDATE_NO_STATE)
    }
    if (n->nodetype == LYS_LIST && recordListOf(n) == n) {
        recordLists_.push_back(n);
    }
    {
        const lysc_must* musts = lysc_node_musts(n);
        LY_ARRAY_COUNT_TYPE i;
        LY_ARRAY_FOR(musts, i) {
            constrained_.insert(n);
            addAtoms(n, n, musts[i].cond, musts[i].prefixes, Kind::Other);
        }
        lysc_when** whens = lysc_node_when(n);
        LY_ARRAY_FOR(whens, i) {
            constrained_.insert(n);
            withWhen_.insert(n);
            addAtoms(n, whens[i]->context, whens[i]->cond, whens[i]->prefixes, Kind::Other);
        }
        if (n->nodetype & (LYS_LEAF | LYS_LEAFLIST)) {
            addTypeAtoms(n, reinterpret_cast<const lysc_node_leaf*>(n)->type);
        }
        if (n->nodetype == LYS_LIST) {
            const auto* list = reinterpret_cast<const lysc_node_list*>(n);
            LY_ARRAY_FOR(list->uniques, i) {
                LY_ARRAY_COUNT_TYPE j;
                LY_ARRAY_FOR(list->uniques[i], j) {
                    refs_.push_back(
                        {n, reinterpret_cast<const lysc_node*>(list->uniques[i][j]), Kind::Other});
                }
            }
        }
    }
    for (const lysc_node* child = lysc_node_child(node); child; child = child->next) {
        collect(child);
    }
}

bool ValidationPlanner::leafIsFree(const lysc_node* leaf) const {
    return leaf && leaf->nodetype == LYS_LEAF && !(leaf->flags & LYS_KEY) && !referenced_.count(leaf) &&
           !constrained_.count(leaf);
}

bool ValidationPlanner::refIsLocalTo(const Ref& ref, const lysc_node* list, bool& readsShell) const {
    if (!ref.atom) {
        return false; // unknown reach
    }
    const bool ownerInside = schemaWithin(ref.owner, list);
    const bool atomInside = schemaWithin(ref.atom, list);
    if (ownerInside == atomInside) {
        return true;
    }
    const lysc_node* listParent = lysc_data_parent(list);
    if (ownerInside && listParent && !recordListOf(ref.atom) &&
        recordSchemaOf(ref.atom) == recordSchemaOf(listParent)) {
        readsShell = true;
        return true;
    }
    // Leafrefs are resolved against the real data (AbsoluteLeafrefRoot), and deleted targets are
    // looked for among referrers; both need paths whose predicates stay in the owner's record.
    return ref.kind == Kind::Leafref && leafrefs_ &&
           leafrefs_->absoluteWithin(ref.owner, recordSchemaOf(ref.owner));
}

const ValidationPlanner::Locality& ValidationPlanner::locality(const lysc_node* list) {
    auto it = localCache_.find(list);
    if (it != localCache_.end()) {
        return it->second;
    }
    const auto* l = reinterpret_cast<const lysc_node_list*>(list);
    Locality result{!instanceIdentifiers_ && l->min == 0 && l->max == UINT32_MAX &&
                        !LY_ARRAY_COUNT(l->uniques),
                    false, false};
    for (const lysc_node* n : withWhen_) {
        result.hasWhen = result.hasWhen || schemaWithin(n, list);
    }
    if (!result.local) {
        NCS_LOG(debug) << "datastore: entries of " << list->name
                       << " are validated whole-tree (min/max-elements, unique or instance-identifiers)";
    }
    for (const Ref& ref : refs_) {
        if (!result.local) {
            break;
        }
        result.local = refIsLocalTo(ref, list, result.readsShell);
        if (!result.local) {
            NCS_LOG(debug) << "datastore: entries of " << list->name
                           << " are validated whole-tree: " << ref.owner->name << " reads "
                           << (ref.atom ? ref.atom->name : "unknown nodes");
        }
    }
    return localCache_.emplace(list, result).first->second;
}

bool ValidationPlanner::recordIsLocal(const lysc_node* list) {
    return list && list->nodetype == LYS_LIST && recordListOf(list) == list && locality(list).local;
}

bool ValidationPlanner::recordReadsShell(const lysc_node* list) {
    return recordIsLocal(list) && locality(list).readsShell;
}

bool ValidationPlanner::recordHasWhen(const lysc_node* list) {
    return recordIsLocal(list) && locality(list).hasWhen;
}

namespace {

/// The copy, in the forest `copy`, of the parent of the split entry `record` (made, with its
/// chain, when missing); nullptr on failure.
lyd_node* copyParentChain(const ly_ctx* ctx, Tree& copy, const lyd_node* record) {
    const std::string parentPath = pathOf(lyd_parent(record));
    lyd_node* parent = nullptr;
    if (copy && lyd_find_path(copy.get(), parentPath.c_str(), 0, &parent) == LY_SUCCESS && parent) {
        return parent;
    }
    lyd_node* created = nullptr;
    RawTree raw(copy);
    if (lyd_new_path2(raw.get(), ctx, parentPath.c_str(), nullptr, 0, LYD_ANYDATA_STRING, 0, &created,
                      &parent) != LY_SUCCESS) {
        return nullptr;
    }
    if (!raw.get() && created) {
        while (lyd_parent(created)) {
            created = lyd_parent(created);
        }
        raw.ptr()[0] = created;
    }
    return parent;
}

} // namespace

/// Validates the records on their own: copies of them, with their container chains (and the
/// shells of their top-level nodes, when read), in one forest. False when that fails or a
/// record is gone: the caller then validates the whole tree, whose verdict is the real one.
bool validateLocally(const ly_ctx* ctx, ValidationPlanner& planner, lyd_node* tree,
                     const std::vector<lyd_node*>& roots, bool addDefaults) {
    Tree copy;
    std::unordered_set<const lyd_node*> shellsCopied;
    bool whens = false;
    for (const lyd_node* root : roots) {
        whens = whens || planner.recordHasWhen(root->schema);
        const lyd_node* top = root;
        while (lyd_parent(top)) {
            top = lyd_parent(top);
        }
        if (planner.recordReadsShell(root->schema) && shellsCopied.insert(top).second) {
            Tree shell = copyRecordShell(top);
            if (!copy) {
                copy = std::move(shell);
            } else if (lyd_insert_sibling(copy.get(), shell.get(), nullptr) == LY_SUCCESS) {
                shell.release();
            } else {
                return false;
            }
        }
    }
    std::unordered_map<const lyd_node*, lyd_node*> parents; // original -> copy
    for (const lyd_node* root : roots) {
        lyd_node*& parent = parents[lyd_parent(root)];
        if (!parent) {
            parent = copyParentChain(ctx, copy, root);
        }
        if (!parent || lyd_dup_single(root, reinterpret_cast<lyd_node_inner*>(parent), LYD_DUP_RECURSIVE,
                                      nullptr) != LY_SUCCESS) {
            return false;
        }
    }
    if (copy) {
        RawTree raw(copy);
        lyd_node* diff = nullptr;
        LY_ERR rc = LY_SUCCESS;
        {
            AbsoluteLeafrefRoot references(tree);
            // The diff, which costs, serves only to see what a `when` deleted.
            rc = lyd_validate_all(raw.ptr(), ctx, kValidateOpts, whens ? &diff : nullptr);
        }
        Tree diffOwner{diff};
        if (rc != LY_SUCCESS || deletesData(diff)) {
            return false; // a `when` deleting data must be found in the real tree
        }
    }
    if (addDefaults) {
        for (lyd_node* root : roots) {
            if (lyd_new_implicit_tree(root, LYD_IMPLICIT_NO_STATE, nullptr) != LY_SUCCESS) {
                return false;
            }
        }
    }
    return true;
}

} // namespace ncstore::ds::detail
