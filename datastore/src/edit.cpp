// The edit-config engine: RFC 6241 7.2 operations applied in place to a validated libyang tree.
//
// Cost model: every edit node is matched to the target with hash lookups (lyd_find_sibling_*),
// a missing subtree is duplicated in one call, and only a replace walks the children of the node
// it replaces. Nothing here looks at target nodes the edit does not name, except the other cases
// of a choice and the instances that must shift when undo restores a position.
#include "edit.hpp"

#include <cstring>
#include <list>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace ncstore::ds::detail {

struct UndoLog::Entry {
    enum class Kind {
        Created, ///< `path` was inserted: undo frees it
        Deleted, ///< `subtree` was unlinked from `path` ("" = top level): undo re-inserts it
        Changed, ///< the value of `path` was `oldValue` (and default when `oldDefault`)
        Moved,   ///< `path` (a user-ordered instance) followed `anchor` before
    };
    Kind kind;
    std::string path;
    /// Deleted/Moved of a (leaf-)list instance: the previous instance of the same (leaf-)list,
    /// "" when it was the first one.
    std::string anchor;
    Subtree subtree;
    std::string oldValue;
    bool oldDefault = false;
    /// Created/Changed: how many ancestors (from the parent up) carried LYD_DEFAULT before the
    /// change; libyang clears that flag on them when an explicit node appears below.
    unsigned defaultAncestors = 0;
};

