#include "sessionaccess.hpp"

#include "ncstore/log.hpp"

#include <cstring>

namespace ncstore::netconfd {

namespace {

constexpr const char* kNacmModule = "ietf-netconf-acm";

/// What the server enforces when the stored configuration cannot be compiled: nothing but the
/// recovery session (close-session stays permitted: the engine never denies it).
constexpr const char* kLockdown = R"(<nacm xmlns="urn:ietf:params:xml:ns:yang:ietf-netconf-acm">
  <read-default>deny</read-default><write-default>deny</write-default><exec-default>deny</exec-default>
</nacm>)";

nacm::Op accessOp(ds::ChangeOp op) {
    switch (op) {
    case ds::ChangeOp::Create:
        return nacm::Op::Create;
    case ds::ChangeOp::Delete:
        return nacm::Op::Delete;
    case ds::ChangeOp::Update:
    case ds::ChangeOp::Replace:
    case ds::ChangeOp::Move:
        break;
    }
    return nacm::Op::Update;
}

bool isTerminal(const lysc_node* s) {
    return (s->nodetype & (LYS_LEAF | LYS_LEAFLIST)) != 0;
}

/// A non-presence container is not written for its own sake: it comes and goes with its
/// children (RFC 7950 7.5.1), so only they are checked.
bool isNonPresence(const lysc_node* s) {
    return s->nodetype == LYS_CONTAINER && !(s->flags & LYS_PRESENCE);
}

/// The first node of the subtree at `n`, in document order, on which `op` is denied. A node
/// holding its default value is not written (changes.hpp rule 1): it and its (default) subtree
/// are skipped.
const lyd_node* firstDenied(const nacm::Access& access, const lyd_node* n, nacm::Op op) {
    if (n->flags & LYD_DEFAULT) {
        return nullptr;
    }
    const bool allowed = access.allowed(n, op);
    if (!allowed && !isNonPresence(n->schema)) {
        return n;
    }
    if (allowed && access.decide(n->schema, op).sameBelow) {
        return nullptr; // the whole subtree gets the decision of its root
    }
    for (const lyd_node* c = lyd_child(n); c; c = c->next) {
        if (const lyd_node* denied = firstDenied(access, c, op)) {
            return denied;
        }
    }
    return nullptr;
}

/// Rebuilds the changed node of `c` with its ancestors (list keys from the path's predicates)
/// into `scratch`: for a node the write deleted, which the resulting tree no longer has.
const lyd_node* rebuild(const ly_ctx* ctx, const ds::Change& c, Tree& scratch) {
    const bool deleted = c.op == ds::ChangeOp::Delete;
    const std::optional<std::string>& value = deleted ? c.oldValue : c.newValue;
    const lyd_node* subtree = deleted ? c.oldTree.get() : c.newTree.get();
    const bool leaf = c.schema->nodetype == LYS_LEAF;
    lyd_node* top = nullptr;
    lyd_node* node = nullptr;
    if (lyd_new_path2(nullptr, ctx, c.path.c_str(), leaf && value ? value->c_str() : nullptr, 0,
                      LYD_ANYDATA_STRING, 0, &top, &node) != LY_SUCCESS ||
        !node) {
        throw YangError("NACM: cannot rebuild " + c.path + " for its write check", ctx);
    }
    scratch.reset(top);
    if (subtree && !isTerminal(c.schema) && !(c.schema->nodetype & LYS_ANYDATA)) {
        const bool list = c.schema->nodetype == LYS_LIST;
        for (const lyd_node* child = lyd_child(subtree); child; child = child->next) {
            if (list && child->schema && lysc_is_key(child->schema)) {
                continue; // made from the path
            }
            if (lyd_dup_single(child, reinterpret_cast<lyd_node_inner*>(node),
                               LYD_DUP_RECURSIVE | LYD_DUP_WITH_FLAGS, nullptr) != LY_SUCCESS) {
                throw YangError("NACM: cannot rebuild " + c.path + " for its write check", ctx);
            }
        }
    }
    return node;
}

/// Whether a list is among the strict ancestors of `s`: only then can a rule's key predicate
/// look above the node, so that a copy of it without its ancestors could be decided otherwise.
bool underList(const lysc_node* s) {
    for (const lysc_node* p = s->parent; p; p = p->parent) {
        if (p->nodetype == LYS_LIST) {
            return true;
        }
    }
    return false;
}

const lysc_node* topOf(const lysc_node* s) {
    while (s->parent) {
        s = s->parent;
    }
    return s;
}

/// How many groups and rule-lists the /nacm of `forest` has.
std::pair<size_t, size_t> countNacm(const lyd_node* forest) {
    size_t groups = 0;
    size_t lists = 0;
    const lyd_node* nacm = nacmTop(forest);
    for (const lyd_node* c = nacm ? lyd_child(nacm) : nullptr; c; c = c->next) {
        if (std::strcmp(c->schema->name, "rule-list") == 0) {
            ++lists;
        } else if (std::strcmp(c->schema->name, "groups") == 0) {
            for (const lyd_node* g = lyd_child(c); g; g = g->next) {
                ++groups;
            }
        }
    }
    return {groups, lists};
}

} // namespace

