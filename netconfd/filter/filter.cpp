#include "filter.hpp"

#include "ncstore/log.hpp"

#include <libyang/plugins_types.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ncstore::filter {

namespace {

// libyang's lookups are not all read-only. lyd_find_sibling_val without a key or value (and the
// XPath evaluator, which uses it for every step to a container or leaf) swaps the callback of the
// parent's children hash table for the time of the lookup: a keyed lookup on another thread
// meanwhile finds nothing, and two such lookups at once can leave the wrong callback in place for
// good (then every keyed lookup, a writer's too, misses). The datastore's readers share a tree,
// so: this file's own first-instance lookups walk the siblings and never touch the hash table
// (firstInstance), subtree filters take this lock shared for their keyed lookups, and an XPath
// evaluation takes it alone.
std::shared_mutex& lookupLock() {
    static std::shared_mutex lock;
    return lock;
}

/// The first data node of schema `sn` among the siblings of `siblings`, by a walk: libyang keeps
/// the instances of one schema node adjacent, so this stops at the first one.
const lyd_node* firstInstance(const lyd_node* siblings, const lysc_node* sn) {
    for (const lyd_node* d = siblings ? lyd_first_sibling(siblings) : nullptr; d; d = d->next) {
        if (d->schema == sn) {
            return d;
        }
    }
    return nullptr;
}

constexpr std::string_view kNetconfBaseNs = "urn:ietf:params:xml:ns:netconf:base:1.0";

// ---------------------------------------------------------------------------------------------
// Selection: which data nodes go to the output. Evaluation first marks nodes here (so that
// several filter branches reaching one data node merge), then build() duplicates them once.

struct Sel {
    bool whole = false; ///< the data node with its whole subtree
    std::vector<const lyd_node*> order;
    std::unordered_map<const lyd_node*, std::unique_ptr<Sel>> kids;