namespace {

using Entry = UndoLog::Entry;

[[noreturn]] void fail(ErrorTag tag, const std::string& message, const std::string& path = {},
                       const std::string& appTag = {}) {
    throw Error(tag, message, path, appTag);
}

void checkLy(LY_ERR rc, const char* what, const lyd_node* node) {
    if (rc != LY_SUCCESS) {
        std::string where = node ? pathOf(node) : std::string();
        throw Error(ErrorTag::OperationFailed,
                    std::string(what) + " failed at " + where + ": " +
                        lastError(node ? LYD_CTX(node) : nullptr),
                    where);
    }
}

bool isMultiInstance(const lysc_node* schema) {
    return schema->nodetype & (LYS_LIST | LYS_LEAFLIST);
}

/// Whether `a` and `b` name the same instance: one schema node that has one instance per parent,
/// or the same list entry (keys) or leaf-list value.
bool sameInstance(const lyd_node* a, const lyd_node* b) {
    return a->schema == b->schema &&
           (!isMultiInstance(a->schema) || (a->hash == b->hash && lyd_compare_single(a, b, 0) == LY_SUCCESS));
}

/// Whether siblings from `first` name one instance twice. An edit may (the second mention then
/// applies to what the first made, as history's compare writes a remove before a create), but
/// such a subtree must not be copied into the target as it is: that would make two instances,
/// which paths (and so undo) could not tell apart (found by fuzz_edit).
bool namesAnInstanceTwice(const lyd_node* first) {
    std::vector<const lyd_node*> siblings;
    for (const lyd_node* n = first; n; n = n->next) {
        if (n->schema) {
            siblings.push_back(n);
        }
    }
    if (siblings.size() <= 16) {
        for (std::size_t i = 1; i < siblings.size(); ++i) {
            for (std::size_t j = 0; j < i; ++j) {
                if (sameInstance(siblings[j], siblings[i])) {
                    return true;
                }
            }
        }
        return false;
    }
    // Many siblings (a big list): libyang's node hash covers the schema node and, for instances,
    // their keys or value.
    std::unordered_multimap<std::uint32_t, const lyd_node*> seen(siblings.size());
    for (const lyd_node* n : siblings) {
        const auto [from, to] = seen.equal_range(n->hash);
        for (auto it = from; it != to; ++it) {
            if (sameInstance(it->second, n)) {
                return true;
            }
        }
        seen.emplace(n->hash, n);
    }
    return false;
}

/// The first node of the sibling list `node` belongs to (`forest` for top-level nodes).
lyd_node* siblingsOf(lyd_node* parent, lyd_node* forest) {
    return parent ? lyd_child(parent) : forest;
}

/// After an insertion at top level the first node of the forest may have changed.
void fixFirst(lyd_node** forest) {
    if (*forest) {
        while ((*forest)->prev->next) {
            *forest = (*forest)->prev;
        }
    }
}

/// Inserts `node` below `parent` (or at top level) where libyang's schema order puts it: after
/// the last instance of its (leaf-)list.
void linkNode(lyd_node** forest, lyd_node* parent, lyd_node* node) {
    if (parent) {
        checkLy(lyd_insert_child(parent, node), "inserting a node", parent);
    } else if (!*forest) {
        *forest = node;
    } else {
        // Through the first sibling: lyd_insert_sibling on the last one walks the whole list.
        checkLy(lyd_insert_sibling(*forest, node, forest), "inserting a top-level node", nullptr);
    }
}

void unlinkNode(lyd_node** forest, lyd_node* node) {
    if (node == *forest) {
        *forest = node->next;
    }
    lyd_unlink_tree(node);
}

lyd_node* firstInstance(lyd_node* siblings, const lysc_node* schema) {
    if (!siblings) {
        return nullptr;
    }
    lyd_node* match = nullptr;
    LY_ERR rc = lyd_find_sibling_val(siblings, schema, nullptr, 0, &match);
    if (rc == LY_ENOTFOUND) {
        return nullptr;
    }
    checkLy(rc, "looking up a schema instance", siblings);
    return match;
}

/// Path of the instance before `node` in its (leaf-)list, "" when `node` is the first instance.
std::string previousInstancePath(const lyd_node* node) {
    const lyd_node* prev = node->prev;
    if (prev == node || !prev->next || prev->schema != node->schema) {
        return {};
    }
    return pathOf(prev);
}

unsigned defaultChain(const lyd_node* from) {
    unsigned n = 0;
    for (const lyd_node* p = from; p && (p->flags & LYD_DEFAULT); p = lyd_parent(p)) {
        ++n;
    }
    return n;
}

void restoreDefaultChain(lyd_node* from, unsigned n) {
    for (lyd_node* p = from; p && n; p = lyd_parent(p), --n) {
        p->flags |= LYD_DEFAULT;
    }
}

lyd_node* findPath(lyd_node* forest, const std::string& path) {
    if (!forest) {
        return nullptr;
    }
    lyd_node* match = nullptr;
    LY_ERR rc = lyd_find_path(forest, path.c_str(), 0, &match);
    if (rc == LY_SUCCESS) {
        return match;
    }
    if (rc == LY_ENOTFOUND || rc == LY_EINCOMPLETE) {
        return nullptr;
    }
    throw Error(ErrorTag::OperationFailed, "undo: cannot look up " + path + ": " + lastError(LYD_CTX(forest)),
                path);
}

lyd_node* mustFind(lyd_node* forest, const std::string& path) {
    lyd_node* node = findPath(forest, path);
    if (!node) {
        throw Error(ErrorTag::OperationFailed, "undo: node vanished from the tree: " + path, path);
    }
    return node;
}

/// The parent a deleted subtree goes back under. Validation may have dropped it meanwhile
/// without a trace in its diff (an emptied non-presence container of a case, found by
/// tests/fuzz/fuzz_edit): then it is made again, empty, as it was before validation.
lyd_node* parentToRestore(lyd_node** forest, const std::string& path, const ly_ctx* ctx) {
    if (lyd_node* parent = findPath(*forest, path)) {
        return parent;
    }
    lyd_node* top = nullptr;
    lyd_node* parent = nullptr;
    const LY_ERR rc =
        lyd_new_path2(*forest, ctx, path.c_str(), nullptr, 0, LYD_ANYDATA_STRING, 0, &top, &parent);
    if (rc != LY_SUCCESS || !parent) {
        throw Error(ErrorTag::OperationFailed, "undo: cannot restore " + path + ": " + lastError(ctx), path);
    }
    if (!*forest) {
        *forest = top;
    }
    fixFirst(forest);
    return parent;
}

/// Puts the linked user-ordered `node` right after the instance at `anchorPath` ("" = first).
void restorePosition(lyd_node** forest, lyd_node* node, const std::string& anchorPath) {
    lyd_node* anchor = anchorPath.empty() ? nullptr : mustFind(*forest, anchorPath);
    lyd_node* follower =
        anchor ? anchor->next : firstInstance(siblingsOf(lyd_parent(node), *forest), node->schema);
    if (follower == node) {
        return;
    }
    if (anchor) {
        checkLy(lyd_insert_after(anchor, node), "restoring the position of", node);
    } else {
        checkLy(lyd_insert_before(follower, node), "restoring the position of", node);
    }
    fixFirst(forest);
}

bool isSystemOrderedInstance(const lyd_node* node) {
    return isMultiInstance(node->schema) && !lysc_is_userordered(node->schema);
}

/// Re-inserts a run of deleted instances of one system-ordered (leaf-)list (`run`, in undo
/// order) at their former positions. libyang 2.1.30 can only append such instances, so the
/// wanted order is worked out first and the instances that must move are appended once each:
/// O(instances + run) for the whole run, where placing them one by one is quadratic when a
/// large deletion (say a replace that dropped 10k interfaces) is rolled back.
void restoreSystemOrderedRun(lyd_node** forest, const std::string& parentPath,
                             std::vector<std::unique_ptr<UndoLog::Entry>>& run) {
    const lysc_node* schema = run.front()->subtree->schema;
    lyd_node* parent = parentPath.empty()
                           ? nullptr
                           : parentToRestore(forest, parentPath, LYD_CTX(run.front()->subtree.get()));
    std::list<lyd_node*> wanted;
    std::unordered_map<const lyd_node*, std::list<lyd_node*>::iterator> where;
    for (lyd_node* i = firstInstance(siblingsOf(parent, *forest), schema); i && i->schema == schema;
         i = i->next) {
        where[i] = wanted.insert(wanted.end(), i);
    }
    for (auto& entry : run) {
        lyd_node* node = entry->subtree.get();
        linkNode(forest, parent, node);
        entry->subtree.release();
        auto at = wanted.begin();
        if (!entry->anchor.empty()) {
            auto anchor = where.find(mustFind(*forest, entry->anchor));
            if (anchor == where.end()) {
                throw Error(ErrorTag::OperationFailed,
                            "undo: " + entry->anchor + " is not an instance of the list", entry->anchor);
            }
            at = std::next(anchor->second);
        }
        where[node] = wanted.insert(at, node);
    }
    // Instances already in the wanted order stay; from the first misplaced one on, all move.
    auto it = wanted.begin();
    for (lyd_node* i = firstInstance(siblingsOf(parent, *forest), schema);
         i && it != wanted.end() && i == *it; i = i->next) {
        ++it;
    }
    for (; it != wanted.end(); ++it) {
        unlinkNode(forest, *it);
        linkNode(forest, parent, *it);
    }
    fixFirst(forest);
}

enum class Op { Merge, Replace, Create, Delete, Remove, None };

constexpr std::string_view kNetconfNs = "urn:ietf:params:xml:ns:netconf:base:1.0";

const char* toString(Op op) {
    switch (op) {
    case Op::Merge:
        return "merge";
    case Op::Replace:
        return "replace";
    case Op::Create:
        return "create";
    case Op::Delete:
        return "delete";
    case Op::Remove:
        return "remove";
    case Op::None:
        return "none";
    }
    return "?";
}

enum class Insert { Default, First, Last, Before, After };

/// The edit attributes of one node.
struct Attrs {
    std::optional<Op> op;
    Insert insert = Insert::Default;
    const char* key = nullptr;   ///< yang:key, lists
    const char* value = nullptr; ///< yang:value, leaf-lists
    bool anyInsertAttr = false;
};

Attrs readAttrs(const lyd_node* e) {
    Attrs a;
    for (const lyd_meta* m = e->meta; m; m = m->next) {
        std::string_view mod = m->annotation ? m->annotation->module->name : "";
        std::string_view name = m->name;
        const char* val = lyd_get_meta_value(m);
        std::string_view v = val ? val : "";
        if (mod == "ietf-netconf" && name == "operation") {
            if (v == "merge") {
                a.op = Op::Merge;
            } else if (v == "replace") {
                a.op = Op::Replace;
            } else if (v == "create") {
                a.op = Op::Create;
            } else if (v == "delete") {
                a.op = Op::Delete;
            } else if (v == "remove") {
                a.op = Op::Remove;
            } else {
                fail(ErrorTag::BadAttribute, "invalid operation \"" + std::string(v) + "\" at " + pathOf(e),
                     pathOf(e));
            }
        } else if (mod == "yang" && name == "insert") {
            a.anyInsertAttr = true;
            if (v == "first") {
                a.insert = Insert::First;
            } else if (v == "last") {
                a.insert = Insert::Last;
            } else if (v == "before") {
                a.insert = Insert::Before;
            } else if (v == "after") {
                a.insert = Insert::After;
            } else {
                fail(ErrorTag::BadAttribute, "invalid insert \"" + std::string(v) + "\" at " + pathOf(e),
                     pathOf(e));
            }
        } else if (mod == "yang" && name == "key") {
            a.anyInsertAttr = true;
            a.key = val;
        } else if (mod == "yang" && name == "value") {
            a.anyInsertAttr = true;
            a.value = val;
        } else if (mod == "ietf-netconf-with-defaults" && name == "default") {
            // RFC 6243 4.5.2 allows it in edits; the value in the edit is what counts.
        } else {
            fail(ErrorTag::BadAttribute,
                 "unexpected attribute " + std::string(mod) + ":" + std::string(name) + " at " + pathOf(e),
                 pathOf(e));
        }
    }
    return a;
}

/// "[ex:name='eth0'][unit=\"1\"]" (XML prefixes allowed, as RFC 7950 7.8.6 writes them) to the
/// prefix-less form lyd_find_sibling_val accepts.
std::optional<std::string> normalizeKeyPredicate(std::string_view in) {
    std::string out;
    size_t i = 0;
    auto skipWs = [&] {
        while (i < in.size() && (in[i] == ' ' || in[i] == '\t' || in[i] == '\n' || in[i] == '\r')) {
            ++i;
        }
    };
    skipWs();
    if (i == in.size()) {
        return std::nullopt;
    }
    while (i < in.size()) {
        if (in[i] != '[') {
            return std::nullopt;
        }
        ++i;
        skipWs();
        size_t nameStart = i;
        while (i < in.size() && in[i] != '=' && in[i] != ' ' && in[i] != ']') {
            ++i;
        }
        std::string_view name = in.substr(nameStart, i - nameStart);
        if (auto colon = name.find(':'); colon != std::string_view::npos) {
            name = name.substr(colon + 1);
        }
        skipWs();
        if (name.empty() || i == in.size() || in[i] != '=') {
            return std::nullopt;
        }
        ++i;
        skipWs();
        if (i == in.size() || (in[i] != '\'' && in[i] != '"')) {
            return std::nullopt;
        }
        char quote = in[i++];
        size_t valueStart = i;
        while (i < in.size() && in[i] != quote) {
            ++i;
        }
        if (i == in.size()) {
            return std::nullopt;
        }
        std::string_view value = in.substr(valueStart, i - valueStart);
        ++i;
        skipWs();
        if (i == in.size() || in[i] != ']') {
            return std::nullopt;
        }
        ++i;
        skipWs();
        if (!appendKeyPredicate(out, name, value)) {
            return std::nullopt;
        }
    }
    return out;
}

/// Where a (new or existing) user-ordered instance goes.
struct Placement {
    Insert where = Insert::Default;
    lyd_node* anchor = nullptr; ///< Before/After
};

class Editor {
public:
    Editor(lyd_node** forest, UndoLog& undo, ChangeObserver& observer)
        : forest_(forest), undo_(undo), observer_(observer) {}

