#include "leafref.hpp"

#include "ncstore/log.hpp"
#include "ncstore/yang.hpp"

#include <libyang/plugins_types.h>

#include <cctype>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace ncstore::ds::detail {

namespace {

// ---- the path as written: [prefix:]name steps, ".." and key predicates -------------------

struct Name {
    std::string prefix; // empty: the module that defines the path
    std::string name;
};

struct RawPredicate {
    Name key;
    unsigned ups = 0;       // ".." steps after current()
    std::vector<Name> down; // then these children
};

struct RawStep {
    Name node;
    std::vector<RawPredicate> predicates;
};

struct RawPath {
    bool absolute = false;
    unsigned ups = 0; // leading ".." of a relative path
    std::vector<RawStep> steps;
};

/// A recursive-descent reader of RFC 7950 leafref paths (section 9.9.2, path-arg). Returns
/// nothing for anything else (functions other than current(), deref(), "and"): such paths stay
/// with libyang.
class PathReader {
public:
    explicit PathReader(std::string_view text) : s_(text) {}

    std::optional<RawPath> read() {
        RawPath path;
        space();
        if (peek('/')) {
            path.absolute = true;
        } else {
            while (take("..")) {
                ++path.ups;
                if (!take("/")) {
                    return std::nullopt;
                }
            }
        }
        do {
            if (path.absolute && !take("/")) {
                return std::nullopt;
            }
            RawStep step;
            if (!name(step.node)) {
                return std::nullopt;
            }
            space();
            while (peek('[')) {
                RawPredicate pred;
                if (!predicate(pred)) {
                    return std::nullopt;
                }
                step.predicates.push_back(std::move(pred));
                space();
            }
            path.steps.push_back(std::move(step));
            if (!path.absolute && !take("/")) {
                break;
            }
        } while (pos_ < s_.size());
        space();
        if (pos_ != s_.size() || path.steps.empty()) {
            return std::nullopt;
        }
        return path;
    }

private:
    bool predicate(RawPredicate& pred) {
        if (!take("[")) {
            return false;
        }
        space();
        if (!name(pred.key) || !takeAll({"=", "current", "(", ")"})) {
            return false;
        }
        while (take("/")) {
            space();
            if (take("..")) {
                if (!pred.down.empty()) {
                    return false;
                }
                ++pred.ups;
            } else {
                Name n;
                if (!name(n)) {
                    return false;
                }
                pred.down.push_back(std::move(n));
            }
            space();
        }
        return take("]") && (pred.ups || !pred.down.empty());
    }

    bool name(Name& out) {
        std::string first;
        if (!identifier(first)) {
            return false;
        }
        if (take(":")) {
            out.prefix = std::move(first);
            return identifier(out.name);
        }
        out.name = std::move(first);
        return true;
    }

    bool identifier(std::string& out) {
        const std::size_t start = pos_;
        while (pos_ < s_.size()) {
            const auto c = static_cast<unsigned char>(s_[pos_]);
            const bool ok =
                std::isalpha(c) || c == '_' || (pos_ > start && (std::isdigit(c) || c == '-' || c == '.'));
            if (!ok) {
                break;
            }
            ++pos_;
        }
        out.assign(s_.substr(start, pos_ - start));
        return pos_ > start;
    }

    /// Each of `tokens` in turn, spaces allowed around them.
    bool takeAll(std::initializer_list<std::string_view> tokens) {
        for (std::string_view t : tokens) {
            space();
            if (!take(t)) {
                return false;
            }
        }
        space();
        return true;
    }

    void space() {
        while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) {
            ++pos_;
        }
    }
    bool peek(char c) const { return pos_ < s_.size() && s_[pos_] == c; }
    bool take(std::string_view t) {
        if (s_.substr(pos_, t.size()) != t) {
            return false;
        }
        pos_ += t.size();
        return true;
    }

    std::string_view s_;
    std::size_t pos_ = 0;
};

// ---- the path against the compiled schema ---------------------------------------------------

struct Predicate {
    const lysc_node* key;
    unsigned ups;
    std::vector<const lysc_node*> down; // containers, ending at a leaf
};

struct Step {
    const lysc_node* schema;
    std::vector<Predicate> predicates; // on list steps only; their keys, in any order
    bool allKeys = false;              // the predicates name every key of the list
};