    /// The selection of child `d`, created when missing; `created` tells which.
    Sel& child(const lyd_node* d, bool* created = nullptr) {
        auto [it, inserted] = kids.try_emplace(d);
        if (inserted) {
            it->second = std::make_unique<Sel>();
            order.push_back(d);
        }
        if (created) {
            *created = inserted;
        }
        return *it->second;
    }
    void selectWhole(const lyd_node* d) {
        if (whole) {
            return;
        }
        Sel& c = child(d);
        c.whole = true;
        c.kids.clear();
        c.order.clear();
    }
    /// Undoes child(d) for the child created last.
    void dropLast(const lyd_node* d) {
        kids.erase(d);
        if (!order.empty() && order.back() == d) {
            order.pop_back();
        }
    }
};

lyd_node* dupInto(const lyd_node* d, lyd_node* parentCopy, uint32_t options) {
    lyd_node* copy = nullptr;
    if (lyd_dup_single(d, reinterpret_cast<lyd_node_inner*>(parentCopy), options | LYD_DUP_WITH_FLAGS,
                       &copy) != LY_SUCCESS) {
        throw Error("duplicating " + pathOf(d) + " for filter output failed: " + lastError(LYD_CTX(d)));
    }
    return copy;
}

/// Children of a Sel in data order. Instances of an ordered-by-user list must keep their order
/// and users expect the datastore's order for the others too; one walk over the siblings.
std::vector<const lyd_node*> inDataOrder(const Sel& sel, const lyd_node* firstSibling) {
    if (sel.order.size() < 2) {
        return sel.order;
    }
    std::vector<const lyd_node*> out;
    out.reserve(sel.order.size());
    for (const lyd_node* it = firstSibling; it && out.size() < sel.order.size(); it = it->next) {
        if (sel.kids.count(it)) {
            out.push_back(it);
        }
    }
    return out;
}

/// Duplicates the selected nodes under `parentCopy`, or, at the top, into the forest `result`.
void build(const Sel& sel, const lyd_node* dataParent, const lyd_node* dataFirst, lyd_node* parentCopy,
           Tree& result) {
    const bool parentIsList = dataParent && dataParent->schema && dataParent->schema->nodetype == LYS_LIST;
    for (const lyd_node* d : inDataOrder(sel, dataFirst)) {
        // lyd_dup_single always copies a list entry's keys along with the entry.
        if (parentIsList && lysc_is_key(d->schema)) {
            continue;
        }
        const Sel& s = *sel.kids.at(d);
        lyd_node* copy = dupInto(d, parentCopy, s.whole ? LYD_DUP_RECURSIVE : 0);
        if (!parentCopy) {
            Subtree owned{copy};
            if (insertSiblings(result, copy) != LY_SUCCESS) {
                throw Error("assembling filter output failed: " + lastError(LYD_CTX(d)));
            }
            owned.release(); // now part of `result`
        }
        if (!s.whole) {
            build(s, d, lyd_child(d), copy, result);
        }
    }
}

Tree buildTree(const Sel& root, const lyd_node* dataFirst) {
    Tree result;
    build(root, nullptr, dataFirst, nullptr, result);
    return result;
}

const lyd_node* firstOf(const lyd_node* node) {
    return node ? lyd_first_sibling(node) : nullptr;
}

// ---------------------------------------------------------------------------------------------
// The filter, read once from libyang's mix of schema and opaque nodes.

enum class Kind { Containment, Selection, ContentMatch };

struct FNode {
    const lyd_node* node = nullptr;
    std::string ns; ///< "" matches any namespace
    std::string name;
    std::string value;
    Kind kind = Kind::Selection;
    std::vector<FNode> cms, sels, conts; ///< children by kind
};

bool blank(const char* s) {
    for (; s && *s; ++s) {
        if (!std::strchr(" \t\r\n", *s)) {
            return false;
        }
    }
    return true;
}

FNode readFilter(const lyd_node* n) {
    FNode f;
    f.node = n;
    const char* value = nullptr;
    if (n->schema) {
        f.ns = n->schema->module->ns;
        f.name = n->schema->name;
        if (n->schema->nodetype & LYD_NODE_TERM) {
            value = lyd_get_value(n);
        }
    } else {
        const auto* o = reinterpret_cast<const lyd_node_opaq*>(n);
        f.ns = o->format == LY_VALUE_XML && o->name.module_ns ? o->name.module_ns : "";
        f.name = o->name.name;
        value = o->value;
    }
    if (f.ns == kNetconfBaseNs) {
        f.ns.clear();
    }
    for (const lyd_node* c = lyd_child(n); c; c = c->next) {
        // A node libyang made up (a default) was not written by the client.
        if (c->schema && (c->schema->nodetype & LYD_NODE_TERM) && (c->flags & LYD_DEFAULT)) {
            continue;
        }
        FNode child = readFilter(c);
        switch (child.kind) {
        case Kind::ContentMatch:
            f.cms.push_back(std::move(child));
            break;
        case Kind::Selection:
            f.sels.push_back(std::move(child));
            break;
        case Kind::Containment:
            f.conts.push_back(std::move(child));
            break;
        }
    }
    if (!f.cms.empty() || !f.sels.empty() || !f.conts.empty()) {
        f.kind = Kind::Containment;
    } else if (!blank(value)) {
        f.kind = Kind::ContentMatch;
        f.value = value;
    } else {
        f.kind = Kind::Selection;
    }
    return f;
}

// ---------------------------------------------------------------------------------------------

struct ErrItemDeleter {
    void operator()(ly_err_item* e) const noexcept { ly_err_free(e); }
};
using ErrItem = std::unique_ptr<ly_err_item, ErrItemDeleter>;

/// A value stored by a type plugin outside any data node, released by the same plugin.
struct StoredValue {
    const ly_ctx* ctx;
    const lysc_type* type;
    lyd_value value{};
    bool stored = false;
    StoredValue(const ly_ctx* c, const lysc_type* t) : ctx(c), type(t) {}
    StoredValue(const StoredValue&) = delete;
    StoredValue& operator=(const StoredValue&) = delete;
    ~StoredValue() {
        if (stored) {
            type->plugin->free(ctx, &value);
        }
    }
};

struct InDeleter {
    void operator()(ly_in* in) const noexcept { ly_in_free(in, 0); }
};
using Input = std::unique_ptr<ly_in, InDeleter>;

class SubtreeEvaluator {
public:
    explicit SubtreeEvaluator(const ly_ctx* ctx) : ctx_(ctx) {}