    void run(const lyd_node* edit, Op defaultOp) {
        for (const lyd_node* e = edit; e; e = e->next) {
            check(e, defaultOp, defaultOp);
        }
        for (const lyd_node* e = edit; e; e = e->next) {
            apply(nullptr, e, defaultOp, nullptr);
        }
    }

private:
    lyd_node** forest_;
    UndoLog& undo_;
    ChangeObserver& observer_;
    /// Edit nodes whose subtree holds a delete/remove or an insert attribute: they cannot be
    /// copied into the target in one go.
    std::unordered_set<const lyd_node*> nonPlain_;
    /// Schema of the opaque edit nodes accepted by checkOpaque.
    std::unordered_map<const lyd_node*, const lysc_node*> opaque_;

    static std::optional<Op> opaqueOp(const lyd_node* e) {
        for (const lyd_attr* at = reinterpret_cast<const lyd_node_opaq*>(e)->attr; at; at = at->next) {
            if (std::string_view(at->name.name) == "operation" && at->name.module_ns &&
                std::string_view(at->name.module_ns) == kNetconfNs) {
                std::string_view v = at->value ? at->value : "";
                return v == "delete" ? Op::Delete : v == "remove" ? Op::Remove : Op::Merge;
            }
        }
        return std::nullopt;
    }