struct Plan {
    bool absolute = false;
    unsigned ups = 0;
    std::vector<Step> steps; // the last one is the target leaf or leaf-list
    // Set when the path ends "<list>/<its only key>" and that list step has no predicate: the
    // target is found by looking the value up as the key.
    bool lastIsSoleKey = false;
};

/// Resolves the names of one leafref path on the schema. Each node is looked up in the module
/// its prefix names (unprefixed: the path's own module, else the leafref's module, as YANG
/// groupings used elsewhere have it) and must be among the nodes libyang itself says the path
/// reads (lys_find_expr_atoms): the plan then walks exactly libyang's nodes.
class SchemaResolver {
public:
    SchemaResolver(const lysc_node* leaf, const lysc_type_leafref* lref) : leaf_(leaf), lref_(lref) {
        ly_set* raw = nullptr;
        if (lys_find_expr_atoms(leaf, leaf->module, lref->path, lref->prefixes, 0, &raw) == LY_SUCCESS &&
            raw) {
            Set set{raw};
            for (uint32_t i = 0; i < set->count; ++i) {
                atoms_.insert(set->snodes[i]);
            }
        }
    }

    const lysc_node* child(const lysc_node* parent, const Name& n) const {
        const lys_module* candidates[2] = {moduleOf(n.prefix.empty() ? nullptr : &n.prefix),
                                           n.prefix.empty() ? leaf_->module : nullptr};
        for (const lys_module* mod : candidates) {
            if (!mod || (!parent && !mod->implemented)) {
                continue;
            }
            const lysc_node* c = lys_find_child(parent, mod, n.name.c_str(), n.name.size(), 0, 0);
            if (c && (c->nodetype & (LYS_CONTAINER | LYS_LIST | LYS_LEAF | LYS_LEAFLIST)) &&
                atoms_.count(c)) {
                return c;
            }
        }
        return nullptr;
    }

private:
    const lys_module* moduleOf(const std::string* prefix) const {
        LY_ARRAY_COUNT_TYPE i;
        LY_ARRAY_FOR(lref_->prefixes, i) {
            const char* p = lref_->prefixes[i].prefix;
            if ((!p && !prefix) || (p && prefix && *prefix == p)) {
                return lref_->prefixes[i].mod;
            }
        }
        return nullptr;
    }

    const lysc_node* leaf_;
    const lysc_type_leafref* lref_;
    std::unordered_set<const lysc_node*> atoms_;
};

const lysc_node* upFrom(const lysc_node* node, unsigned ups) {
    for (unsigned i = 0; i < ups && node; ++i) {
        node = lysc_data_parent(node);
    }
    return node;
}

unsigned keyCount(const lysc_node* list) {
    unsigned n = 0;
    for (const lysc_node* c = lysc_node_child(list); c && (c->flags & LYS_KEY); c = c->next) {
        ++n;
    }
    return n;
}

std::optional<Plan> makePlan(const lysc_node* leaf, const lysc_type_leafref* lref) {
    const std::optional<RawPath> raw = PathReader(lyxp_get_expr(lref->path)).read();
    if (!raw) {
        return std::nullopt;
    }
    const SchemaResolver names(leaf, lref);
    Plan plan;
    plan.absolute = raw->absolute;
    plan.ups = raw->ups;
    const lysc_node* parent = nullptr;
    if (!raw->absolute) {
        parent = upFrom(leaf, raw->ups);
        if (!parent || raw->ups == 0) {
            return std::nullopt;
        }
    }
    for (const RawStep& rs : raw->steps) {
        const lysc_node* schema = names.child(parent, rs.node);
        if (!schema) {
            return std::nullopt;
        }
        Step step{schema, {}, false};
        if (!rs.predicates.empty()) {
            if (schema->nodetype != LYS_LIST) {
                return std::nullopt;
            }
            for (const RawPredicate& rp : rs.predicates) {
                const lysc_node* key = names.child(schema, rp.key);
                if (!key || !(key->flags & LYS_KEY)) {
                    return std::nullopt;
                }
                Predicate pred{key, rp.ups, {}};
                const lysc_node* at = upFrom(leaf, rp.ups);
                if (!at) {
                    return std::nullopt;
                }
                for (const Name& n : rp.down) {
                    at = names.child(at, n);
                    if (!at || !(at->nodetype & (LYS_CONTAINER | LYS_LEAF))) {
                        return std::nullopt;
                    }
                    pred.down.push_back(at);
                }
                if (!(at->nodetype & LYS_LEAF)) {
                    return std::nullopt;
                }
                for (const Predicate& other : step.predicates) {
                    if (other.key == key) {
                        return std::nullopt; // the same key twice: leave it to libyang
                    }
                }
                step.predicates.push_back(std::move(pred));
            }
            step.allKeys = step.predicates.size() == keyCount(schema);
        }
        plan.steps.push_back(std::move(step));
        parent = schema;
    }
    const lysc_node* target = plan.steps.back().schema;
    if (!(target->nodetype & (LYS_LEAF | LYS_LEAFLIST))) {
        return std::nullopt;
    }
    for (std::size_t i = 0; i + 1 < plan.steps.size(); ++i) {
        if (!(plan.steps[i].schema->nodetype & (LYS_CONTAINER | LYS_LIST))) {
            return std::nullopt;
        }
    }
    if (plan.steps.size() >= 2) {
        const Step& list = plan.steps[plan.steps.size() - 2];
        plan.lastIsSoleKey = list.schema->nodetype == LYS_LIST && list.predicates.empty() &&
                             (target->flags & LYS_KEY) && keyCount(list.schema) == 1;
    }
    return plan;
}