    /// Filter element `f` against the children of `dataParent` (nullptr: the top-level forest
    /// starting at `topFirst`); selected nodes go into `parentSel`. Returns whether any did.
    bool level(const lyd_node* dataParent, const lyd_node* topFirst, const FNode& f, Sel& parentSel) {
        const lyd_node* first = dataParent ? lyd_child(dataParent) : topFirst;
        if (!first) {
            return false;
        }
        bool any = false;
        for (const lysc_node* sn : schemasFor(dataParent, f)) {
            switch (f.kind) {
            case Kind::Selection:
                forInstances(first, sn, [&](const lyd_node* d) {
                    parentSel.selectWhole(d);
                    any = true;
                });
                break;
            case Kind::ContentMatch:
                if (const lyd_node* d = findTerm(first, sn, f)) {
                    parentSel.selectWhole(d);
                    any = true;
                }
                break;
            case Kind::Containment:
                if (sn->nodetype & LYD_NODE_TERM) {
                    break; // element with children cannot match a leaf
                }
                if (sn->nodetype & LYD_NODE_ANY) {
                    forInstances(first, sn, [&](const lyd_node* d) {
                        parentSel.selectWhole(d);
                        any = true;
                    });
                    break;
                }
                if (f.node->schema == sn && allKeysMatched(sn, f)) {
                    // The filter's entry is a list entry of this very schema node, hashed by its
                    // keys like the data's: look it up directly (no predicate to parse).
                    lyd_node* d = nullptr;
                    if (lyd_find_sibling_first(first, f.node, &d) == LY_SUCCESS) {
                        any |= containment(d, f, parentSel);
                    }
                    break;
                }
                if (auto pred = keyPredicate(sn, f)) {
                    lyd_node* d = nullptr;
                    if (lyd_find_sibling_val(first, sn, pred->c_str(), pred->size(), &d) == LY_SUCCESS) {
                        any |= containment(d, f, parentSel);
                    }
                    break;
                }
                forInstances(first, sn, [&](const lyd_node* d) { any |= containment(d, f, parentSel); });
                break;
            }
        }
        return any;
    }

private:
    /// Containment node `f` matched by name against data node `d`.
    bool containment(const lyd_node* d, const FNode& f, Sel& parentSel) {
        std::vector<const lyd_node*> matched;
        matched.reserve(f.cms.size());
        for (const FNode& cm : f.cms) {
            const lyd_node* m = nullptr;
            for (const lysc_node* sn : schemasFor(d, cm)) {
                if ((m = findTerm(lyd_child(d), sn, cm))) {
                    break;
                }
            }
            if (!m) {
                return false;
            }
            matched.push_back(m);
        }
        if (f.sels.empty() && f.conts.empty()) {
            parentSel.selectWhole(d);
            return true;
        }
        if (parentSel.whole) {
            return true;
        }
        bool created = false;
        Sel& me = parentSel.child(d, &created);
        if (me.whole) {
            return true;
        }
        for (const lyd_node* m : matched) {
            me.selectWhole(m);
        }
        bool any = !f.cms.empty();
        for (const FNode& s : f.sels) {
            any |= level(d, nullptr, s, me);
        }
        for (const FNode& c : f.conts) {
            any |= level(d, nullptr, c, me);
        }
        if (!any && created) {
            parentSel.dropLast(d);
        }
        return any;
    }

    /// Schema nodes that filter element `f` names among the possible children of `dataParent`.
    std::vector<const lysc_node*> schemasFor(const lyd_node* dataParent, const FNode& f) const {
        std::vector<const lysc_node*> out;
        const lysc_node* parentSchema = dataParent ? dataParent->schema : nullptr;
        if (dataParent && !parentSchema) {
            return out; // opaque data: nothing we can name
        }
        if (!f.ns.empty()) {
            const lys_module* mod = ly_ctx_get_module_implemented_ns(ctx_, f.ns.c_str());
            if (!mod) {
                return out;
            }
            if (const lysc_node* sn =
                    lys_find_child(parentSchema, mod, f.name.c_str(), f.name.size(), 0, 0)) {
                out.push_back(sn);
            }
            return out;
        }
        if (parentSchema) {
            for (const lysc_node* sn = nullptr; (sn = lys_getnext(sn, parentSchema, nullptr, 0));) {
                if (f.name == sn->name) {
                    out.push_back(sn);
                }
            }
            return out;
        }
        uint32_t idx = 0;
        for (const lys_module* mod; (mod = ly_ctx_get_module_iter(ctx_, &idx));) {
            if (!mod->implemented || !mod->compiled) {
                continue;
            }
            if (const lysc_node* sn = lys_find_child(nullptr, mod, f.name.c_str(), f.name.size(), 0, 0)) {
                out.push_back(sn);
            }
        }
        return out;
    }

    template <typename Fn> static void forInstances(const lyd_node* first, const lysc_node* sn, Fn&& fn) {
        // libyang keeps the instances of one schema node adjacent.
        for (const lyd_node* d = firstInstance(first, sn); d && d->schema == sn; d = d->next) {
            fn(d);
        }
    }