    /// Validates attributes and schema of the whole edit before anything changes; returns
    /// whether the subtree can be duplicated as it is when it does not exist in the target.
    bool check(const lyd_node* e, Op inherited, Op parentOp) {
        if (!e->schema) {
            return checkOpaque(e, inherited);
        }
        if (e->schema->flags & LYS_CONFIG_R) {
            fail(ErrorTag::InvalidValue, "state data cannot be edited: " + pathOf(e), pathOf(e));
        }
        Attrs a = readAttrs(e);
        Op op = a.op.value_or(inherited);
        if (lysc_is_key(e->schema)) {
            if (a.op && *a.op != parentOp) {
                fail(ErrorTag::BadAttribute,
                     std::string("a list key cannot have its own operation (") + toString(*a.op) +
                         "): " + pathOf(e),
                     pathOf(e));
            }
            if (a.anyInsertAttr) {
                fail(ErrorTag::BadAttribute, "insert attributes on a list key: " + pathOf(e), pathOf(e));
            }
            return true;
        }
        if (a.anyInsertAttr) {
            checkInsertAttrs(e, a);
        }
        bool plain = op != Op::Delete && op != Op::Remove && !a.anyInsertAttr;
        if (e->schema->nodetype & (LYS_CONTAINER | LYS_LIST)) {
            for (const lyd_node* c = lyd_child(e); c; c = c->next) {
                plain = check(c, op, op) && plain;
            }
            plain = plain && !namesAnInstanceTwice(lyd_child(e));
        }
        if (!plain) {
            nonPlain_.insert(e);
        }
        return plain;
    }

    static void checkInsertAttrs(const lyd_node* e, const Attrs& a) {
        const std::string path = pathOf(e);
        if (!lysc_is_userordered(e->schema)) {
            fail(ErrorTag::BadAttribute, "insert attributes on a node that is not ordered-by user: " + path,
                 path);
        }
        const bool isList = e->schema->nodetype == LYS_LIST;
        if ((isList && a.value) || (!isList && a.key)) {
            fail(ErrorTag::BadAttribute,
                 std::string("attribute \"") + (isList ? "value" : "key") + "\" does not apply to " + path,
                 path);
        }
        if (a.insert == Insert::Before || a.insert == Insert::After) {
            if (!(isList ? a.key : a.value)) {
                fail(ErrorTag::MissingAttribute,
                     std::string("insert before/after needs the \"") + (isList ? "key" : "value") +
                         "\" attribute: " + path,
                     path);
            }
        } else if (a.insert == Insert::Default) {
            fail(ErrorTag::MissingAttribute, "\"key\"/\"value\" attribute without \"insert\": " + path, path);
        }
    }

