#include "validation.hpp"

#include "ncstore/yang.hpp"

namespace ncstore::ds::detail {

namespace {

bool isInsideOrSelf(const lysc_node* node, const lysc_node* root) {
    for (const lysc_node* n = node; n; n = n->parent) {
        if (n == root) {
            return true;
        }
    }
    return false;
}

} // namespace

ValidationPlanner::ValidationPlanner(const ly_ctx* ctx) {
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
    for (const auto& [owner, atom] : refs_) {
        referenced_.insert(atom);
    }
}

void ValidationPlanner::addAtoms(const lysc_node* owner, const lysc_node* ctxNode, const lyxp_expr* expr,
                                 const lysc_prefix* prefixes) {
    ly_set* raw = nullptr;
    if (lys_find_expr_atoms(ctxNode, owner->module, expr, prefixes, 0, &raw) != LY_SUCCESS) {
        // Unknown reach: make the owner non-local by a reference to nowhere in particular.
        refs_.emplace_back(owner, nullptr);
        return;
    }
    Set set{raw};
    for (uint32_t i = 0; i < set->count; ++i) {
        refs_.emplace_back(owner, set->snodes[i]);
    }
}

void ValidationPlanner::addTypeAtoms(const lysc_node* owner, const lysc_type* type) {
    if (type->basetype == LY_TYPE_LEAFREF) {
        const auto* lref = reinterpret_cast<const lysc_type_leafref*>(type);
        constrained_.insert(owner);
        addAtoms(owner, owner, lref->path, lref->prefixes);
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
    {
        const lysc_must* musts = lysc_node_musts(n);
        LY_ARRAY_COUNT_TYPE i;
        LY_ARRAY_FOR(musts, i) {
            constrained_.insert(n);
            addAtoms(n, n, musts[i].cond, musts[i].prefixes);
        }
        lysc_when** whens = lysc_node_when(n);
        LY_ARRAY_FOR(whens, i) {
            constrained_.insert(n);
            addAtoms(n, whens[i]->context, whens[i]->cond, whens[i]->prefixes);
        }
        if (n->nodetype & (LYS_LEAF | LYS_LEAFLIST)) {
            addTypeAtoms(n, reinterpret_cast<const lysc_node_leaf*>(n)->type);
        }
        if (n->nodetype == LYS_LIST) {
            const auto* list = reinterpret_cast<const lysc_node_list*>(n);
            LY_ARRAY_FOR(list->uniques, i) {
                LY_ARRAY_COUNT_TYPE j;
                LY_ARRAY_FOR(list->uniques[i], j) {
                    refs_.emplace_back(n, reinterpret_cast<const lysc_node*>(list->uniques[i][j]));
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

bool ValidationPlanner::recordIsLocal(const lysc_node* list) {
    if (!list || list->nodetype != LYS_LIST) {
        return false;
    }
    auto it = localCache_.find(list);
    if (it != localCache_.end()) {
        return it->second;
    }
    const auto* l = reinterpret_cast<const lysc_node_list*>(list);
    bool local = !instanceIdentifiers_ && l->min == 0 && l->max == UINT32_MAX && !LY_ARRAY_COUNT(l->uniques);
    for (const auto& [owner, atom] : refs_) {
        if (!local) {
            break;
        }
        const bool ownerInside = isInsideOrSelf(owner, list);
        const bool atomInside = atom && isInsideOrSelf(atom, list);
        if (ownerInside != atomInside) {
            local = false;
        }
        if (ownerInside && lysc_node_when(owner)) {
            local = false; // a when inside may delete data: only whole validation handles that
        }
    }
    localCache_.emplace(list, local);
    return local;
}

} // namespace ncstore::ds::detail