    /// The canonical form of content-match value `f` as a value of leaf/leaf-list `sn`, or
    /// nullopt when it is not a valid value of that type (then nothing can match it).
    std::optional<std::string> canonical(const lysc_node* sn, const FNode& f) const {
        if (f.node->schema) {
            return f.value; // libyang already stored it as a value of this very node
        }
        const lysc_type* type = sn->nodetype == LYS_LEAF
                                    ? reinterpret_cast<const lysc_node_leaf*>(sn)->type
                                    : reinterpret_cast<const lysc_node_leaflist*>(sn)->type;
        const auto* o = reinterpret_cast<const lyd_node_opaq*>(f.node);
        StoredValue v{ctx_, type};
        ly_err_item* rawErr = nullptr;
        LY_ERR rc = type->plugin->store(ctx_, type, f.value.c_str(), f.value.size(), 0, o->format,
                                        o->val_prefix_data, LYD_HINT_DATA, sn, &v.value, nullptr, &rawErr);
        ErrItem err{rawErr}; // why it is invalid does not matter here: it just cannot match
        if (rc != LY_SUCCESS && rc != LY_EINCOMPLETE) {
            return std::nullopt;
        }
        v.stored = true;
        const char* c = lyd_value_get_canonical(ctx_, &v.value);
        return c ? std::optional<std::string>(c) : std::nullopt;
    }

    /// The leaf (or leaf-list entry) `sn` among `first`'s siblings whose value is `f`'s.
    const lyd_node* findTerm(const lyd_node* first, const lysc_node* sn, const FNode& f) const {
        if (!first || !(sn->nodetype & LYD_NODE_TERM)) {
            return nullptr;
        }
        auto value = canonical(sn, f);
        if (!value) {
            return nullptr;
        }
        if (sn->nodetype == LYS_LEAFLIST) {
            lyd_node* m = nullptr;
            if (lyd_find_sibling_val(first, sn, value->c_str(), value->size(), &m) != LY_SUCCESS) {
                return nullptr;
            }
            return m;
        }
        const lyd_node* leaf = firstInstance(first, sn);
        return leaf && *value == lyd_get_value(leaf) ? leaf : nullptr;
    }

    /// Whether list `sn` has keys and `f` has a content match for each of them.
    static bool allKeysMatched(const lysc_node* sn, const FNode& f) {
        if (sn->nodetype != LYS_LIST || (sn->flags & LYS_KEYLESS)) {
            return false;
        }
        for (const lysc_node* key = lysc_node_child(sn); key && lysc_is_key(key); key = key->next) {
            bool found = false;
            for (const FNode& c : f.cms) {
                if (c.name == key->name && (c.ns.empty() || c.ns == key->module->ns)) {
                    found = true;
                    break;
                }
            }
            if (!found) {
                return false;
            }
        }
        return true;
    }

    /// "[k1='v1'][k2='v2']" when `f` (a containment node for list `sn`) has a content match for
    /// every key of the list, so the entry is found by hash instead of a scan.
    std::optional<std::string> keyPredicate(const lysc_node* sn, const FNode& f) const {
        if (sn->nodetype != LYS_LIST || (sn->flags & LYS_KEYLESS) || f.cms.empty()) {
            return std::nullopt;
        }
        std::string pred;
        for (const lysc_node* key = lysc_node_child(sn); key && lysc_is_key(key); key = key->next) {
            const FNode* cm = nullptr;
            for (const FNode& c : f.cms) {
                if (c.name == key->name && (c.ns.empty() || c.ns == key->module->ns)) {
                    cm = &c;
                    break;
                }
            }
            if (!cm) {
                return std::nullopt;
            }
            auto value = canonical(key, *cm);
            if (!value) {
                return std::nullopt;
            }
            if (!appendKeyPredicate(pred, key->name, *value)) {
                return std::nullopt;
            }
        }
        return pred.empty() ? std::nullopt : std::optional<std::string>(std::move(pred));
    }

