#include "core.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <mutex>
#include <shared_mutex>

namespace ncstore::nacm {

using detail::bit;
using detail::Core;
using detail::inheritedExtensions;
using detail::isNetconfOp;
using detail::isTopNotification;
using detail::isTopRpc;
using detail::isWrite;
using detail::kDenyAll;
using detail::kDenyWrite;
using detail::kOps;
using detail::PredStep;
using detail::Rule;
using detail::RuleType;

std::string_view toString(Op op) noexcept {
    switch (op) {
    case Op::Create:
        return "create";
    case Op::Read:
        return "read";
    case Op::Update:
        return "update";
    case Op::Delete:
        return "delete";
    case Op::Exec:
        return "exec";
    }
    return "?";
}

namespace {

/// The ancestor-or-self of `node` that is an instance of `schema`.
const lyd_node* instanceOf(const lyd_node* node, const lysc_node* schema) {
    for (const lyd_node* p = node; p; p = lyd_parent(p)) {
        if (p->schema == schema) {
            return p;
        }
    }
    return nullptr;
}

/// Value of key `key` of list entry `entry` (or of the leaf-list instance itself).
const char* keyValue(const lyd_node* entry, const lysc_node* key) {
    if (key == entry->schema) {
        return lyd_get_value(entry);
    }
    for (const lyd_node* c = lyd_child(entry); c && c->schema && lysc_is_key(c->schema); c = c->next) {
        if (c->schema == key) {
            return lyd_get_value(c);
        }
    }
    return nullptr;
}

bool predicatesHold(const std::vector<PredStep>& preds, const lyd_node* node) {
    for (const PredStep& step : preds) {
        const lyd_node* entry = instanceOf(node, step.node);
        if (!entry) {
            return false;
        }
        for (const auto& km : step.keys) {
            const char* v = keyValue(entry, km.key);
            if (!v || km.value != v) {
                return false;
            }
        }
    }
    return true;
}

/// Length-prefixed concatenation: unambiguous whatever the values contain.
void appendPart(std::string& out, std::string_view part) {
    const auto n = static_cast<uint32_t>(part.size());
    out.append(reinterpret_cast<const char*>(&n), sizeof n);
    out.append(part);
}

/// Consecutive candidate rules predicating the same keys of the same lists: one hash lookup
/// finds the first of them whose values the instance has.
struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

struct Run {
    struct Level {
        const lysc_node* node;
        std::vector<const lysc_node*> keys;
    };
    std::vector<Level> shape;
    /// Key values -> action of the first such rule. One key: the value itself (looked up without
    /// a copy); several: the values length-prefixed.
    std::unordered_map<std::string, bool, StringHash, std::equal_to<>> permit;

    bool singleKey() const { return shape.size() == 1 && shape[0].keys.size() == 1; }

    static bool sameShape(const Rule& a, const Rule& b) {
        const auto& pa = a.path.preds;
        const auto& pb = b.path.preds;
        if (pa.size() != pb.size()) {
            return false;
        }
        for (size_t i = 0; i < pa.size(); ++i) {
            if (pa[i].node != pb[i].node || pa[i].keys.size() != pb[i].keys.size()) {
                return false;
            }
            for (size_t k = 0; k < pa[i].keys.size(); ++k) {
                if (pa[i].keys[k].key != pb[i].keys[k].key) {
                    return false;
                }
            }
        }
        return true;
    }

    std::string keyOf(const Rule& r) const {
        if (singleKey()) {
            return r.path.preds[0].keys[0].value;
        }
        std::string out;
        for (const auto& step : r.path.preds) {
            for (const auto& km : step.keys) {
                appendPart(out, km.value);
            }
        }
        return out;
    }