    /// An opaque edit node: what libyang's parser (with LYD_PARSE_OPAQ) leaves of a leaf whose
    /// value does not fit its type. Clients write `<mtu nc:operation="delete"/>` with no value, so
    /// delete and remove of a leaf are accepted; anything else reports the value's problem.
    bool checkOpaque(const lyd_node* e, Op inherited) {
        const auto* o = reinterpret_cast<const lyd_node_opaq*>(e);
        const ly_ctx* ctx = LYD_CTX(e);
        const std::string path = pathOf(e);
        const lyd_node* parent = lyd_parent(e);
        if (parent && !parent->schema) {
            fail(ErrorTag::UnknownElement, "unknown element in the edit: " + path, path);
        }
        const lys_module* mod = o->format == LY_VALUE_XML
                                    ? ly_ctx_get_module_implemented_ns(ctx, o->name.module_ns)
                                    : ly_ctx_get_module_implemented(ctx, o->name.module_name);
        const lysc_node* schema =
            mod ? lys_find_child(parent ? parent->schema : nullptr, mod, o->name.name, 0, 0, 0) : nullptr;
        if (!schema) {
            fail(mod ? ErrorTag::UnknownElement : ErrorTag::UnknownNamespace,
                 "unknown element in the edit: " + path, path);
        }
        if (schema->flags & LYS_CONFIG_R) {
            fail(ErrorTag::InvalidValue, "state data cannot be edited: " + path, path);
        }
        const Op op = opaqueOp(e).value_or(inherited);
        if (schema->nodetype == LYS_LEAF && !lysc_is_key(schema) && (op == Op::Delete || op == Op::Remove)) {
            opaque_[e] = schema;
            nonPlain_.insert(e);
            return false;
        }
        if (schema->nodetype == LYS_LIST) {
            fail(ErrorTag::MissingElement, "list entry without all its keys in the edit: " + path, path);
        }
        std::string why = "invalid value";
        if (schema->nodetype & LYD_NODE_TERM) {
            const char* value = o->value ? o->value : "";
            if (lyd_value_validate(ctx, schema, value, std::strlen(value), nullptr, nullptr, nullptr) !=
                LY_SUCCESS) {
                why = lastError(ctx);
            }
        }
        fail(ErrorTag::InvalidValue, why + ": " + path, path);
    }

    const lysc_node* schemaOf(const lyd_node* e) const { return e->schema ? e->schema : opaque_.at(e); }

    lyd_node* find(lyd_node* parent, const lyd_node* e) const {
        lyd_node* siblings = siblingsOf(parent, *forest_);
        if (!siblings) {
            return nullptr;
        }
        lyd_node* match = nullptr;
        // lyd_find_sibling_first compares leaf values when the parent has no hash table, so
        // single-instance nodes are looked up by schema.
        const lysc_node* schema = schemaOf(e);
        LY_ERR rc = isMultiInstance(schema) ? lyd_find_sibling_first(siblings, e, &match)
                                            : lyd_find_sibling_val(siblings, schema, nullptr, 0, &match);
        if (rc == LY_ENOTFOUND) {
            return nullptr;
        }
        checkLy(rc, "looking up the edit target", parent);
        return match;
    }

    /// Resolves the insert attributes of `e` against the target siblings below `parent`.
    Placement placementOf(lyd_node* parent, const lyd_node* e, const Attrs& a, lyd_node* self) const {
        Placement p{a.insert, nullptr};
        if (a.insert != Insert::Before && a.insert != Insert::After) {
            return p;
        }
        const std::string path = pathOf(e);
        std::string lookup;
        if (e->schema->nodetype == LYS_LIST) {
            auto normalized = normalizeKeyPredicate(a.key);
            if (!normalized) {
                fail(ErrorTag::BadAttribute,
                     std::string("invalid key attribute \"") + a.key + "\" at " + path, path);
            }
            lookup = *normalized;
        } else {
            lookup = a.value;
        }
        lyd_node* siblings = siblingsOf(parent, *forest_);
        LY_ERR rc = siblings
                        ? lyd_find_sibling_val(siblings, e->schema, lookup.c_str(), lookup.size(), &p.anchor)
                        : LY_ENOTFOUND;
        if (rc == LY_ENOTFOUND) {
            fail(ErrorTag::DataMissing, "the insert anchor " + lookup + " does not exist for " + path, path,
                 "missing-instance");
        }
        if (rc != LY_SUCCESS) {
            fail(ErrorTag::BadAttribute, "invalid insert anchor \"" + lookup + "\" at " + path, path);
        }
        if (p.anchor == self) {
            fail(ErrorTag::BadAttribute, "an entry cannot be inserted relative to itself: " + path, path);
        }
        return p;
    }