    const ly_ctx* ctx_;
};

// ---------------------------------------------------------------------------------------------
// XPath

bool nameStart(char c) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool nameChar(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
}

/// The module whose only top-level data node is called `name`, or nullptr when none or several.
const lys_module* topLevelOwner(const ly_ctx* ctx, const std::string& name) {
    const lys_module* found = nullptr;
    uint32_t idx = 0;
    for (const lys_module* mod; (mod = ly_ctx_get_module_iter(ctx, &idx));) {
        if (!mod->implemented || !mod->compiled) {
            continue;
        }
        if (lys_find_child(nullptr, mod, name.c_str(), name.size(), 0, 0)) {
            if (found) {
                return nullptr;
            }
            found = mod;
        }
    }
    return found;
}

/// Adds the module name to the first step of absolute location paths that have no prefix
/// ("/interfaces/..." -> "/ietf-interfaces:interfaces/..."), which libyang's JSON-prefixed
/// XPath cannot resolve on its own.
std::string qualifyTopLevel(const ly_ctx* ctx, const std::string& expr) {
    std::string out;
    out.reserve(expr.size() + 32);
    char prevSignificant = 0; // last non-space character copied, outside literals
    for (std::size_t i = 0; i < expr.size();) {
        char c = expr[i];
        if (c == '\'' || c == '"') {
            std::size_t end = expr.find(c, i + 1);
            end = end == std::string::npos ? expr.size() : end + 1;
            out.append(expr, i, end - i);
            i = end;
            prevSignificant = c;
            continue;
        }
        if (c == '/') {
            bool absoluteStart = prevSignificant == 0 || std::strchr("|([,=<>!+", prevSignificant);
            std::size_t j = i + 1;
            if (j < expr.size() && expr[j] == '/') {
                ++j;
            }
            out.append(expr, i, j - i);
            i = j;
            prevSignificant = '/';
            if (absoluteStart && i < expr.size() && nameStart(expr[i])) {
                std::size_t k = i;
                while (k < expr.size() && nameChar(expr[k])) {
                    ++k;
                }
                bool prefixed = k < expr.size() && expr[k] == ':';
                bool function = k < expr.size() && expr[k] == '(';
                if (!prefixed && !function) {
                    std::string name = expr.substr(i, k - i);
                    if (const lys_module* mod = topLevelOwner(ctx, name)) {
                        out += mod->name;
                        out += ':';
                    }
                }
            }
            continue;
        }
        out += c;
        if (!std::isspace(static_cast<unsigned char>(c))) {
            prevSignificant = c;
        }
        ++i;
    }
    return out;
}

// ---------------------------------------------------------------------------------------------
// Printing a selection directly from the data: no copy of the selected subtrees.

void appendEscapedAttr(std::string& out, const char* text) {
    for (; *text; ++text) {
        switch (*text) {
        case '&':
            out += "&amp;";
            break;
        case '<':
            out += "&lt;";
            break;
        case '"':
            out += "&quot;";
            break;
        default:
            out += *text;
        }
    }
}

void render(const Sel& sel, const lyd_node* dataParent, const lyd_node* dataFirst, uint32_t options,
            std::string& out) {
    const bool parentIsList = dataParent && dataParent->schema && dataParent->schema->nodetype == LYS_LIST;
    for (const lyd_node* d : inDataOrder(sel, dataFirst)) {
        if (parentIsList && lysc_is_key(d->schema)) {
            continue; // printed with the entry
        }
        const Sel& s = *sel.kids.at(d);
        if (s.whole) {
            out += printTree(d, LYD_XML, options);
            continue;
        }
        std::string inner;
        const bool isList = d->schema->nodetype == LYS_LIST;
        if (isList) {
            for (const lyd_node* k = lyd_child(d); k && lysc_is_key(k->schema); k = k->next) {
                inner += printTree(k, LYD_XML, options);
            }
        }
        render(s, d, lyd_child(d), options, inner);
        // What libyang's printer does with a container whose children all stay unprinted
        // (defaults in explicit/trim mode): a non-presence container disappears.
        if (inner.empty() && !isList && !(d->schema->flags & LYS_PRESENCE) &&
            !(options & LYD_PRINT_KEEPEMPTYCONT)) {
            continue;
        }
        out += '<';
        out += d->schema->name;
        if (!dataParent || dataParent->schema->module != d->schema->module) {
            out += " xmlns=\"";
            appendEscapedAttr(out, d->schema->module->ns);
            out += '"';
        }
        if (inner.empty()) {
            out += "/>";
            continue;
        }
        out += '>';
        out += inner;
        out += "</";
        out += d->schema->name;
        out += '>';
    }
}

/// Data nodes chosen by a filter, before output.
struct Selection {
    Sel root;
    const lyd_node* first = nullptr; ///< first top-level data node
};

Selection selectSubtree(const lyd_node* data, const lyd_node* filter) {
    Selection out;
    out.first = firstOf(data);
    if (!out.first || !filter) {
        return out;
    }
    SubtreeEvaluator eval(LYD_CTX(out.first));
    std::shared_lock lookups(lookupLock());
    for (const lyd_node* f = firstOf(filter); f; f = f->next) {
        FNode fn = readFilter(f);
        eval.level(nullptr, out.first, fn, out.root);
    }
    return out;
}

Selection selectSubtreeOfAnyxml(const lyd_node* data, const lyd_node* filterNode);

Selection selectSubtreeOfXml(const lyd_node* data, const ly_ctx* ctx, const std::string& xml) {
    if (blank(xml.c_str())) {
        return {};
    }
    // Parsed as the server gets it, as the value of ietf-netconf's filter anyxml: libyang then
    // keeps elements it cannot resolve (list entries without keys, ...) as opaque nodes, where
    // a data parse would reject them.
    if (ly_ctx_get_module_implemented(ctx, "ietf-netconf")) {
        const std::string rpc = "<rpc xmlns=\"urn:ietf:params:xml:ns:netconf:base:1.0\" message-id=\"0\">"
                                "<get-config><source><running/></source><filter type=\"subtree\">" +
                                xml + "</filter></get-config></rpc>";
        ly_in* rawIn = nullptr;
        if (ly_in_new_memory(rpc.c_str(), &rawIn) != LY_SUCCESS) {
            throw Error("subtree filter: out of memory");
        }
        Input in{rawIn};
        lyd_node* env = nullptr;
        lyd_node* op = nullptr;
        LY_ERR rc = lyd_parse_op(ctx, nullptr, in.get(), LYD_XML, LYD_TYPE_RPC_NETCONF, &env, &op);
        Tree envOwner{env};
        Tree opOwner{op};
        if (rc != LY_SUCCESS) {
            throw Error("subtree filter is not well-formed: " + lastError(ctx));
        }
        lyd_node* f = nullptr;
        if (lyd_find_path(op, "filter", 0, &f) != LY_SUCCESS || !f->schema ||
            !(f->schema->nodetype & LYD_NODE_ANY)) {
            throw Error("subtree filter: no filter after parsing");
        }
        // Not selectSubtreeOfAnyxml(): text that libyang keeps as a string would come back here
        // and recurse until the stack overflows (a filter of "%" stopped the server).
        const auto* any = reinterpret_cast<const lyd_node_any*>(f);
        if (any->value_type != LYD_ANYDATA_DATATREE) {
            throw Error("subtree filter: text where elements are expected");
        }
        return selectSubtree(data, any->value.tree);
    }
    lyd_node* parsed = nullptr;
    LY_ERR rc = lyd_parse_data_mem(ctx, xml.c_str(), LYD_XML, LYD_PARSE_ONLY | LYD_PARSE_OPAQ, 0, &parsed);
    Tree filter{parsed};
    if (rc != LY_SUCCESS) {
        throw Error("subtree filter is not well-formed: " + lastError(ctx));
    }
    return selectSubtree(data, filter.get());
}

Selection selectSubtreeOfAnyxml(const lyd_node* data, const lyd_node* filterNode) {
    if (!filterNode || !filterNode->schema || !(filterNode->schema->nodetype & LYD_NODE_ANY)) {
        throw Error("subtree filter: expected the anyxml filter node");
    }
    const auto* any = reinterpret_cast<const lyd_node_any*>(filterNode);
    switch (any->value_type) {
    case LYD_ANYDATA_DATATREE:
        return selectSubtree(data, any->value.tree);
    case LYD_ANYDATA_XML:
    case LYD_ANYDATA_STRING:
        return any->value.str ? selectSubtreeOfXml(data, LYD_CTX(filterNode), any->value.str) : Selection{};
    default:
        throw Error("subtree filter: unsupported anyxml value type " + std::to_string(any->value_type));
    }
}

Selection selectXPath(const lyd_node* data, const std::string& expr) {
    Selection out;
    out.first = firstOf(data);
    if (!out.first) {
        return out;
    }
    const ly_ctx* ctx = LYD_CTX(out.first);
    std::string qualified = qualifyTopLevel(ctx, expr);
    ly_set* raw = nullptr;
    LY_ERR rc = LY_SUCCESS;
    {
        std::unique_lock lookups(lookupLock());
        rc = lyd_find_xpath3(nullptr, out.first, qualified.c_str(), nullptr, &raw);
    }
    Set set{raw};
    if (rc != LY_SUCCESS) {
        throw Error("invalid XPath filter \"" + expr + "\": " + lastError(ctx));
    }
    NCS_LOG(trace) << "xpath filter \"" << qualified << "\" selected " << set->count << " nodes";
    std::vector<const lyd_node*> chain;
    for (uint32_t i = 0; i < set->count; ++i) {
        chain.clear();
        for (const lyd_node* n = set->dnodes[i]; n; n = lyd_parent(n)) {
            chain.push_back(n);
        }
        Sel* sel = &out.root;
        for (auto it = chain.rbegin(); it != chain.rend() && !sel->whole; ++it) {
            if (std::next(it) == chain.rend()) {
                sel->selectWhole(*it);
            } else {
                sel = &sel->child(*it);
            }
        }
    }
    return out;
}

Selection selectApply(const lyd_node* data, const lyd_node* filterNode) {
    if (auto select = xpathSelect(filterNode)) {
        return selectXPath(data, *select);
    }
    return selectSubtreeOfAnyxml(data, filterNode);
}

Tree toTree(const Selection& s) {
    return s.first ? buildTree(s.root, s.first) : Tree{};
}

} // namespace