    /// The action of the run's first rule whose key values `node` (or its ancestors) has.
    const bool* find(const lyd_node* node) const {
        if (singleKey()) {
            const lyd_node* entry = instanceOf(node, shape[0].node);
            const char* v = entry ? keyValue(entry, shape[0].keys[0]) : nullptr;
            if (!v) {
                return nullptr;
            }
            const auto it = permit.find(std::string_view(v));
            return it == permit.end() ? nullptr : &it->second;
        }
        thread_local std::string buf;
        buf.clear();
        for (const Level& level : shape) {
            const lyd_node* entry = instanceOf(node, level.node);
            if (!entry) {
                return nullptr;
            }
            for (const lysc_node* key : level.keys) {
                const char* v = keyValue(entry, key);
                if (!v) {
                    return nullptr;
                }
                appendPart(buf, v);
            }
        }
        const auto it = permit.find(buf);
        return it == permit.end() ? nullptr : &it->second;
    }
};

struct Step {
    const Rule* rule = nullptr; ///< a single predicated rule, or
    std::unique_ptr<Run> run;   ///< several with the same shape
};

/// The decision for one schema node and access operation.
struct Verdict {
    std::vector<Step> steps; ///< predicated rules to try first, in order
    bool permit = false;     ///< when none of them matches (or there are none)
    bool sameBelow = true;

    bool decide(const lyd_node* node) const {
        for (const Step& s : steps) {
            if (s.rule) {
                if (predicatesHold(s.rule->path.preds, node)) {
                    return s.rule->permit;
                }
                continue;
            }
            if (const bool* permitted = s.run->find(node)) {
                return *permitted;
            }
        }
        return permit;
    }
};

struct Entry {
    std::array<Verdict, kOps> verdicts;
};

std::atomic<uint64_t> nextAccessId{1};

} // namespace

struct Access::Impl {
    const Core& core;
    uint64_t id = nextAccessId.fetch_add(1, std::memory_order_relaxed);
    std::vector<const Rule*> rules; ///< of the user's rule-lists, in order
    std::array<std::unordered_set<const lysc_node*>, kOps> aboveTargets;
    std::array<bool, kOps> moduleSpecific{};

    mutable std::shared_mutex mutex;
    mutable std::unordered_map<const lysc_node*, std::unique_ptr<Entry>> cache;

    explicit Impl(const Core& c) : core(c) {}

    void index() {
        for (const Rule* r : rules) {
            for (size_t op = 0; op < kOps; ++op) {
                if (!(r->ops & (1u << op))) {
                    continue;
                }
                moduleSpecific[op] = moduleSpecific[op] || !r->anyModule();
                if (r->type == RuleType::Data && r->path.target) {
                    detail::SchemaIndex::addAncestors(aboveTargets[op], r->path.target);
                }
            }
        }
    }

    // --- RFC 8341 steps, shared by the cached and the explaining paths --------------------------

    /// 3.4.4 step 7 / 3.4.6 step 7: the first rule for a top-level operation or notification.
    const Rule* firstNamed(Op op, RuleType type, std::string_view module, std::string_view name) const {
        for (const Rule* r : rules) {
            if ((r->ops & bit(op)) && r->moduleMatches(module) &&
                (r->type == RuleType::Any || (r->type == type && r->nameMatches(name)))) {
                return r;
            }
        }
        return nullptr;
    }

    /// 3.4.4 steps 10-12.
    bool execFallback(const lysc_node* rpc, std::string_view module, std::string_view name,
                      std::string* why) const {
        if (rpc && (inheritedExtensions(rpc) & kDenyAll)) {
            return note(why, false, "default-deny-all");
        }
        if (isNetconfOp(module, name, "kill-session") || isNetconfOp(module, name, "delete-config")) {
            return note(why, false, "RFC 8341 (kill-session and delete-config)");
        }
        return note(why, core.execPermit, "exec-default");
    }

    /// 3.4.5 steps 9-12 (and 3.4.6 steps 10-11 for notifications).
    bool dataFallback(const lysc_node* s, Op op, std::string* why) const {
        const uint8_t ext = inheritedExtensions(s);
        if (ext & kDenyAll) {
            return note(why, false, "default-deny-all");
        }
        if (isWrite(op) && (ext & kDenyWrite)) {
            return note(why, false, "default-deny-write");
        }
        if (op == Op::Read) {
            return note(why, core.readPermit, "read-default");
        }
        if (op == Op::Exec) {
            return note(why, core.execPermit, "exec-default");
        }
        return note(why, core.writePermit, "write-default");
    }

    static bool note(std::string* why, bool permit, const std::string& by) {
        if (why) {
            *why = (permit ? "permitted by " : "denied by ") + by;
        }
        return permit;
    }