    void apply(lyd_node* parent, const lyd_node* e, Op inherited,
               std::unordered_map<const lysc_node*, lyd_node*>* order) {
        if (!e->schema) {
            // checkOpaque let only delete/remove of a leaf through.
            lyd_node* cur = find(parent, e);
            if (cur && !(cur->flags & LYD_DEFAULT)) {
                remove(cur);
            } else if (opaqueOp(e).value_or(inherited) == Op::Delete) {
                fail(ErrorTag::DataMissing, "data missing, cannot delete: " + pathOf(e), pathOf(e));
            }
            return;
        }
        if (lysc_is_key(e->schema)) {
            return;
        }
        const Attrs a = readAttrs(e);
        const Op op = a.op.value_or(inherited);
        lyd_node* cur = find(parent, e);
        const bool isDefault = cur && (cur->flags & LYD_DEFAULT);
        const uint16_t type = e->schema->nodetype;

        switch (op) {
        case Op::Delete:
        case Op::Remove:
            if (!cur || isDefault) {
                if (op == Op::Delete) {
                    fail(ErrorTag::DataMissing, "data missing, cannot delete: " + pathOf(e), pathOf(e));
                }
                return;
            }
            remove(cur);
            return;
        case Op::None: {
            // A non-presence container has no meaning of its own: it is located even when the
            // tree lacks it (a module without data), and dropped again when nothing lands in it.
            const bool made = !cur;
            if (!cur) {
                if (!lysc_is_np_cont(e->schema)) {
                    fail(ErrorTag::DataMissing, "data missing (default-operation none): " + pathOf(e),
                         pathOf(e));
                }
                cur = createNode(parent, e, Op::None, Placement{}, false); // applies the children too
            } else if (type & (LYS_CONTAINER | LYS_LIST)) {
                applyChildren(cur, e, Op::None, false);
            }
            if (made && !lyd_child(cur)) {
                remove(cur);
            }
            return;
        }
        case Op::Create:
            // A non-presence container has no meaning of its own (RFC 7950 7.5.1): creating one
            // that exists creates its children (as Netopeer2/sysrepo do).
            if (cur && !isDefault && !lysc_is_np_cont(e->schema)) {
                fail(ErrorTag::DataExists, "data already exists: " + pathOf(e), pathOf(e));
            }
            break;
        case Op::Merge:
        case Op::Replace:
            break;
        }

        // merge, replace, create
        Placement place = placementOf(parent, e, a, cur);
        if (place.where == Insert::Default && order && lysc_is_userordered(e->schema)) {
            // Inside a replace the edit's order is the new order.
            auto it = order->find(e->schema);
            place =
                it == order->end() ? Placement{Insert::First, nullptr} : Placement{Insert::After, it->second};
        }
        lyd_node* placed = cur;
        if (!cur) {
            placed = createNode(parent, e, op, place, !nonPlain_.count(e));
        } else if (type == LYS_LEAF) {
            setValue(cur, e);
        } else if (type == LYS_LEAFLIST) {
            if (isDefault) {
                setValue(cur, e);
            }
            move(cur, place);
        } else if (type & LYD_NODE_ANY) {
            // Opaque content: replaced whole.
            remove(cur);
            placed = createNode(parent, e, op, place, true);
        } else {
            if (type == LYS_LIST) {
                move(cur, place);
            }
            applyChildren(cur, e, op, op == Op::Replace);
            if (op == Op::Replace) {
                removeUnmentioned(cur, e);
            }
        }
        if (order && placed && lysc_is_userordered(e->schema)) {
            (*order)[e->schema] = placed;
        }
    }

    void applyChildren(lyd_node* target, const lyd_node* e, Op op, bool replacing) {
        std::unordered_map<const lysc_node*, lyd_node*> order;
        for (const lyd_node* c = lyd_child(e); c; c = c->next) {
            apply(target, c, op, replacing ? &order : nullptr);
        }
    }

    /// Replace: target children the edit does not mention go away. Default nodes stay: they are
    /// absent already, and validation would re-create them anyway.
    void removeUnmentioned(lyd_node* target, const lyd_node* e) {
        std::vector<lyd_node*> doomed;
        const lyd_node* editChildren = lyd_child(e);
        for (lyd_node* c = lyd_child(target); c; c = c->next) {
            if (lysc_is_key(c->schema) || (c->flags & LYD_DEFAULT)) {
                continue;
            }
            lyd_node* match = nullptr;
            LY_ERR rc = LY_ENOTFOUND;
            if (editChildren) {
                rc = isMultiInstance(c->schema)
                         ? lyd_find_sibling_first(editChildren, c, &match)
                         : lyd_find_sibling_val(editChildren, c->schema, nullptr, 0, &match);
            }
            if (rc == LY_ENOTFOUND) {
                doomed.push_back(c);
            } else {
                checkLy(rc, "matching replaced children", c);
            }
        }
        for (lyd_node* c : doomed) {
            remove(c);
        }
    }