std::optional<std::string> xpathSelect(const lyd_node* filterNode) {
    if (!filterNode) {
        return std::nullopt;
    }
    const lyd_meta* type = lyd_find_meta(filterNode->meta, nullptr, "ietf-netconf:type");
    if (!type || std::strcmp(lyd_get_meta_value(type), "xpath") != 0) {
        return std::nullopt;
    }
    const lyd_meta* select = lyd_find_meta(filterNode->meta, nullptr, "ietf-netconf:select");
    if (!select) {
        throw Error("filter of type xpath without a select attribute");
    }
    return lyd_get_meta_value(select);
}

namespace {

/// "/m:a/b/n:c" as steps (module inherited); nullopt for anything richer.
std::optional<std::vector<SelectedStep>> plainPath(const std::string& expr) {
    std::vector<SelectedStep> steps;
    std::string module;
    std::size_t pos = 0;
    auto name = [&]() -> std::optional<std::string> {
        if (pos >= expr.size() || !nameStart(expr[pos])) {
            return std::nullopt;
        }
        const std::size_t start = pos;
        while (pos < expr.size() && nameChar(expr[pos])) {
            ++pos;
        }
        return expr.substr(start, pos - start);
    };
    while (pos < expr.size()) {
        if (expr[pos++] != '/') {
            return std::nullopt;
        }
        auto first = name();
        if (!first) {
            return std::nullopt;
        }
        if (pos < expr.size() && expr[pos] == ':') {
            ++pos;
            module = std::move(*first);
            first = name();
            if (!first) {
                return std::nullopt;
            }
        } else if (module.empty()) {
            return std::nullopt;
        }
        steps.push_back(SelectedStep{module, std::move(*first)});
    }
    if (steps.empty()) {
        return std::nullopt;
    }
    return steps;
}

/// Appends to `out` the paths below `prefix` that `f` selects; false when `f` holds a content
/// match or names a namespace the context does not implement.
bool collectPaths(const ly_ctx* ctx, const FNode& f, std::vector<SelectedStep>& prefix,
                  std::vector<std::vector<SelectedStep>>& out) {
    if (f.kind == Kind::ContentMatch || !f.cms.empty()) {
        return false;
    }
    std::string module;
    if (!f.ns.empty()) {
        const lys_module* m = ly_ctx_get_module_implemented_ns(ctx, f.ns.c_str());
        if (!m) {
            return false;
        }
        module = m->name;
    }
    prefix.push_back(SelectedStep{module, f.name});
    bool ok = true;
    if (f.kind == Kind::Selection) {
        out.push_back(prefix);
    }
    for (const auto* kids : {&f.sels, &f.conts}) {
        for (const FNode& c : *kids) {
            ok = ok && collectPaths(ctx, c, prefix, out);
        }
    }
    prefix.pop_back();
    return ok;
}

} // namespace

