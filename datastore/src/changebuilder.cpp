#include "changebuilder.hpp"

#include "records.hpp"

#include <cstring>
#include <list>
#include <unordered_map>
#include <unordered_set>

namespace ncstore::ds::detail {

namespace {

bool isDefault(const lyd_node* node) {
    return node->flags & LYD_DEFAULT;
}

bool isTerminal(const lyd_node* node) {
    return node->schema->nodetype & LYD_NODE_TERM;
}

Tree copySubtree(const lyd_node* node) {
    lyd_node* copy = nullptr;
    if (lyd_dup_single(node, nullptr, LYD_DUP_RECURSIVE | LYD_DUP_WITH_FLAGS | LYD_DUP_NO_META, &copy) !=
        LY_SUCCESS) {
        throw YangError("cannot copy a changed subtree", LYD_CTX(node));
    }
    return Tree{copy};
}

/// Where an ordered-by-user instance is now: after the previous instance of its (leaf-)list.
std::optional<Position> positionOf(const lyd_node* node) {
    if (!lysc_is_userordered(node->schema)) {
        return std::nullopt;
    }
    const lyd_node* prev = node->prev;
    if (prev == node || !prev->next || prev->schema != node->schema) {
        return Position{Position::Where::First, {}};
    }
    return Position{Position::Where::After, pathOf(prev)};
}

/// A change of `op` to `node`, its path and schema filled in.
Change about(ChangeOp op, const lyd_node* node) {
    Change c;
    c.op = op;
    c.path = pathOf(node);
    c.schema = node->schema;
    return c;
}

/// `node` as it is now: its value (terminals) or a copy of its subtree.
void capture(const lyd_node* node, std::optional<std::string>& value, Tree& tree) {
    if (isTerminal(node)) {
        value = lyd_get_value(node);
    } else {
        tree = copySubtree(node);
    }
}

Change created(const lyd_node* node) {
    Change c = about(ChangeOp::Create, node);
    capture(node, c.newValue, c.newTree);
    c.position = positionOf(node);
    return c;
}

Change deleted(const lyd_node* node) {
    Change c = about(ChangeOp::Delete, node);
    capture(node, c.oldValue, c.oldTree);
    return c;
}

Position after(const std::string& anchor) {
    return anchor.empty() ? Position{Position::Where::First, {}} : Position{Position::Where::After, anchor};
}

/// A Move of `node` that followed `oldAnchor` ("" = first) before.
Change moved(const lyd_node* node, const std::string& oldAnchor) {
    Change c = about(ChangeOp::Move, node);
    c.position = positionOf(node);
    c.oldPosition = after(oldAnchor);
    return c;
}

Change updated(const lyd_node* node, std::string oldValue) {
    Change c = about(ChangeOp::Update, node);
    c.oldValue = std::move(oldValue);
    c.newValue = lyd_get_value(node);
    return c;
}

/// The instance of `node` (same schema, same keys or value) among `siblings`, or nullptr.
const lyd_node* match(const lyd_node* siblings, const lyd_node* node) {
    if (!siblings) {
        return nullptr;
    }
    lyd_node* found = nullptr;
    // lyd_find_sibling_first compares values of single-instance nodes when the parent has no
    // hash table: those are looked up by schema.
    const LY_ERR rc = (node->schema->nodetype & (LYS_LIST | LYS_LEAFLIST))
                          ? lyd_find_sibling_first(siblings, node, &found)
                          : lyd_find_sibling_val(siblings, node->schema, nullptr, 0, &found);
    if (rc == LY_ENOTFOUND) {
        return nullptr;
    }
    if (rc != LY_SUCCESS) {
        throw YangError("cannot look up " + pathOf(node), LYD_CTX(node));
    }
    return found;
}

const lyd_node* firstInstance(const lyd_node* siblings, const lysc_node* schema) {
    lyd_node* found = nullptr;
    if (!siblings || lyd_find_sibling_val(siblings, schema, nullptr, 0, &found) != LY_SUCCESS) {
        return nullptr;
    }
    return found;
}

const lyd_node* find(const lyd_node* forest, const std::string& path) {
    lyd_node* found = nullptr;
    if (!forest || lyd_find_path(forest, path.c_str(), 0, &found) != LY_SUCCESS) {
        return nullptr;
    }
    return found;
}

/// The keyed comparison of two trees (see changebuilder.hpp).
class Differ {
public:
    explicit Differ(std::vector<Change>& out) : out_(out) {}