    /// Whether `r` can match a data node (or action, nested notification) of schema `s`, ignoring
    /// key predicates. 3.4.5 step 6.
    static bool dataRuleApplies(const Rule& r, const lysc_node* s, Op op) {
        if (!(r.ops & bit(op)) || !r.moduleMatches(s->module)) {
            return false;
        }
        switch (r.type) {
        case RuleType::Any:
            return true;
        case RuleType::Operation:
            return false;
        case RuleType::Notification:
            return s->nodetype == LYS_NOTIF && r.nameMatches(s->name);
        case RuleType::Data:
            return r.path.all || schemaWithin(s, r.path.target);
        }
        return false;
    }

    // --- the cache ------------------------------------------------------------------------------

    Entry compute(const lysc_node* s) const {
        Entry e;
        for (size_t i = 0; i < kOps; ++i) {
            const Op op = static_cast<Op>(i);
            Verdict& v = e.verdicts[i];
            if (isTopRpc(s) || isTopNotification(s)) {
                // Decided by name (no predicates); other access operations do not apply.
                const bool rpc = isTopRpc(s);
                const Op natural = rpc ? Op::Exec : Op::Read;
                if (op != natural) {
                    v.permit = false;
                    continue;
                }
                const Rule* r = firstNamed(op, rpc ? RuleType::Operation : RuleType::Notification,
                                           s->module->name, s->name);
                v.permit = r ? r->permit
                             : (rpc ? execFallback(s, s->module->name, s->name, nullptr)
                                    : dataFallback(s, Op::Read, nullptr));
                continue;
            }
            std::vector<const Rule*> predicated;
            const Rule* decided = nullptr;
            for (const Rule* r : rules) {
                if (!dataRuleApplies(*r, s, op)) {
                    continue;
                }
                if (r->type == RuleType::Data && !r->path.preds.empty()) {
                    predicated.push_back(r);
                    continue;
                }
                decided = r;
                break;
            }
            v.permit = decided ? decided->permit : dataFallback(s, op, nullptr);
            v.steps = steps(predicated);
            v.sameBelow = sameBelow(s, op, decided != nullptr);
        }
        return e;
    }

    static std::vector<Step> steps(const std::vector<const Rule*>& predicated) {
        std::vector<Step> out;
        for (size_t i = 0; i < predicated.size();) {
            size_t j = i + 1;
            while (j < predicated.size() && Run::sameShape(*predicated[i], *predicated[j])) {
                ++j;
            }
            Step step;
            if (j - i == 1) {
                step.rule = predicated[i];
            } else {
                step.run = std::make_unique<Run>();
                for (const PredStep& p : predicated[i]->path.preds) {
                    Run::Level level{p.node, {}};
                    for (const auto& km : p.keys) {
                        level.keys.push_back(km.key);
                    }
                    step.run->shape.push_back(std::move(level));
                }
                for (size_t k = i; k < j; ++k) {
                    step.run->permit.emplace(step.run->keyOf(*predicated[k]),
                                             predicated[k]->permit); // first wins
                }
            }
            out.push_back(std::move(step));
            i = j;
        }
        return out;
    }

    /// Whether every schema descendant of `s` has the same candidate rules and fallback as `s`.
    bool sameBelow(const lysc_node* s, Op op, bool decidedByRule) const {
        const auto i = static_cast<size_t>(op);
        if (aboveTargets[i].count(s)) {
            return false; // a rule names a descendant
        }
        if (moduleSpecific[i] && core.schema.aboveModuleChange.count(s)) {
            return false; // module-name rules may match the descendant's module differently
        }
        if (!decidedByRule) {
            // The fallback applies; an extension below changes it there.
            if (core.schema.aboveDenyAll.count(s) || (isWrite(op) && core.schema.aboveDenyWrite.count(s))) {
                return false;
            }
        }
        return true;
    }