std::optional<std::vector<std::vector<SelectedStep>>> selectedPaths(const lyd_node* filterNode) {
    if (!filterNode) {
        return std::nullopt;
    }
    if (const auto expr = xpathSelect(filterNode)) {
        auto steps = plainPath(*expr);
        if (!steps) {
            return std::nullopt;
        }
        return std::vector<std::vector<SelectedStep>>{std::move(*steps)};
    }
    const auto* any = reinterpret_cast<const lyd_node_any*>(filterNode);
    if (!filterNode->schema || !(filterNode->schema->nodetype & LYD_NODE_ANY) ||
        any->value_type != LYD_ANYDATA_DATATREE) {
        return std::nullopt;
    }
    std::vector<std::vector<SelectedStep>> out;
    std::vector<SelectedStep> prefix;
    for (const lyd_node* n = any->value.tree; n; n = n->next) {
        if (!collectPaths(LYD_CTX(filterNode), readFilter(n), prefix, out)) {
            return std::nullopt;
        }
    }
    return out;
}

std::optional<std::vector<SelectedStep>> topLevelScope(const lyd_node* filterNode) {
    if (!filterNode) {
        return std::nullopt;
    }
    if (xpathSelect(filterNode)) {
        auto paths = selectedPaths(filterNode);
        if (!paths) {
            return std::nullopt;
        }
        std::vector<SelectedStep> out;
        for (auto& path : *paths) {
            if (path.empty()) {
                return std::nullopt; // "/": everything
            }
            out.push_back(std::move(path.front()));
        }
        return out;
    }
    const auto* any = reinterpret_cast<const lyd_node_any*>(filterNode);
    if (!filterNode->schema || !(filterNode->schema->nodetype & LYD_NODE_ANY) ||
        any->value_type != LYD_ANYDATA_DATATREE) {
        return std::nullopt;
    }
    std::vector<SelectedStep> out;
    for (const lyd_node* n = any->value.tree; n; n = n->next) {
        const FNode f = readFilter(n);
        std::string module;
        if (!f.ns.empty()) {
            const lys_module* m = ly_ctx_get_module_implemented_ns(LYD_CTX(filterNode), f.ns.c_str());
            if (!m) {
                continue;
            }
            module = m->name;
        }
        out.push_back(SelectedStep{std::move(module), f.name});
    }
    return out;
}