    /// `o` and `n` (either may be null) are the same node in the old and the new tree.
    /// `shellOnly`: leave out split entries (records.hpp), which are compared on their own.
    void node(const lyd_node* o, const lyd_node* n, bool shellOnly) {
        const bool inOld = o && !isDefault(o);
        const bool inNew = n && !isDefault(n);
        if (!inOld) {
            if (inNew) {
                out_.push_back(created(n));
            }
            return;
        }
        if (!inNew) {
            deleteOld(o);
            return;
        }
        if (isTerminal(n)) {
            if (n->schema->nodetype == LYS_LEAF && std::strcmp(lyd_get_value(o), lyd_get_value(n)) != 0) {
                out_.push_back(updated(n, lyd_get_value(o)));
            }
            return;
        }
        if (n->schema->nodetype & LYD_NODE_ANY) {
            if (lyd_compare_single(o, n, 0) != LY_SUCCESS) {
                Change c = about(ChangeOp::Replace, n);
                c.oldTree = copySubtree(o);
                c.newTree = copySubtree(n);
                out_.push_back(std::move(c));
            }
            return;
        }
        if (!shellOnly && isSplitEntry(n) &&
            lyd_compare_single(o, n, LYD_COMPARE_FULL_RECURSION | LYD_COMPARE_DEFAULTS) == LY_SUCCESS) {
            return; // a record that did not change: the common case, one linear comparison
        }
        children(lyd_child(o), lyd_child(n), shellOnly);
    }

    /// Two sibling lists (`oldFirst`, `newFirst`: any of their nodes, or null).
    void children(const lyd_node* oldFirst, const lyd_node* newFirst, bool shellOnly) {
        auto skipped = [&](const lyd_node* c) { return isDefault(c) || (shellOnly && isSplitEntry(c)); };
        for (const lyd_node* o = oldFirst ? lyd_first_sibling(oldFirst) : nullptr; o; o = o->next) {
            if (!skipped(o)) {
                const lyd_node* n = match(newFirst, o);
                if (!n || isDefault(n)) {
                    deleteOld(o);
                }
            }
        }
        std::vector<const lysc_node*> userOrdered;
        for (const lyd_node* n = newFirst ? lyd_first_sibling(newFirst) : nullptr; n; n = n->next) {
            if (skipped(n)) {
                continue;
            }
            const lyd_node* o = match(oldFirst, n);
            if (lysc_is_userordered(n->schema)) {
                // Created and moved instances go in order below; their content is compared here.
                if (userOrdered.empty() || userOrdered.back() != n->schema) {
                    userOrdered.push_back(n->schema);
                }
                if (o && !isDefault(o)) {
                    node(o, n, false);
                }
                continue;
            }
            node(o, n, shellOnly);
        }
        for (const lysc_node* schema : userOrdered) {
            order(oldFirst, newFirst, schema);
        }
    }

    /// The creations and moves that put the instances of the ordered-by-user `schema` in their
    /// new order, simulated on the old order (deletions done) so that only what is out of place
    /// moves, each placed after its new predecessor.
    void order(const lyd_node* oldFirst, const lyd_node* newFirst, const lysc_node* schema) {
        std::list<const lyd_node*> current; // new-tree nodes, in the order being built
        std::unordered_map<const lyd_node*, std::list<const lyd_node*>::iterator> where;
        for (const lyd_node* o = firstInstance(oldFirst, schema); o && o->schema == schema; o = o->next) {
            const lyd_node* n = isDefault(o) ? nullptr : match(newFirst, o);
            if (n && !isDefault(n)) {
                where[n] = current.insert(current.end(), n);
            }
        }
        const lyd_node* previous = nullptr;
        for (const lyd_node* n = firstInstance(newFirst, schema); n && n->schema == schema; n = n->next) {
            if (isDefault(n)) {
                continue;
            }
            const auto expected = previous ? std::next(where.at(previous)) : current.begin();
            const auto it = where.find(n);
            if (it == where.end()) {
                where[n] = current.insert(expected, n);
                out_.push_back(created(n));
            } else if (it->second != expected) {
                // Where it is in the order built so far: the state just before this move.
                const std::string oldAnchor =
                    it->second == current.begin() ? "" : pathOf(*std::prev(it->second));
                current.splice(expected, current, it->second);
                out_.push_back(detail::moved(n, oldAnchor));
            }
            previous = n;
        }
    }

private:
    /// A Delete of the old tree's `o`. An ordered-by-user instance gets the position it has
    /// just before its deletion (changes.hpp promise 2): after the nearest earlier instance of
    /// the old tree not deleted before it in this change set.
    void deleteOld(const lyd_node* o) {
        Change c = deleted(o);
        if (lysc_is_userordered(o->schema)) {
            const lyd_node* p = o;
            for (;;) {
                const lyd_node* prev = p->prev;
                if (prev == o || !prev->next || prev->schema != o->schema) {
                    c.oldPosition = Position{Position::Where::First, {}};
                    break;
                }
                if (!deletedOld_.count(prev)) {
                    c.oldPosition = Position{Position::Where::After, pathOf(prev)};
                    break;
                }
                p = prev;
            }
            deletedOld_.insert(o);
        }
        out_.push_back(std::move(c));
    }