    const Entry& entry(const lysc_node* s) const {
        // Most lookups hit this per-thread direct-mapped cache, without the lock. Ids are never
        // reused, so a slot left by a destroyed Access can never match.
        struct Slot {
            uint64_t owner = 0;
            const lysc_node* schema = nullptr;
            const Entry* entry = nullptr;
        };
        thread_local std::array<Slot, 512> slots;
        const size_t h = ((reinterpret_cast<uintptr_t>(s) >> 4) ^ (id * 0x9E3779B97F4A7C15ull >> 40)) & 511;
        Slot& slot = slots[h];
        if (slot.owner == id && slot.schema == s) {
            return *slot.entry;
        }
        const Entry* found = nullptr;
        {
            std::shared_lock lock(mutex);
            if (auto it = cache.find(s); it != cache.end()) {
                found = it->second.get();
            }
        }
        if (!found) {
            auto fresh = std::make_unique<Entry>(compute(s));
            std::unique_lock lock(mutex);
            found = cache.try_emplace(s, std::move(fresh)).first->second.get();
        }
        slot = {id, s, found};
        return *found;
    }

    const Verdict& verdict(const lysc_node* s, Op op) const {
        return entry(s).verdicts[static_cast<size_t>(op)];
    }

    bool allowed(const lyd_node* node, Op op) const {
        return node->schema && verdict(node->schema, op).decide(node);
    }

    // --- walks ----------------------------------------------------------------------------------

    bool keysReadable(const lyd_node* entry) const {
        for (const lyd_node* k = lyd_child(entry); k && k->schema && lysc_is_key(k->schema); k = k->next) {
            if (!allowed(k, Op::Read)) {
                return false;
            }
        }
        return true;
    }

    /// Whether `n` stays in a read reply; the roots of what goes are appended to `out`.
    bool collectUnreadable(const lyd_node* n, std::vector<const lyd_node*>& out) const {
        if (!n->schema) {
            out.push_back(n); // opaque: nothing to decide on, leave it out
            return false;
        }
        const Verdict& v = verdict(n->schema, Op::Read);
        const bool self = v.decide(n);
        if (v.sameBelow) {
            if (!self) {
                out.push_back(n);
            }
            return self;
        }
        if (n->schema->nodetype == LYS_LIST && !keysReadable(n)) {
            out.push_back(n);
            return false;
        }
        const size_t mark = out.size();
        bool anyKept = false;
        for (const lyd_node* c = lyd_child_no_keys(n); c; c = c->next) {
            anyKept = collectUnreadable(c, out) || anyKept;
        }
        if (!self && !anyKept) {
            out.resize(mark);
            out.push_back(n);
            return false;
        }
        return true;
    }

    static lyd_node* dup(const lyd_node* n, uint32_t options) {
        lyd_node* copy = nullptr;
        if (lyd_dup_single(n, nullptr, options | LYD_DUP_WITH_FLAGS, &copy) != LY_SUCCESS) {
            throw YangError("copying " + pathOf(n) + " for a read reply", LYD_CTX(n));
        }
        return copy;
    }

    /// Copy of `n` without the subtrees in `dropped`: what no dropped node lies in is duplicated in
    /// one libyang call. `partial` holds the strict ancestors of the dropped nodes.
    static Subtree copyExcept(const lyd_node* n, const std::unordered_set<const lyd_node*>& dropped,
                              const std::unordered_set<const lyd_node*>& partial) {
        if (dropped.count(n)) {
            return nullptr;
        }
        if (!partial.count(n)) {
            return Subtree(dup(n, LYD_DUP_RECURSIVE));
        }
        Subtree copy(dup(n, 0)); // a list entry comes with its keys, which are never dropped alone
        for (const lyd_node* c = lyd_child_no_keys(n); c; c = c->next) {
            if (Subtree child = copyExcept(c, dropped, partial)) {
                if (lyd_insert_child(copy.get(), child.get()) != LY_SUCCESS) {
                    throw YangError("assembling a read reply at " + pathOf(n), LYD_CTX(n));
                }
                child.release();
            }
        }
        return copy;
    }

    const lyd_node* firstDenied(const lyd_node* n, Op op) const {
        if (!n->schema) {
            return n;
        }
        const Verdict& v = verdict(n->schema, op);
        if (!v.decide(n)) {
            return n;
        }
        if (v.sameBelow) {
            return nullptr;
        }
        for (const lyd_node* c = lyd_child(n); c; c = c->next) {
            if (const lyd_node* d = firstDenied(c, op)) {
                return d;
            }
        }
        return nullptr;
    }

    // --- permitsAll -----------------------------------------------------------------------------