// ---- the plan against data ------------------------------------------------------------------

const lyd_node* childData(const lyd_node* parent, const lysc_node* schema) {
    lyd_node* found = nullptr;
    if (lyd_find_sibling_val(lyd_child(parent), schema, nullptr, 0, &found) != LY_SUCCESS) {
        return nullptr;
    }
    return found;
}

/// The value the predicate compares its key with, read from the leafref node.
const char* predicateValue(const Predicate& pred, const lyd_node* ctxNode) {
    const lyd_node* at = ctxNode;
    for (unsigned i = 0; i < pred.ups && at; ++i) {
        at = lyd_parent(at);
    }
    for (const lysc_node* s : pred.down) {
        if (!at) {
            return nullptr;
        }
        at = childData(at, s);
    }
    return at ? lyd_get_value(at) : nullptr;
}

bool entryMatches(const lyd_node* entry, const Step& step, const std::vector<const char*>& values) {
    for (std::size_t i = 0; i < step.predicates.size(); ++i) {
        const lyd_node* key = childData(entry, step.predicates[i].key);
        if (!key || std::strcmp(lyd_get_value(key), values[i]) != 0) {
            return false;
        }
    }
    return true;
}

/// Whether `value` exists at the plan's target as seen from `ctxNode` in the forest of `tree`.
/// False also when unsure: the caller then asks libyang.
bool resolve(const Plan& plan, const lyd_node* ctxNode, const lyd_node* tree, const char* value) {
    std::vector<const lyd_node*> current; // the nodes of the previous step
    const lyd_node* firstRoot = nullptr;
    if (plan.absolute) {
        if (!tree) {
            return false;
        }
        while (lyd_parent(tree)) {
            tree = lyd_parent(tree);
        }
        firstRoot = lyd_first_sibling(tree);
        current.push_back(nullptr); // stands for the roots
    } else {
        const lyd_node* at = ctxNode;
        for (unsigned i = 0; i < plan.ups && at; ++i) {
            at = lyd_parent(at);
        }
        if (!at) {
            return false;
        }
        current.push_back(at);
    }
    std::vector<const lyd_node*> next;
    std::vector<const char*> values;
    std::string predicate;
    for (std::size_t i = 0; i < plan.steps.size(); ++i) {
        const Step& step = plan.steps[i];
        const bool last = i + 1 == plan.steps.size();
        values.clear();
        for (const Predicate& p : step.predicates) {
            const char* v = predicateValue(p, ctxNode);
            if (!v) {
                return false; // the key is compared with nothing: no entry matches
            }
            values.push_back(v);
        }
        next.clear();
        for (const lyd_node* parent : current) {
            const lyd_node* first = parent ? lyd_child(parent) : firstRoot;
            if (!first) {
                continue;
            }
            lyd_node* found = nullptr;
            if (step.schema->nodetype == LYS_LIST) {
                const bool byValue = i + 2 == plan.steps.size() && plan.lastIsSoleKey;
                if (step.allKeys || byValue) {
                    predicate.clear();
                    bool ok = true;
                    if (byValue) {
                        ok = appendKeyPredicate(predicate, plan.steps.back().schema->name, value);
                    } else {
                        // lyd_find_sibling_val wants the keys in schema order.
                        for (const lysc_node* k = lysc_node_child(step.schema);
                             ok && k && (k->flags & LYS_KEY); k = k->next) {
                            for (std::size_t j = 0; j < step.predicates.size(); ++j) {
                                if (step.predicates[j].key == k) {
                                    ok = appendKeyPredicate(predicate, k->name, values[j]);
                                }
                            }
                        }
                    }
                    if (!ok) {
                        return false;
                    }
                    if (lyd_find_sibling_val(first, step.schema, predicate.c_str(), predicate.size(),
                                             &found) == LY_SUCCESS &&
                        found) {
                        // Hashed lookups compare stored values; the path compares strings.
                        if (byValue) {
                            const lyd_node* key = childData(found, plan.steps.back().schema);
                            return key && std::strcmp(lyd_get_value(key), value) == 0;
                        }
                        if (entryMatches(found, step, values)) {
                            next.push_back(found);
                        }
                    }
                    continue;
                }
                if (lyd_find_sibling_val(first, step.schema, nullptr, 0, &found) != LY_SUCCESS || !found) {
                    continue;
                }
                // Instances of one schema node are adjacent siblings.
                for (const lyd_node* e = found; e && e->schema == step.schema; e = e->next) {
                    if (entryMatches(e, step, values)) {
                        next.push_back(e);
                    }
                }
                continue;
            }
            if (last && step.schema->nodetype == LYS_LEAFLIST) {
                if (lyd_find_sibling_val(first, step.schema, value, std::strlen(value), &found) ==
                        LY_SUCCESS &&
                    found) {
                    return true;
                }
                continue;
            }
            if (lyd_find_sibling_val(first, step.schema, nullptr, 0, &found) != LY_SUCCESS || !found) {
                continue;
            }
            if (last) {
                if (std::strcmp(lyd_get_value(found), value) == 0) {
                    return true;
                }
                continue;
            }
            next.push_back(found);
        }
        if (next.empty()) {
            return false;
        }
        current.swap(next);
    }
    return false;
}