    std::vector<Change>& out_;
    std::unordered_set<const lyd_node*> deletedOld_; // ordered-by-user instances deleted so far
};

} // namespace

void ChangeBuilder::created(const lyd_node* node) {
    if (isDefault(node)) {
        return;
    }
    Change c = detail::created(node);
    if ((node->schema->nodetype & LYD_NODE_ANY) && !changes_.empty() &&
        changes_.back().op == ChangeOp::Delete && changes_.back().path == c.path) {
        // anydata content is replaced whole: one Replace, not a Delete and a Create
        changes_.back().op = ChangeOp::Replace;
        changes_.back().newTree = std::move(c.newTree);
        return;
    }
    changes_.push_back(std::move(c));
}

void ChangeBuilder::changed(const lyd_node* node, const std::string& oldValue, bool wasDefault) {
    if (wasDefault) {
        changes_.push_back(detail::created(node));
        return;
    }
    changes_.push_back(updated(node, oldValue));
}

void ChangeBuilder::moved(const lyd_node* node, const std::string& oldAnchor) {
    changes_.push_back(detail::moved(node, oldAnchor));
}

void ChangeBuilder::deleting(const lyd_node* node) {
    if (!isDefault(node)) {
        Change c = deleted(node);
        c.oldPosition = positionOf(node); // still linked: where it is just before the deletion
        changes_.push_back(std::move(c));
    }
}

void ChangeBuilder::addValidationDiff(const lyd_node* diff) {
    for (const lyd_node* top = diff; top; top = top->next) {
        const lyd_node* elem = nullptr;
        LYD_TREE_DFS_BEGIN(top, elem) {
            const lyd_meta* op = lyd_find_meta(elem->meta, nullptr, "yang:operation");
            const char* value = op ? lyd_get_meta_value(op) : nullptr;
            if (value && (std::strcmp(value, "delete") == 0 || std::strcmp(value, "create") == 0)) {
                if (!isDefault(elem)) {
                    changes_.push_back(value[0] == 'd' ? deleted(elem) : detail::created(elem));
                }
                LYD_TREE_DFS_continue = 1; // the subtree went (or came) with it
            }
            LYD_TREE_DFS_END(top, elem);
        }
    }
}

void diffForests(const lyd_node* oldForest, const lyd_node* newForest, std::vector<Change>& out) {
    Differ(out).children(oldForest, newForest, false);
}

void diffTouched(const lyd_node* oldForest, const lyd_node* newForest, const RecordCollector& touched,
                 std::vector<Change>& out) {
    Differ differ(out);
    // Nodes compared whole already: nothing below them is looked at again.
    std::unordered_set<const lyd_node*> done;
    auto isDone = [&](const lyd_node* o, const lyd_node* n) {
        for (const lyd_node* p = o; p; p = lyd_parent(p)) {
            if (done.count(p)) {
                return true;
            }
        }
        for (const lyd_node* p = n; p; p = lyd_parent(p)) {
            if (done.count(p)) {
                return true;
            }
        }
        return false;
    };
    auto compare = [&](const std::string& path, bool shell) {
        const lyd_node* o = find(oldForest, path);
        const lyd_node* n = find(newForest, path);
        if ((!o && !n) || isDone(o, n)) {
            return;
        }
        if (shell && o && n) {
            differ.node(o, n, true); // its entries are records of their own
            return;
        }
        if (!shell && !o && n && lysc_is_userordered(n->schema)) {
            return; // a created top-level ordered-by-user entry: placed by the ordering below
        }
        differ.node(o, n, false);
        done.insert(o);
        done.insert(n);
    };
    // Deleted subtrees first (a container holding records, deleted and maybe re-created: all
    // of it is compared), then the touched records, then the patched leaves.
    for (const std::string& path : touched.rangeDeletes()) {
        compare(path, false);
    }
    std::vector<const lysc_node*> topOrdered;
    for (const std::string& path : touched.touchedRecords()) {
        const lyd_node* any = find(newForest, path);
        any = any ? any : find(oldForest, path);
        const bool shell = any && !lyd_parent(any);
        if (shell && lysc_is_userordered(any->schema)) {
            topOrdered.push_back(any->schema); // a top-level ordered-by-user entry: its own record
            compare(path, false);
        } else {
            compare(path, shell);
        }
    }
    for (const std::string& path : touched.patchedLeaves()) {
        compare(path, false);
    }
    std::unordered_set<const lysc_node*> ordered;
    for (const lysc_node* schema : topOrdered) {
        if (ordered.insert(schema).second) {
            differ.order(oldForest, newForest, schema);
        }
    }
}

} // namespace ncstore::ds::detail