    /// No data node is ever denied `op`: conservative (false may be said of a policy that in
    /// fact permits all), never wrong the other way.
    bool permitsAllData(Op op) const {
        for (const Rule* r : rules) {
            if (!(r->ops & bit(op)) || r->type == RuleType::Operation || r->type == RuleType::Notification) {
                continue;
            }
            if (!r->anyModule() && !core.moduleImplemented(r->module)) {
                continue; // never matches
            }
            if (!r->permit) {
                return false;
            }
            if (r->anyModule() && (r->type == RuleType::Any || r->path.all)) {
                return true; // matches every node: nothing after it is reached
            }
        }
        const bool dflt = op == Op::Read ? core.readPermit : core.writePermit;
        const bool ext = core.schema.dataDenyAll || (isWrite(op) && core.schema.dataDenyWrite);
        return dflt && !ext;
    }

    bool permitsAllNamed(Op op, RuleType type, bool fallback) const {
        for (const Rule* r : rules) {
            if (!(r->ops & bit(op)) ||
                (r->type != RuleType::Any && r->type != type && r->type != RuleType::Data)) {
                continue;
            }
            if (!r->anyModule() && !core.moduleImplemented(r->module)) {
                continue;
            }
            if (!r->permit) {
                return false;
            }
            if (r->anyModule() && r->type == RuleType::Any) {
                return true;
            }
        }
        return fallback;
    }
};

// -------------------------------------------------------------------------------------------------

Access::Access(std::shared_ptr<const Core> core, std::string user, bool bypass)
    : core_(std::move(core)), user_(std::move(user)), bypass_(bypass) {
    if (auto it = core_->userGroups.find(user_); it != core_->userGroups.end()) {
        groups_ = it->second;
    }
    if (bypass_) {
        allReads_ = allWrites_ = allExec_ = allNotifications_ = true;
        return;
    }
    impl_ = std::make_unique<Impl>(*core_);
    if (!groups_.empty()) { // RFC 8341 3.4.4 step 5: no group, no rule-list
        for (const auto& list : core_->lists) {
            const bool mine =
                list.allGroups || std::any_of(list.groups.begin(), list.groups.end(), [&](auto& g) {
                    return std::find(groups_.begin(), groups_.end(), g) != groups_.end();
                });
            if (mine) {
                for (const Rule& r : list.rules) {
                    impl_->rules.push_back(&r);
                }
            }
        }
    }
    impl_->index();
    const auto& schema = core_->schema;
    allReads_ = impl_->permitsAllData(Op::Read);
    allWrites_ = impl_->permitsAllData(Op::Create) && impl_->permitsAllData(Op::Update) &&
                 impl_->permitsAllData(Op::Delete);
    allExec_ = impl_->permitsAllNamed(Op::Exec, RuleType::Operation,
                                      core_->execPermit && !schema.opDenyAll && !schema.alwaysDeniedOps);
    allNotifications_ =
        impl_->permitsAllNamed(Op::Read, RuleType::Notification, core_->readPermit && !schema.notifDenyAll);
}

Access::~Access() = default;

bool Access::exec(const lysc_node* rpc) const {
    if (!rpc || rpc->nodetype != LYS_RPC) {
        throw std::invalid_argument("nacm: exec() takes a top-level rpc; use action() for actions");
    }
    if (bypass_ || isNetconfOp(rpc, "close-session")) {
        return true;
    }
    return impl_->verdict(rpc, Op::Exec).permit;
}

bool Access::exec(std::string_view module, std::string_view rpc) const {
    if (bypass_ || isNetconfOp(module, rpc, "close-session")) {
        return true;
    }
    const std::string mod(module);
    const std::string name(rpc);
    if (const lys_module* m = ly_ctx_get_module_implemented(core_->ctx, mod.c_str())) {
        if (const lysc_node* s = lys_find_child(nullptr, m, name.c_str(), 0, LYS_RPC, 0)) {
            return exec(s);
        }
    }
    const Rule* r = impl_->firstNamed(Op::Exec, RuleType::Operation, module, rpc);
    return r ? r->permit : impl_->execFallback(nullptr, module, rpc, nullptr);
}

bool Access::action(const lyd_node* action) const {
    if (bypass_) {
        return true;
    }
    for (const lyd_node* p = lyd_parent(action); p; p = lyd_parent(p)) {
        if (!impl_->allowed(p, Op::Read)) {
            return false;
        }
    }
    return impl_->allowed(action, Op::Exec);
}

bool Access::allowed(const lyd_node* node, Op op) const {
    return bypass_ || impl_->allowed(node, op);
}

SchemaVerdict Access::decide(const lysc_node* schema, Op op) const {
    if (bypass_) {
        return {SchemaDecision::Permit, true};
    }
    const Verdict& v = impl_->verdict(schema, op);
    if (!v.steps.empty()) {
        return {SchemaDecision::PerInstance, v.sameBelow};
    }
    return {v.permit ? SchemaDecision::Permit : SchemaDecision::Deny, v.sameBelow};
}

namespace {
bool alwaysDelivered(std::string_view module, std::string_view name) {
    // RFC 5277 replayComplete / notificationComplete: 3.4.6 step 3.
    return module == "nc-notifications" && (name == "replayComplete" || name == "notificationComplete");
}
} // namespace

bool Access::notification(const lyd_node* notification) const {
    if (bypass_) {
        return true;
    }
    const lysc_node* s = notification->schema;
    if (!s || s->nodetype != LYS_NOTIF) {
        throw std::invalid_argument("nacm: notification() takes a notification node");
    }
    if (alwaysDelivered(s->module->name, s->name)) {
        return true;
    }
    if (isTopNotification(s)) {
        return impl_->verdict(s, Op::Read).permit;
    }
    for (const lyd_node* p = lyd_parent(notification); p; p = lyd_parent(p)) {
        if (!impl_->allowed(p, Op::Read)) {
            return false;
        }
    }
    return impl_->allowed(notification, Op::Read);
}

bool Access::notification(std::string_view module, std::string_view name) const {
    if (bypass_ || alwaysDelivered(module, name)) {
        return true;
    }
    const std::string mod(module);
    const std::string n(name);
    if (const lys_module* m = ly_ctx_get_module_implemented(core_->ctx, mod.c_str())) {
        if (const lysc_node* s = lys_find_child(nullptr, m, n.c_str(), 0, LYS_NOTIF, 0)) {
            return impl_->verdict(s, Op::Read).permit;
        }
    }
    const Rule* r = impl_->firstNamed(Op::Read, RuleType::Notification, module, name);
    return r ? r->permit : core_->readPermit;
}

namespace {
/// The schema node of an opaque node made by lyd_new_path2 (a leaf named without its value).
const lysc_node* schemaOfOpaque(const ly_ctx* ctx, const lyd_node* node) {
    const auto* o = reinterpret_cast<const lyd_node_opaq*>(node);
    const lyd_node* parent = lyd_parent(node);
    const lys_module* module = o->name.module_name ? ly_ctx_get_module_implemented(ctx, o->name.module_name)
                                                   : (parent ? parent->schema->module : nullptr);
    if (!module || (parent && !parent->schema)) {
        return nullptr;
    }
    return lys_find_child(parent ? parent->schema : nullptr, module, o->name.name, 0, 0, 0);
}
} // namespace

bool Access::readablePath(const ly_ctx* ctx, const std::string& path) const {
    if (bypass_ || allReads_) {
        return true;
    }
    lyd_node* top = nullptr;
    lyd_node* node = nullptr;
    // A leaf named without its value cannot be made: LYD_NEW_PATH_OPAQ makes it an opaque node
    // under real ancestors, and the decision is taken on its parent with the leaf's rules.
    const LY_ERR rc = lyd_new_path2(nullptr, ctx, path.c_str(), nullptr, 0, LYD_ANYDATA_STRING,
                                    LYD_NEW_PATH_OPAQ, &top, &node);
    const Tree scratch{top};
    if (rc != LY_SUCCESS || !node) {
        return false; // never more permissive than the rules
    }
    const lysc_node* schema = node->schema;
    const lyd_node* at = node;
    if (!schema) {
        schema = schemaOfOpaque(ctx, node);
        at = lyd_parent(node);
        if (!schema) {
            return false;
        }
    }
    // The path carries the keys of every list entry on it (the list-key rule of reads).
    for (const lyd_node* e = at; e; e = lyd_parent(e)) {
        if (e->schema->nodetype == LYS_LIST && !impl_->keysReadable(e)) {
            return false;
        }
    }
    const Verdict& v = impl_->verdict(schema, Op::Read);
    // A top-level leaf has no list above it, so no rule of it has a key predicate.
    return at ? v.decide(at) : v.steps.empty() && v.permit;
}

bool Access::readable(const lyd_node* node) const {
    if (bypass_) {
        return true;
    }
    std::vector<const lyd_node*> dropped;
    return impl_->collectUnreadable(node, dropped);
}

void Access::unreadable(const lyd_node* forest, std::vector<const lyd_node*>& out) const {
    if (bypass_) {
        return;
    }
    for (const lyd_node* n = forest ? lyd_first_sibling(forest) : nullptr; n; n = n->next) {
        impl_->collectUnreadable(n, out);
    }
}

Tree Access::readableCopy(const lyd_node* forest) const {
    std::vector<const lyd_node*> drop;
    unreadable(forest, drop);
    const std::unordered_set<const lyd_node*> dropped(drop.begin(), drop.end());
    std::unordered_set<const lyd_node*> partial;
    for (const lyd_node* d : drop) {
        for (const lyd_node* p = lyd_parent(d); p && partial.insert(p).second; p = lyd_parent(p)) {
        }
    }
    Tree result;
    for (const lyd_node* n = forest ? lyd_first_sibling(forest) : nullptr; n; n = n->next) {
        Subtree copy = Impl::copyExcept(n, dropped, partial);
        if (!copy) {
            continue;
        }
        if (insertSiblings(result, copy.get()) != LY_SUCCESS) {
            throw YangError("assembling a read reply", LYD_CTX(n));
        }
        copy.release();
    }
    return result;
}

void Access::pruneUnreadable(Tree& forest) const {
    if (bypass_ || !forest) {
        return;
    }
    std::vector<const lyd_node*> drop;
    unreadable(forest.get(), drop);
    lyd_node* head = lyd_first_sibling(forest.release());
    for (const lyd_node* d : drop) {
        // `forest` is the caller's own tree: the nodes found in it are theirs to free.
        auto* node = const_cast<lyd_node*>(d);
        if (node == head) {
            head = head->next;
        }
        lyd_free_tree(node);
    }
    forest.reset(head);
}

const lyd_node* Access::firstDenied(const lyd_node* subtree, Op op) const {
    return bypass_ ? nullptr : impl_->firstDenied(subtree, op);
}

std::string Access::explain(const lyd_node* node, Op op) const {
    if (bypass_) {
        return core_->enabled ? "permitted: recovery session" : "permitted: enable-nacm is false";
    }
    const lysc_node* s = node->schema;
    if (!s) {
        return "denied: opaque node";
    }
    std::string why;
    if (isTopRpc(s) || isTopNotification(s)) {
        const bool rpc = isTopRpc(s);
        if (op != (rpc ? Op::Exec : Op::Read)) {
            return "denied: " + std::string(toString(op)) + " does not apply to " + s->name;
        }
        if (rpc && isNetconfOp(s, "close-session")) {
            return "permitted: close-session";
        }
        if (!rpc && alwaysDelivered(s->module->name, s->name)) {
            return "permitted: " + std::string(s->name);
        }
        if (const Rule* r = impl_->firstNamed(op, rpc ? RuleType::Operation : RuleType::Notification,
                                              s->module->name, s->name)) {
            return (r->permit ? "permitted by " : "denied by ") + r->describe();
        }
        if (rpc) {
            impl_->execFallback(s, s->module->name, s->name, &why);
        } else {
            impl_->dataFallback(s, op, &why);
        }
        return why;
    }
    // 3.4.5 step by step: every rule of the user's rule-lists in order, predicates evaluated
    // directly (the cached path groups and hashes them).
    for (const Rule* r : impl_->rules) {
        if (Impl::dataRuleApplies(*r, s, op) &&
            (r->type != RuleType::Data || predicatesHold(r->path.preds, node))) {
            return (r->permit ? "permitted by " : "denied by ") + r->describe();
        }
    }
    impl_->dataFallback(s, op, &why);
    return why;
}

} // namespace ncstore::nacm
