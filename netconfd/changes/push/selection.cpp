#include "selection.hpp"

#include "events.hpp"
#include "filter.hpp"

namespace ncstore::netconfd::push {

namespace {

/// The changed node with its ancestors (their keys only), as its own small tree; `node` is set
/// to the changed node in it.
Tree treeOf(const ds::Change& c, const ly_ctx* ctx, lyd_node*& node) {
    const lyd_node* value = c.op == ds::ChangeOp::Delete ? c.oldTree.get() : c.newTree.get();
    lyd_node* top = nullptr;
    if (value) {
        const auto steps = notify::splitPath(c.path);
        const notify::PathStep& last = steps.back();
        const char* begin = last.module.data() + last.module.size() + 1 == last.name.data()
                                ? last.module.data()
                                : last.name.data();
        const std::string parentPath = c.path.substr(0, static_cast<std::size_t>(begin - c.path.data()) - 1);
        lyd_node* copy = nullptr;
        if (lyd_dup_single(value, nullptr, LYD_DUP_RECURSIVE | LYD_DUP_WITH_FLAGS, &copy) != LY_SUCCESS) {
            throw YangError("cannot copy the value of " + c.path, ctx);
        }
        Subtree owned{copy};
        if (parentPath.empty()) {
            node = owned.release();
            return Tree{node};
        }
        lyd_node* parent = nullptr;
        const LY_ERR rc =
            lyd_new_path2(nullptr, ctx, parentPath.c_str(), nullptr, 0, LYD_ANYDATA_STRING, 0, &top, &parent);
        Tree tree{top};
        if (rc != LY_SUCCESS || !parent) {
            throw YangError("cannot make the ancestors of " + c.path, ctx);
        }
        if (lyd_insert_child(parent, copy) != LY_SUCCESS) {
            throw YangError("cannot place the value of " + c.path, ctx);
        }
        node = owned.release();
        return tree;
    }
    const std::optional<std::string>& v = c.op == ds::ChangeOp::Delete ? c.oldValue : c.newValue;
    const bool leaf = c.schema && c.schema->nodetype == LYS_LEAF;
    const LY_ERR rc = lyd_new_path2(nullptr, ctx, c.path.c_str(), leaf && v ? v->c_str() : nullptr, 0,
                                    LYD_ANYDATA_STRING, 0, &top, &node);
    Tree tree{top};
    if (rc != LY_SUCCESS || !node) {
        throw YangError("cannot make the node of " + c.path, ctx);
    }
    return tree;
}

} // namespace

Selection Selection::of(const lyd_node* param) {
    Selection s;
    s.holder_ = filter::fromParameter(param);
    s.paths_ = filter::selectedPaths(s.holder_.get());
    return s;
}

Selection::Part Selection::select(const ds::Change& c, const ly_ctx* ctx, const nacm::Access* access) const {
    const bool limited = access && !access->permitsAllReads();
    if (limited && !access->readablePath(ctx, c.path)) {
        return {};
    }
    bool whole = !holder_;
    if (!whole && paths_) {
        const auto steps = notify::splitPath(c.path);
        auto matches = [&](const Path& s, std::size_t n) {
            for (std::size_t i = 0; i < n; ++i) {
                if (s[i].name != steps[i].name || (!s[i].module.empty() && s[i].module != steps[i].module)) {
                    return false;
                }
            }
            return true;
        };
        bool below = false; // the change is above some selected node
        for (const Path& s : *paths_) {
            if (s.size() <= steps.size() && matches(s, s.size())) {
                whole = true;
                break;
            }
            below = below || matches(s, steps.size());
        }
        if (!whole && !below) {
            return {};
        }
        // A delete or move above the selection removes or moves what is selected: sent whole.
        whole = whole || c.op == ds::ChangeOp::Delete || c.op == ds::ChangeOp::Move;
    }
    const bool hasSubtree =
        c.op == ds::ChangeOp::Delete ? static_cast<bool>(c.oldTree) : static_cast<bool>(c.newTree);
    if (whole && (!limited || !hasSubtree)) {
        return {Part::Kind::Whole, nullptr, nullptr};
    }
    lyd_node* node = nullptr;
    Tree tree = treeOf(c, ctx, node);
    Part part;
    part.forest = whole ? std::move(tree) : filter::apply(tree.get(), holder_.get());
    if (limited) {
        access->pruneUnreadable(part.forest);
    }
    if (!part.forest) {
        return {};
    }
    lyd_node* found = nullptr;
    if (lyd_find_path(part.forest.get(), c.path.c_str(), 0, &found) != LY_SUCCESS || !found) {
        return {}; // the filter selects something around the change, not the change
    }
    part.kind = Part::Kind::Cut;
    part.node = found;
    return part;
}

} // namespace ncstore::netconfd::push