bool isNacmTop(const lysc_node* node) {
    const lysc_node* top = topOf(node);
    return std::strcmp(top->module->name, kNacmModule) == 0 && std::strcmp(top->name, "nacm") == 0;
}

const lyd_node* nacmTop(const lyd_node* forest) {
    for (const lyd_node* n = forest ? lyd_first_sibling(forest) : nullptr; n; n = n->next) {
        if (n->schema && !n->schema->parent && isNacmTop(n->schema)) {
            return n;
        }
    }
    return nullptr;
}

// --- AccessControl ------------------------------------------------------------------------------

AccessControl::AccessControl(const ly_ctx* ctx, std::string recoveryUser)
    : ctx_(ctx), recovery_(std::move(recoveryUser)), policy_(nacm::Policy::compile(nullptr, ctx)) {}

std::shared_ptr<const nacm::Policy> AccessControl::compileStored(const ds::Store& store,
                                                                 bool& lockdown) const {
    std::shared_ptr<const nacm::Policy> compiled;
    std::vector<nacm::Problem> problems;
    std::pair<size_t, size_t> counts;
    store.read(ds::Datastore::Running, [&](const lyd_node* tree) {
        compiled.reset();
        problems.clear();
        counts = countNacm(tree);
        try {
            compiled = nacm::Policy::compile(tree, ctx_);
        } catch (const nacm::ConfigError& e) {
            problems = e.problems();
        }
    });
    lockdown = !compiled;
    if (compiled) {
        for (const auto& w : compiled->warnings()) {
            NCS_LOG(warning) << "NACM: " << w;
        }
        NCS_LOG(info) << "NACM: " << (compiled->enabled() ? "enabled" : "disabled (enable-nacm false)")
                      << ", " << counts.first << " groups, " << counts.second << " rule-lists; recovery user "
                      << (recovery_.empty() ? "none" : recovery_);
        if (compiled->enabled() && counts.second == 0) {
            NCS_LOG(warning)
                << "NACM: running has no rule-list: every user gets the RFC 8341 defaults (reads "
                   "permitted, writes denied); `ncstored --reset-nacm` writes the first-start rules";
        }
        return compiled;
    }
    for (const auto& p : problems) {
        NCS_LOG(error) << "NACM: the stored configuration is invalid: " << p.message << " (" << p.path << ")";
    }
    NCS_LOG(error) << "NACM: LOCKDOWN: every request is denied but the recovery user's ("
                   << (recovery_.empty() ? "none configured: see --nacm-recovery-user" : recovery_)
                   << "); fix /nacm as the recovery user, or stop the server and run `ncstored --reset-nacm`";
    const Tree config = parseData(ctx_, kLockdown, LYD_XML, LYD_PARSE_STRICT | LYD_PARSE_NO_STATE,
                                  LYD_VALIDATE_PRESENT | LYD_VALIDATE_NO_STATE);
    return nacm::Policy::compile(config.get(), ctx_);
}

void AccessControl::load(const ds::Store& store) {
    const std::uint64_t seq = reserve();
    bool locked = false;
    auto compiled = compileStored(store, locked);
    install(std::move(compiled), seq, locked);
}

void AccessControl::reload(const ds::Store& store) {
    // Taken before the read: a write whose check comes after it installs over this one.
    const std::uint64_t seq = reserve();
    bool locked = false;
    auto compiled = compileStored(store, locked);
    if (locked) {
        return; // what was validated when written cannot fail now: keep the policy in force
    }
    install(std::move(compiled), seq);
}

void AccessControl::install(std::shared_ptr<const nacm::Policy> policy, std::uint64_t seq, bool lockdown) {
    std::shared_ptr<const nacm::Policy> old; // freed outside the lock
    std::lock_guard lock(mutex_);
    if (seq < installed_) {
        return;
    }
    installed_ = seq;
    lockdown_ = lockdown;
    old = std::exchange(policy_, std::move(policy));
}