    /// Creates the edit node `e` in the target: the whole subtree when `whole`, otherwise the
    /// node alone (with its keys) and then its children one by one with `op`.
    lyd_node* createNode(lyd_node* parent, const lyd_node* e, Op op, const Placement& place, bool whole) {
        lyd_node* dup = nullptr;
        checkLy(lyd_dup_single(e, nullptr, LYD_DUP_NO_META | (whole ? LYD_DUP_RECURSIVE : 0), &dup),
                "copying the edit", e);
        Subtree owned{dup};
        removeOtherCases(parent, e->schema);
        if (e->schema->nodetype == LYS_LEAFLIST) {
            removeDefaultInstances(parent, e->schema);
        }
        auto entry = std::make_unique<Entry>();
        entry->kind = Entry::Kind::Created;
        entry->defaultAncestors = defaultChain(parent);
        insertNew(parent, dup, place);
        owned.release(); // the tree owns it now
        entry->path = pathOf(dup);
        undo_.push(std::move(entry));
        observer_.created(dup);
        if (!whole && (e->schema->nodetype & (LYS_CONTAINER | LYS_LIST))) {
            applyChildren(dup, e, op, false);
        }
        return dup;
    }

    void insertNew(lyd_node* parent, lyd_node* node, const Placement& place) {
        switch (place.where) {
        case Insert::Default:
        case Insert::Last:
            linkNode(forest_, parent, node);
            break;
        case Insert::First:
            if (lyd_node* first = firstInstance(siblingsOf(parent, *forest_), node->schema)) {
                checkLy(lyd_insert_before(first, node), "inserting first", first);
            } else {
                linkNode(forest_, parent, node);
            }
            break;
        case Insert::Before:
            checkLy(lyd_insert_before(place.anchor, node), "inserting before", place.anchor);
            break;
        case Insert::After:
            checkLy(lyd_insert_after(place.anchor, node), "inserting after", place.anchor);
            break;
        }
        fixFirst(forest_);
    }

    /// Moves an existing user-ordered instance; reports it only when its position changes.
    void move(lyd_node* node, const Placement& place) {
        if (place.where == Insert::Default || place.anchor == node) {
            return;
        }
        lyd_node* parent = lyd_parent(node);
        const bool isLast = !node->next || node->next->schema != node->schema;
        switch (place.where) {
        case Insert::Default:
            return;
        case Insert::First:
            if (firstInstance(siblingsOf(parent, *forest_), node->schema) == node) {
                return;
            }
            break;
        case Insert::Last:
            if (isLast) {
                return;
            }
            break;
        case Insert::Before:
            if (node->next == place.anchor) {
                return;
            }
            break;
        case Insert::After:
            if (place.anchor->next == node) {
                return;
            }
            break;
        }
        auto entry = std::make_unique<Entry>();
        entry->kind = Entry::Kind::Moved;
        entry->anchor = previousInstancePath(node);
        if (place.where == Insert::Last) {
            unlinkNode(forest_, node);
            linkNode(forest_, parent, node);
            fixFirst(forest_);
        } else {
            insertNew(parent, node, place);
        }
        entry->path = pathOf(node);
        const std::string oldAnchor = entry->anchor;
        undo_.push(std::move(entry));
        observer_.moved(node, oldAnchor);
    }

    void setValue(lyd_node* cur, const lyd_node* e) {
        auto entry = std::make_unique<Entry>();
        entry->kind = Entry::Kind::Changed;
        entry->oldValue = lyd_get_value(cur);
        entry->oldDefault = cur->flags & LYD_DEFAULT;
        entry->defaultAncestors = defaultChain(lyd_parent(cur));
        LY_ERR rc = lyd_change_term(cur, lyd_get_value(e));
        if (rc == LY_ENOT) {
            return;
        }
        if (rc != LY_SUCCESS && rc != LY_EEXIST) {
            fail(ErrorTag::InvalidValue, "cannot set " + pathOf(e) + ": " + lastError(LYD_CTX(cur)),
                 pathOf(e));
        }
        entry->path = pathOf(cur);
        const Entry& recorded = *entry;
        undo_.push(std::move(entry));
        observer_.changed(cur, recorded.oldValue, recorded.oldDefault);
    }

    void remove(lyd_node* node) {
        observer_.deleting(node);
        auto entry = std::make_unique<Entry>();
        entry->kind = Entry::Kind::Deleted;
        lyd_node* parent = lyd_parent(node);
        entry->path = parent ? pathOf(parent) : std::string();
        if (isMultiInstance(node->schema)) {
            entry->anchor = previousInstancePath(node);
        }
        unlinkNode(forest_, node);
        entry->subtree.reset(node);
        undo_.push(std::move(entry));
    }

