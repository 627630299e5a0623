// The part of running a rollback touches (history.hpp, regionOf): what lets a rollback cost what
// it undoes rather than the size of running.
#include "datapath.hpp"
#include "history.hpp"

#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace ncstore::netconfd::history {

namespace {

/// One step of a data path as lyd_path() writes it: `prefix:name[predicates]`, the prefix only
/// where the module changes.
struct Step {
    std::string_view prefix;
    std::string_view name;
    std::string_view predicates; ///< "[k='v']..." for a list entry, "[.='v']" for a leaf-list value
};

/// The steps of an absolute data path.
std::vector<Step> steps(std::string_view path) {
    const std::vector<std::size_t> starts = stepStarts(path);
    if (starts.empty() || starts.front() != 0) {
        throw std::runtime_error("a malformed path " + std::string(path));
    }
    std::vector<Step> out;
    for (std::size_t i = 0; i < starts.size(); ++i) {
        const std::size_t end = i + 1 < starts.size() ? starts[i + 1] : path.size();
        const std::string_view text = path.substr(starts[i] + 1, end - starts[i] - 1);
        Step s;
        const std::size_t bracket = text.find('[');
        s.predicates = bracket == std::string_view::npos ? std::string_view() : text.substr(bracket);
        std::string_view name = text.substr(0, bracket);
        if (const std::size_t colon = name.find(':'); colon != std::string_view::npos) {
            s.prefix = name.substr(0, colon);
            name.remove_prefix(colon + 1);
        }
        if (name.empty()) {
            throw std::runtime_error("a malformed path " + std::string(path));
        }
        s.name = name;
        out.push_back(s);
    }
    return out;
}

/// The value of a leaf-list step's predicate `[.='v']`.
std::string_view leafListValue(std::string_view predicates) {
    const std::size_t open = predicates.find_first_of("'\"");
    if (open == std::string_view::npos || predicates.size() < open + 3) {
        throw std::runtime_error("a leaf-list step without a value: " + std::string(predicates));
    }
    const std::size_t close = predicates.find(predicates[open], open + 1);
    if (close == std::string_view::npos) {
        throw std::runtime_error("a leaf-list step without a value: " + std::string(predicates));
    }
    return predicates.substr(open + 1, close - open - 1);
}

/// The instance of `schema` among `first` and its siblings that `step` names, or null. Keyed
/// lookups go through the siblings' hash table with its own callback; containers and leaves are
/// found by walking: libyang's schema-only lookup swaps the table's callback for its time and
/// misleads readers of the same tree on other threads (filter.hpp), and running is shared.
const lyd_node* instance(const lyd_node* first, const lysc_node* schema, const Step& step) {
    if (!first) {
        return nullptr;
    }
    lyd_node* match = nullptr;
    LY_ERR rc = LY_SUCCESS;
    if (schema->nodetype == LYS_LIST) {
        rc = lyd_find_sibling_val(first, schema, step.predicates.data(), step.predicates.size(), &match);
    } else if (schema->nodetype == LYS_LEAFLIST) {
        const std::string_view value = leafListValue(step.predicates);
        rc = lyd_find_sibling_val(first, schema, value.data(), value.size(), &match);
    } else {
        for (const lyd_node* n = first; n; n = n->next) {
            if (n->schema == schema) {
                return n;
            }
        }
        return nullptr;
    }
    if (rc == LY_ENOTFOUND) {
        return nullptr;
    }
    if (rc != LY_SUCCESS) {
        throw YangError("cannot look up " + std::string(step.name) + std::string(step.predicates),
                        schema->module->ctx);
    }
    return match;
}

/// Where a path leads in a tree: the node, or else the deepest existing ancestor (null: none)
/// and the schema of the first step that does not exist.
struct Resolved {
    const lyd_node* node = nullptr;
    const lyd_node* deepest = nullptr;
    const lysc_node* missing = nullptr;
};

Resolved resolve(const ly_ctx* ctx, const lyd_node* running, const std::string& path) {
    Resolved r;
    const lyd_node* siblings = running ? lyd_first_sibling(const_cast<lyd_node*>(running)) : nullptr;
    const lysc_node* parentSchema = nullptr;
    const lys_module* module = nullptr;
    for (const Step& s : steps(path)) {
        if (!s.prefix.empty()) {
            module = ly_ctx_get_module_implemented(ctx, std::string(s.prefix).c_str());
        }
        const lysc_node* schema =
            module ? lys_find_child(parentSchema, module, s.name.data(), s.name.size(), 0, 0) : nullptr;
        if (!schema) {
            throw std::runtime_error("no schema node for " + path + " in the models loaded now");
        }
        const lyd_node* found = instance(siblings, schema, s);
        if (!found) {
            r.missing = schema;
            return r;
        }
        r.deepest = found;
        parentSchema = schema;
        module = schema->module;
        siblings = lyd_child(found);
    }
    r.node = r.deepest;
    return r;
}

/// Builds the region: copies in running's order (of every ordered-by-user list it holds).
class RegionBuilder {
public:
    explicit RegionBuilder(const lyd_node* running)
        : first_(running ? lyd_first_sibling(const_cast<lyd_node*>(running)) : nullptr) {}

    /// `node` with its whole subtree (nothing of it copied before, but as a placeholder).
    void whole(const lyd_node* node) {
        lyd_node* copy = dup(node, true);
        if (lysc_is_userordered(node->schema)) {
            instances(lyd_parent(node), node->schema);
            lyd_node* placeholder = copies_.at(node);
            if (lyd_insert_after(placeholder, copy) != LY_SUCCESS) {
                lyd_free_tree(copy);
                throw YangError("cannot copy part of running", LYD_CTX(node));
            }
            drop(placeholder);
        } else {
            insert(lyd_parent(node), copy);
        }
        copies_[node] = copy;
    }

