#include "selection.hpp"

#include "events.hpp"
#include "filter.hpp"

#include <cstring>

namespace ncstore::netconfd::push {

namespace {

constexpr const char* kBaseNs = "urn:ietf:params:xml:ns:netconf:base:1.0";

bool blank(const char* text) {
    for (; text && *text; ++text) {
        if (!std::strchr(" \t\r\n", *text)) {
            return false;
        }
    }
    return true;
}

/// Whether `node` of a subtree filter is a content match (a leaf element with a value).
bool contentMatch(const lyd_node* node) {
    if (lyd_child(node)) {
        return false;
    }
    if (!node->schema) {
        return !blank(reinterpret_cast<const lyd_node_opaq*>(node)->value);
    }
    return (node->schema->nodetype & LYD_NODE_TERM) && !blank(lyd_get_value(node));
}

/// The filter's schema paths, or false when it holds more than containment and selection nodes
/// (or names a namespace the context does not implement).
bool collectPaths(const lyd_node* first, const ly_ctx* ctx,
                  std::vector<std::pair<std::string, std::string>>& prefix,
                  std::vector<std::vector<std::pair<std::string, std::string>>>& out) {
    for (const lyd_node* n = first; n; n = n->next) {
        std::string module;
        std::string name;
        if (n->schema) {
            module = n->schema->module->name;
            name = n->schema->name;
        } else {
            const auto* opaq = reinterpret_cast<const lyd_node_opaq*>(n);
            name = opaq->name.name;
            const char* ns = opaq->format == LY_VALUE_XML ? opaq->name.module_ns : nullptr;
            if (opaq->format != LY_VALUE_XML) {
                return false;
            }
            if (ns && *ns && std::strcmp(ns, kBaseNs) != 0) {
                const lys_module* m = ly_ctx_get_module_implemented_ns(ctx, ns);
                if (!m) {
                    return false;
                }
                module = m->name;
            }
        }
        if (contentMatch(n)) {
            return false;
        }
        prefix.emplace_back(module, name);
        if (const lyd_node* kids = lyd_child(n)) {
            if (!collectPaths(kids, ctx, prefix, out)) {
                return false;
            }
        } else {
            out.push_back(prefix);
        }
        prefix.pop_back();
    }
    return true;
}

bool nameStart(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

bool nameChar(char c) {
    return nameStart(c) || (c >= '0' && c <= '9') || c == '-' || c == '.';
}

/// "/m:a/b/n:c" as steps (module inherited); nullopt for anything richer.
std::optional<std::vector<std::pair<std::string, std::string>>> plainPath(const std::string& expr) {
    std::vector<std::pair<std::string, std::string>> steps;
    std::string module;
    std::size_t pos = 0;
    while (pos < expr.size()) {
        if (expr[pos++] != '/' || pos >= expr.size() || !nameStart(expr[pos])) {
            return std::nullopt;
        }
        std::size_t start = pos;
        while (pos < expr.size() && nameChar(expr[pos])) {
            ++pos;
        }
        std::string name = expr.substr(start, pos - start);
        if (pos < expr.size() && expr[pos] == ':') {
            module = name;
            start = ++pos;
            if (pos >= expr.size() || !nameStart(expr[pos])) {
                return std::nullopt;
            }
            while (pos < expr.size() && nameChar(expr[pos])) {
                ++pos;
            }
            name = expr.substr(start, pos - start);
        } else if (module.empty()) {
            return std::nullopt;
        }
        steps.emplace_back(module, name);
    }
    if (steps.empty()) {
        return std::nullopt;
    }
    return steps;
}

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

Selection Selection::of(const lyd_node* param, const ly_ctx* ctx) {
    Selection s;
    s.holder_ = filter::fromParameter(param);
    const lyd_node* copy = s.holder_.get();
    if (param->schema && (param->schema->nodetype & LYD_NODE_TERM)) {
        if (auto steps = plainPath(lyd_get_value(param))) {
            s.paths_.emplace();
            s.paths_->emplace_back();
            for (auto& [m, n] : *steps) {
                s.paths_->back().push_back(Step{m, n});
            }
        }
        return s;
    }
    const auto* any = reinterpret_cast<const lyd_node_any*>(copy);
    if (any->value_type == LYD_ANYDATA_DATATREE) {
        std::vector<std::pair<std::string, std::string>> prefix;
        std::vector<std::vector<std::pair<std::string, std::string>>> paths;
        if (collectPaths(any->value.tree, ctx, prefix, paths)) {
            s.paths_.emplace();
            for (const auto& p : paths) {
                Steps steps;
                for (const auto& [m, n] : p) {
                    steps.push_back(Step{m, n});
                }
                s.paths_->push_back(std::move(steps));
            }
        }
    }
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
        auto matches = [&](const Steps& s, std::size_t n) {
            for (std::size_t i = 0; i < n; ++i) {
                if (s[i].name != steps[i].name || (!s[i].module.empty() && s[i].module != steps[i].module)) {
                    return false;
                }
            }
            return true;
        };
        bool below = false; // the change is above some selected node
        for (const Steps& s : *paths_) {
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