    void removeAllInstances(lyd_node* parent, const lysc_node* schema) {
        if (schema->nodetype & (LYS_CHOICE | LYS_CASE)) {
            for (const lysc_node* c = lysc_node_child(schema); c && c->parent == schema; c = c->next) {
                removeAllInstances(parent, c);
            }
            return;
        }
        while (lyd_node* inst = firstInstance(siblingsOf(parent, *forest_), schema)) {
            remove(inst);
        }
    }

    /// RFC 7950 7.9.4: creating a node of one case removes the nodes of the choice's other cases.
    void removeOtherCases(lyd_node* parent, const lysc_node* schema) {
        for (const lysc_node* s = schema; s->parent && s->parent->nodetype == LYS_CASE;
             s = s->parent->parent) {
            const lysc_node* ownCase = s->parent;
            const lysc_node* choice = ownCase->parent;
            for (const lysc_node* c = lysc_node_child(choice); c; c = c->next) {
                if (c != ownCase) {
                    removeAllInstances(parent, c);
                }
            }
        }
    }

    /// RFC 7950 7.7.2: default leaf-list values apply only while the leaf-list has no explicit
    /// instance.
    void removeDefaultInstances(lyd_node* parent, const lysc_node* schema) {
        lyd_node* inst = firstInstance(siblingsOf(parent, *forest_), schema);
        std::vector<lyd_node*> defaults;
        for (; inst && inst->schema == schema; inst = inst->next) {
            if (inst->flags & LYD_DEFAULT) {
                defaults.push_back(inst);
            }
        }
        for (lyd_node* d : defaults) {
            remove(d);
        }
    }
};

} // namespace

UndoLog::UndoLog() = default;
UndoLog::~UndoLog() = default;
UndoLog::UndoLog(UndoLog&&) noexcept = default;
UndoLog& UndoLog::operator=(UndoLog&&) noexcept = default;

bool UndoLog::empty() const {
    return entries_.empty();
}

std::size_t UndoLog::size() const {
    return entries_.size();
}

void UndoLog::push(std::unique_ptr<Entry> entry) {
    entries_.push_back(std::move(entry));
}

void UndoLog::clear() {
    entries_.clear();
}

void UndoLog::undo(lyd_node** tree) {
    while (!entries_.empty()) {
        std::unique_ptr<Entry> e = std::move(entries_.back());
        entries_.pop_back();
        switch (e->kind) {
        case Entry::Kind::Created: {
            // Validation may have removed it already without a trace in its diff: libyang drops
            // an empty non-presence container of a case (found by tests/fuzz/fuzz_edit).
            lyd_node* node = findPath(*tree, e->path);
            if (!node) {
                break;
            }
            lyd_node* parent = lyd_parent(node);
            unlinkNode(tree, node);
            lyd_free_tree(node);
            restoreDefaultChain(parent, e->defaultAncestors);
            break;
        }
        case Entry::Kind::Deleted: {
            if (isSystemOrderedInstance(e->subtree.get())) {
                std::vector<std::unique_ptr<Entry>> run;
                run.push_back(std::move(e));
                while (!entries_.empty() && entries_.back()->kind == Entry::Kind::Deleted &&
                       entries_.back()->path == run.front()->path &&
                       entries_.back()->subtree->schema == run.front()->subtree->schema) {
                    run.push_back(std::move(entries_.back()));
                    entries_.pop_back();
                }
                restoreSystemOrderedRun(tree, run.front()->path, run);
                break;
            }
            lyd_node* parent =
                e->path.empty() ? nullptr : parentToRestore(tree, e->path, LYD_CTX(e->subtree.get()));
            lyd_node* node = e->subtree.get();
            linkNode(tree, parent, node);
            e->subtree.release();
            if (isMultiInstance(node->schema)) {
                restorePosition(tree, node, e->anchor);
            }
            break;
        }
        case Entry::Kind::Changed: {
            lyd_node* node = mustFind(*tree, e->path);
            LY_ERR rc = lyd_change_term(node, e->oldValue.c_str());
            if (rc != LY_SUCCESS && rc != LY_ENOT && rc != LY_EEXIST) {
                checkLy(rc, "undo: restoring the value of", node);
            }
            if (e->oldDefault) {
                node->flags |= LYD_DEFAULT;
            }
            restoreDefaultChain(lyd_parent(node), e->defaultAncestors);
            break;
        }
        case Entry::Kind::Moved:
            restorePosition(tree, mustFind(*tree, e->path), e->anchor);
            break;
        }
    }
}

void applyEdit(lyd_node** tree, const lyd_node* edit, DefaultOperation defaultOperation, UndoLog& undo,
               ChangeObserver& observer) {
    Op op = Op::Merge;
    switch (defaultOperation) {
    case DefaultOperation::Merge:
        op = Op::Merge;
        break;
    case DefaultOperation::Replace:
        op = Op::Replace;
        break;
    case DefaultOperation::None:
        op = Op::None;
        break;
    }
    Editor(tree, undo, observer).run(edit, op);
}

} // namespace ncstore::ds::detail