Tree fromParameter(const lyd_node* param) {
    const ly_ctx* ctx = LYD_CTX(param);
    lyd_node* copy = nullptr;
    if (lyd_dup_single(param, nullptr, LYD_DUP_RECURSIVE, &copy) != LY_SUCCESS) {
        throw Error("cannot copy the filter: " + lastError(ctx));
    }
    Tree holder{copy};
    if (param->schema && (param->schema->nodetype & LYD_NODE_TERM)) {
        const char* expr = lyd_get_value(param);
        if (lyd_new_meta(ctx, copy, nullptr, "ietf-netconf:type", "xpath", 0, nullptr) != LY_SUCCESS ||
            lyd_new_meta(ctx, copy, nullptr, "ietf-netconf:select", expr, 0, nullptr) != LY_SUCCESS) {
            throw Error(std::string("invalid XPath ") + expr + ": " + lastError(ctx));
        }
    }
    return holder;
}

Tree subtree(const lyd_node* data, const lyd_node* filter) {
    return toTree(selectSubtree(data, filter));
}

Tree subtreeOfXml(const lyd_node* data, const ly_ctx* ctx, const std::string& xml) {
    return toTree(selectSubtreeOfXml(data, ctx, xml));
}

Tree subtreeOfAnyxml(const lyd_node* data, const lyd_node* filterNode) {
    return toTree(selectSubtreeOfAnyxml(data, filterNode));
}

Tree xpath(const lyd_node* data, const std::string& expr) {
    return toTree(selectXPath(data, expr));
}

Tree apply(const lyd_node* data, const lyd_node* filterNode) {
    return toTree(selectApply(data, filterNode));
}

std::string applyXml(const lyd_node* data, const lyd_node* filterNode, uint32_t printOptions) {
    return applySubtreeXmlWithout(data, filterNode, printOptions, {});
}

bool boundedXPath(const std::string& expr) {
    if (expr.size() > 512) {
        return false;
    }
    int predicates = 0; // nesting depth of [...]
    int descendants = 0;
    for (std::size_t i = 0; i < expr.size(); ++i) {
        const char c = expr[i];
        const char next = i + 1 < expr.size() ? expr[i + 1] : '\0';
        switch (c) {
        case '\'':
        case '"':
            i = expr.find(c, i + 1);
            if (i == std::string::npos) {
                return false;
            }
            break;
        case '[':
            ++predicates;
            break;
        case ']':
            if (--predicates < 0) {
                return false;
            }
            break;
        case '.':
        case ':':
            if (next == c) {
                return false; // ".." climbs, "::" names an axis
            }
            break;
        case '/':
            if (predicates > 0 || (next == '/' && ++descendants > 1)) {
                return false;
            }
            break;
        case '(':
        case '$':
            if (predicates > 0 || c == '$') {
                return false;
            }
            break;
        default:
            break;
        }
    }
    return predicates == 0;
}

std::string xpathXml(const lyd_node* data, const std::string& expr, uint32_t printOptions,
                     const lysc_node* leaveOut) {
    Selection s = selectXPath(data, expr);
    if (leaveOut) {
        const auto left = std::find_if(s.root.order.begin(), s.root.order.end(),
                                       [leaveOut](const lyd_node* n) { return n->schema == leaveOut; });
        if (left != s.root.order.end()) {
            s.root.kids.erase(*left);
            s.root.order.erase(left);
        }
    }
    std::string out;
    if (s.first) {
        render(s.root, nullptr, s.first, (printOptions & ~LYD_PRINT_WITHSIBLINGS) | LYD_PRINT_SHRINK, out);
    }
    return out;
}

std::string applySubtreeXmlWithout(const lyd_node* data, const lyd_node* filterNode, uint32_t printOptions,
                                   const std::vector<const lyd_node*>& absent) {
    if (!absent.empty() && xpathSelect(filterNode)) {
        throw std::invalid_argument("filter: leaving nodes out is for subtree filters only");
    }
    Selection s = selectApply(data, filterNode);
    for (const lyd_node* a : absent) {
        if (lyd_parent(a)) {
            throw std::invalid_argument("filter: only top-level nodes can be left out");
        }
        if (s.root.kids.erase(a)) {
            s.root.order.erase(std::find(s.root.order.begin(), s.root.order.end(), a));
        }
    }
    std::string out;
    if (s.first) {
        render(s.root, nullptr, s.first, (printOptions & ~LYD_PRINT_WITHSIBLINGS) | LYD_PRINT_SHRINK, out);
    }
    return out;
}

} // namespace ncstore::filter