std::shared_ptr<const nacm::Policy> AccessControl::policy() const {
    std::lock_guard lock(mutex_);
    return policy_;
}

std::shared_ptr<const nacm::Access> AccessControl::forUser(const std::string& user) const {
    return policy()->forUser(user, isRecoveryUser(user));
}

// --- SessionAccess ------------------------------------------------------------------------------

bool SessionAccess::maySend(const lyd_node* notification) const {
    if (current()->notification(notification)) {
        return true;
    }
    ++control_.counters().deniedNotifications;
    return false;
}

bool SessionAccess::maySend(const nacm::Access& access, std::string_view module,
                            std::string_view name) const {
    if (access.notification(module, name)) {
        return true;
    }
    ++control_.counters().deniedNotifications;
    return false;
}

// --- WriteCheck ---------------------------------------------------------------------------------

void WriteCheck::checkWrite(const ds::ChangeSet& changes, const lyd_node* result) const {
    if (access_) {
        checkAccess(changes, result);
    }
    if (mayChangeNacm_) {
        compileNacm(changes, result);
    }
}

void WriteCheck::checkAccess(const ds::ChangeSet& changes, const lyd_node* result) const {
    const nacm::Access& access = *access_;
    for (const ds::Change& c : changes.changes) {
        const nacm::Op op = accessOp(c.op);
        const nacm::SchemaVerdict verdict = access.decide(c.schema, op);
        std::string deniedPath;
        const bool np = isNonPresence(c.schema);
        if (verdict.decision == nacm::SchemaDecision::Deny && !np) {
            deniedPath = c.path;
        } else if (verdict.decision != nacm::SchemaDecision::Permit ||
                   (!verdict.sameBelow && !isTerminal(c.schema))) {
            // The instance's keys or its descendants decide. The change set's copy of a created
            // or deleted subtree decides like the node in place when no list is above it (a
            // device, an interface): no lookup. The error path needs the node in place.
            const lyd_node* copy = c.op == ds::ChangeOp::Delete ? c.oldTree.get() : c.newTree.get();
            if (copy && !underList(c.schema) && !firstDenied(access, copy, op)) {
                continue;
            }
            Tree scratch;
            lyd_node* found = nullptr;
            if (c.op == ds::ChangeOp::Delete || !result ||
                lyd_find_path(result, c.path.c_str(), 0, &found) != LY_SUCCESS || !found) {
                found = const_cast<lyd_node*>(rebuild(control_.context(), c, scratch));
            }
            if (const lyd_node* denied = firstDenied(access, found, op)) {
                deniedPath = pathOf(denied);
            }
        }
        if (!deniedPath.empty()) {
            ++control_.counters().deniedDataWrites;
            NCS_LOG(info) << "NACM: " << toString(changes.datastore) << " write by " << changes.user
                          << " (session " << changes.session << ") denied: " << nacm::toString(op) << " "
                          << deniedPath;
            throw ds::Error(ds::ErrorTag::AccessDenied,
                            "access denied: user '" + changes.user + "' may not " +
                                std::string(nacm::toString(op)) + " " + deniedPath,
                            deniedPath);
        }
    }
}

void WriteCheck::compileNacm(const ds::ChangeSet& changes, const lyd_node* result) const {
    if (changes.datastore != ds::Datastore::Running) {
        return; // only running's /nacm is in force; a commit checks candidate's
    }
    bool changed = false;
    for (const ds::Change& c : changes.changes) {
        if (isNacmTop(c.schema)) {
            changed = true;
            break;
        }
    }
    if (!changed) {
        return;
    }
    seq_ = control_.reserve(); // under the store's lock: in the order of the writes
    try {
        compiled_ = nacm::Policy::compile(result, control_.context());
    } catch (const nacm::ConfigError& e) {
        compiled_.reset();
        throw ds::Error(ds::ErrorTag::InvalidValue, e.what(), e.problems().front().path);
    }
    for (const auto& w : compiled_->warnings()) {
        NCS_LOG(warning) << "NACM: " << w;
    }
}

void WriteCheck::settle(const ds::Store* failed) {
    if (!compiled_ || !install_) {
        return;
    }
    if (failed) {
        control_.reload(*failed);
    } else {
        control_.install(std::move(compiled_), seq_);
        NCS_LOG(info) << "NACM: new configuration in force";
    }
    compiled_.reset();
}

} // namespace ncstore::netconfd
