// What changed between two states of running, as the edit-config that makes one the other
// (history.hpp, editBetween).
#include "history.hpp"

#include <cstring>
#include <string>
#include <vector>

namespace ncstore::netconfd::history {

namespace {

/// The value of `node`'s metadata `name` of libyang's "yang" module (the diff's annotations).
const char* yangMeta(const lyd_node* node, const char* name) {
    for (const lyd_meta* m = node->meta; m; m = m->next) {
        if (std::strcmp(m->annotation->module->name, "yang") == 0 && std::strcmp(m->name, name) == 0) {
            return lyd_get_meta_value(m);
        }
    }
    return nullptr;
}

void addMeta(lyd_node* node, const char* name, const char* value) {
    if (lyd_new_meta(LYD_CTX(node), node, nullptr, name, value, 0, nullptr) != LY_SUCCESS) {
        throw YangError(std::string("cannot annotate the comparison with ") + name, LYD_CTX(node));
    }
}

/// RFC 7950 7.8.6 / 7.7.9: where an ordered-by-user instance goes, from the diff's position (the
/// instance it follows: a key predicate for a list, a value for a leaf-list; empty when first).
void addInsert(lyd_node* node) {
    const bool list = node->schema->nodetype == LYS_LIST;
    const char* after = yangMeta(node, list ? "key" : "value");
    if (!after) {
        return;
    }
    const std::string anchor = after; // the meta goes below
    if (anchor.empty()) {
        addMeta(node, "yang:insert", "first");
    } else {
        addMeta(node, "yang:insert", "after");
        addMeta(node, list ? "yang:key" : "yang:value", anchor.c_str());
    }
}

/// Turns one diff node (and its subtree) into edit-config content. `inherited`: the operation
/// of a created non-presence container, which goes to its children instead (the container may
/// exist already without a node: a create of it would fail with data-exists).
void toEdit(lyd_node* node, const char* inherited = nullptr) {
    const char* opValue = yangMeta(node, "operation");
    std::string op = opValue ? opValue : inherited ? inherited : "none";
    const bool ordered = node->schema && (node->schema->flags & LYS_ORDBY_USER) &&
                         (node->schema->nodetype & (LYS_LIST | LYS_LEAFLIST));
    const bool npContainer =
        node->schema && node->schema->nodetype == LYS_CONTAINER && !(node->schema->flags & LYS_PRESENCE);
    std::vector<lyd_meta*> diffMeta;
    for (lyd_meta* m = node->meta; m; m = m->next) {
        if (std::strcmp(m->annotation->module->name, "yang") == 0) {
            diffMeta.push_back(m);
        }
    }
    const bool pushDown = op == "create" && npContainer;
    if (op == "create" && !pushDown) {
        addMeta(node, "ietf-netconf:operation", "create");
    } else if (op == "delete") {
        // remove, not delete: a create in another case of a choice takes this node away first.
        addMeta(node, "ietf-netconf:operation", "remove");
    }
    if (ordered && (op == "create" || op == "replace")) {
        addInsert(node); // a replace of an ordered-by-user instance is a move
    }
    for (lyd_meta* m : diffMeta) {
        lyd_free_meta_single(m);
    }
    if (op == "delete") {
        // A delete names the node: its keys are enough.
        for (lyd_node* child = lyd_child(node); child;) {
            lyd_node* next = child->next;
            if (!lysc_is_key(child->schema)) {
                lyd_free_tree(child);
            }
            child = next;
        }
        return;
    }
    if (op == "create" && !pushDown) {
        return; // the subtree as it is created, no annotation inside
    }
    for (lyd_node* child = lyd_child(node); child; child = child->next) {
        toEdit(child, pushDown ? "create" : nullptr);
    }
}

} // namespace

std::string editBetween(const ly_ctx* ctx, const lyd_node* from, const lyd_node* to) {
    lyd_node* raw = nullptr;
    if (lyd_diff_siblings(from, to, 0, &raw) != LY_SUCCESS) {
        throw YangError("comparing two states of running", ctx);
    }
    const Tree diff{raw};
    for (lyd_node* top = raw; top; top = top->next) {
        toEdit(top);
    }
    // A deleted non-presence container is empty once its children are gone, and still says so.
    return raw ? print(raw, LYD_XML, LYD_PRINT_SHRINK | LYD_PRINT_WD_EXPLICIT | LYD_PRINT_KEEPEMPTYCONT)
               : std::string();
}

} // namespace ncstore::netconfd::history