thread_local const lyd_node* tlsAbsoluteRoot = nullptr;

struct PairHash {
    std::size_t operator()(const std::pair<const void*, const void*>& p) const {
        return std::hash<const void*>()(p.first) * 31 + std::hash<const void*>()(p.second);
    }
};

} // namespace

class LeafrefAccelerator::Impl {
public:
    // The plugin libyang calls, first member so that the lysc_type's plugin pointer leads back
    // to this object.
    struct Wrapper {
        lyplg_type plugin;
        Impl* owner;
    };

    explicit Impl(const ly_ctx* ctx) {
        uint32_t idx = 0;
        const lys_module* mod = nullptr;
        while ((mod = ly_ctx_get_module_iter(ctx, &idx))) {
            if (mod->implemented && mod->compiled) {
                for (const lysc_node* top = mod->compiled->data; top; top = top->next) {
                    walk(top);
                }
            }
        }
    }

    ~Impl() {
        for (const auto& [type, original] : swapped_) {
            type->plugin = original;
        }
    }

    static LY_ERR validate(const ly_ctx* ctx, const lysc_type* type, const lyd_node* ctxNode,
                           const lyd_node* tree, lyd_value* storage, ly_err_item** err) {
        Impl* self = reinterpret_cast<Wrapper*>(type->plugin)->owner;
        const lyd_node* absoluteRoot = tlsAbsoluteRoot;
        if (ctxNode) {
            auto it = self->plans_.find({type, ctxNode->schema});
            if (it != self->plans_.end()) {
                const char* value = lyd_value_get_canonical(ctx, storage);
                if (value && resolve(it->second, ctxNode, absoluteRoot ? absoluteRoot : tree, value)) {
                    self->hits_.fetch_add(1, std::memory_order_relaxed);
                    return LY_SUCCESS;
                }
            }
        }
        self->fallbacks_.fetch_add(1, std::memory_order_relaxed);
        return lyplg_type_validate_leafref(ctx, type, ctxNode, absoluteRoot ? absoluteRoot : tree, storage,
                                           err);
    }

    bool absoluteWithin(const lysc_node* leaf, const lysc_node* entry) const {
        return absoluteWithin(leaf, reinterpret_cast<const lysc_node_leaf*>(leaf)->type, entry);
    }