    /// `node` (its keys, not its other children) and its ancestors, copied once.
    lyd_node* skeleton(const lyd_node* node) {
        if (const auto it = copies_.find(node); it != copies_.end()) {
            return it->second;
        }
        if (lysc_is_userordered(node->schema)) {
            instances(lyd_parent(node), node->schema);
            return copies_.at(node);
        }
        lyd_node* copy = dup(node, false);
        insert(lyd_parent(node), copy);
        copies_[node] = copy;
        if (node->schema->nodetype == LYS_CONTAINER && !(node->schema->flags & LYS_PRESENCE)) {
            containers_.push_back(node);
        }
        return copy;
    }

    /// The paths of the non-presence containers copied without all their children that have
    /// a child outside the region that is not a default node: whatever undoing does inside the
    /// region, such a container stays in running (RegionOf::kept).
    std::vector<std::string> kept() const {
        std::vector<std::string> out;
        for (const lyd_node* c : containers_) {
            for (const lyd_node* child = lyd_child(c); child; child = child->next) {
                if (!(child->flags & LYD_DEFAULT) && !copies_.count(child)) {
                    out.push_back(pathOf(c));
                    break;
                }
            }
        }
        return out;
    }

    /// Every instance of the ordered-by-user `schema` under `parent` (null: at the top), in order:
    /// the anchors any position among them may name.
    void instances(const lyd_node* parent, const lysc_node* schema) {
        if (!done_.emplace(parent, schema).second) {
            return;
        }
        for (const lyd_node* n = parent ? lyd_child(parent) : first_; n; n = n->next) {
            if (n->schema == schema) {
                lyd_node* copy = dup(n, false);
                insert(parent, copy);
                copies_[n] = copy;
            }
        }
    }

    Tree take() { return std::move(forest_); }

private:
    static lyd_node* dup(const lyd_node* node, bool recursive) {
        lyd_node* copy = nullptr;
        if (lyd_dup_single(node, nullptr, LYD_DUP_WITH_FLAGS | (recursive ? LYD_DUP_RECURSIVE : 0), &copy) !=
            LY_SUCCESS) {
            throw YangError("cannot copy part of running", LYD_CTX(node));
        }
        return copy;
    }

    /// Puts `copy` (owned until it is in the forest) under the copy of `parent`, or at the top.
    void insert(const lyd_node* parent, lyd_node* copy) {
        Tree owned(copy);
        LY_ERR rc = LY_SUCCESS;
        if (parent) {
            rc = lyd_insert_child(skeleton(parent), copy);
        } else if (!forest_) {
            forest_.reset(owned.release());
            return;
        } else {
            lyd_node* first = nullptr;
            rc = lyd_insert_sibling(forest_.get(), copy, &first);
            if (rc == LY_SUCCESS) {
                forest_.release();
                forest_.reset(first);
            }
        }
        if (rc != LY_SUCCESS) {
            throw YangError("cannot copy part of running", LYD_CTX(copy));
        }
        owned.release();
    }

    void drop(lyd_node* copy) {
        if (copy == forest_.get()) {
            forest_.release();
            forest_.reset(copy->next);
        }
        lyd_free_tree(copy);
    }

    const lyd_node* first_;
    Tree forest_;
    std::unordered_map<const lyd_node*, lyd_node*> copies_;
    std::set<std::pair<const lyd_node*, const lysc_node*>> done_;
    std::vector<const lyd_node*> containers_; // skeletons of non-presence containers
};

bool underAny(const lyd_node* node, const std::unordered_set<const lyd_node*>& set) {
    for (const lyd_node* n = node; n; n = lyd_parent(n)) {
        if (set.count(n)) {
            return true;
        }
    }
    return false;
}

} // namespace

std::vector<std::size_t> stepStarts(std::string_view path) {
    std::vector<std::size_t> out;
    char quote = 0;
    int depth = 0;
    for (std::size_t i = 0; i < path.size(); ++i) {
        const char ch = path[i];
        if (quote) {
            quote = ch == quote ? 0 : quote;
        } else if (ch == '\'' || ch == '"') {
            quote = ch;
        } else if (ch == '[') {
            ++depth;
        } else if (ch == ']') {
            --depth;
        } else if (ch == '/' && depth == 0) {
            out.push_back(i);
        }
    }
    if (quote || depth) {
        throw std::runtime_error("a malformed path " + std::string(path));
    }
    return out;
}

RegionOf regionOf(const ly_ctx* ctx, const lyd_node* running, const std::vector<std::string>& paths) {
    std::vector<Resolved> found;
    found.reserve(paths.size());
    std::unordered_set<const lyd_node*> wholes;
    for (const std::string& path : paths) {
        found.push_back(resolve(ctx, running, path));
        if (found.back().node) {
            wholes.insert(found.back().node);
        }
    }
    RegionBuilder region(running);
    std::unordered_set<const lyd_node*> copied;
    for (const Resolved& r : found) {
        if (r.node) {
            // Named twice, or inside another node copied whole: there already.
            if (copied.insert(r.node).second && !underAny(lyd_parent(r.node), wholes)) {
                region.whole(r.node);
            }
            continue;
        }
        if (r.deepest && underAny(r.deepest, wholes)) {
            continue;
        }
        if (r.deepest) {
            region.skeleton(r.deepest);
        }
        if (lysc_is_userordered(r.missing)) {
            region.instances(r.deepest, r.missing); // where the missing instance will go back
        }
    }
    RegionOf out;
    out.kept = region.kept();
    out.tree = region.take();
    return out;
}

} // namespace ncstore::netconfd::history