    Counters counters() const {
        return {plans_.size(), hits_.load(std::memory_order_relaxed),
                fallbacks_.load(std::memory_order_relaxed)};
    }

private:
    bool absoluteWithin(const lysc_node* leaf, const lysc_type* type, const lysc_node* entry) const {
        if (type->basetype == LY_TYPE_UNION) {
            const auto* u = reinterpret_cast<const lysc_type_union*>(type);
            LY_ARRAY_COUNT_TYPE i;
            LY_ARRAY_FOR(u->types, i) {
                if (!absoluteWithin(leaf, u->types[i], entry)) {
                    return false;
                }
            }
            return true;
        }
        if (type->basetype != LY_TYPE_LEAFREF ||
            !reinterpret_cast<const lysc_type_leafref*>(type)->require_instance) {
            return true;
        }
        auto it = plans_.find({type, leaf});
        if (it == plans_.end() || !it->second.absolute) {
            return false;
        }
        for (const Step& step : it->second.steps) {
            for (const Predicate& pred : step.predicates) {
                if (!schemaWithin(upFrom(leaf, pred.ups), entry)) {
                    return false;
                }
            }
        }
        return true;
    }

    void walk(const lysc_node* node) {
        if (node->nodetype & (LYS_LEAF | LYS_LEAFLIST)) {
            take(node, reinterpret_cast<const lysc_node_leaf*>(node)->type);
        }
        for (const lysc_node* child = lysc_node_child(node); child; child = child->next) {
            walk(child);
        }
    }

    void take(const lysc_node* node, lysc_type* type) {
        if (type->basetype == LY_TYPE_UNION) {
            auto* u = reinterpret_cast<lysc_type_union*>(type);
            LY_ARRAY_COUNT_TYPE i;
            LY_ARRAY_FOR(u->types, i) {
                take(node, u->types[i]);
            }
            return;
        }
        if (type->basetype != LY_TYPE_LEAFREF) {
            return;
        }
        auto* lref = reinterpret_cast<lysc_type_leafref*>(type);
        if (!lref->require_instance) {
            return;
        }
        if (type->plugin != &wrapper_.plugin) {
            if (type->plugin->validate != lyplg_type_validate_leafref) {
                return; // someone else's plugin: leave it alone
            }
            if (!wrapper_.owner) {
                wrapper_.plugin = *type->plugin;
                wrapper_.plugin.validate = &Impl::validate;
                wrapper_.owner = this;
            }
            swapped_.emplace_back(type, type->plugin);
            type->plugin = &wrapper_.plugin;
        }
        if (std::optional<Plan> plan = makePlan(node, lref)) {
            plans_.emplace(std::make_pair(static_cast<const void*>(type), static_cast<const void*>(node)),
                           std::move(*plan));
        } else {
            NCS_LOG(debug) << "datastore: leafref " << lyxp_get_expr(lref->path) << " of " << node->name
                           << " is checked by libyang";
        }
    }

    Wrapper wrapper_{};
    std::vector<std::pair<lysc_type*, lyplg_type*>> swapped_;
    std::unordered_map<std::pair<const void*, const void*>, Plan, PairHash> plans_;
    std::atomic<std::uint64_t> hits_{0};
    std::atomic<std::uint64_t> fallbacks_{0};
};

LeafrefAccelerator::LeafrefAccelerator(const ly_ctx* ctx) : impl_(std::make_unique<Impl>(ctx)) {}

LeafrefAccelerator::~LeafrefAccelerator() = default;

LeafrefAccelerator::Counters LeafrefAccelerator::counters() const {
    return impl_->counters();
}

bool LeafrefAccelerator::absoluteWithin(const lysc_node* leaf, const lysc_node* entry) const {
    return leaf && (leaf->nodetype & (LYS_LEAF | LYS_LEAFLIST)) && impl_->absoluteWithin(leaf, entry);
}

AbsoluteLeafrefRoot::AbsoluteLeafrefRoot(const lyd_node* forest) : previous_(tlsAbsoluteRoot) {
    tlsAbsoluteRoot = forest;
}

AbsoluteLeafrefRoot::~AbsoluteLeafrefRoot() {
    tlsAbsoluteRoot = previous_;
}

} // namespace ncstore::ds::detail
