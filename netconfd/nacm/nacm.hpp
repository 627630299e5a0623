// NETCONF Access Control Model (RFC 8341): the rule engine. It decides; the server enforces.
//
// Promises:
//  - Policy::compile reads the /ietf-netconf-acm:nacm configuration (as stored in running, with or
//    without its default nodes: missing leaves take the RFC 8341 defaults enable-nacm true,
//    read-default permit, write-default deny, exec-default permit) once into an immutable Policy.
//    The server keeps a shared_ptr<const Policy> and swaps it when running's nacm subtree changes;
//    sessions holding the old one keep a consistent view until their next request.
//  - A configuration the server must refuse throws ConfigError listing every problem with the
//    data path of the offending node (use it as error-path): a rule-list naming a group that
//    /nacm/groups does not define (ncstored has no transport-provided groups, so such a rule-list
//    could never apply: almost certainly a typo), a rule path that does not parse, names no schema
//    node, or has a predicate that is not a key of its list (or a value its key type refuses).
//    What RFC 8341 defines as simply never matching is accepted and reported in warnings(): a
//    module-name that is not an implemented module, an rpc-name or notification-name that no
//    (such) module defines.
//  - Policy::forUser gives the per-user Access (groups resolved, the rules of the rule-lists of
//    those groups in order, a cache of per-schema-node decisions). Every decision follows RFC 8341
//    3.4.4 (operations), 3.4.5 (data nodes) and 3.4.6 (notifications): rule-lists in
//    configuration order, rules in order, the first rule that matches decides; then the
//    default-deny-all / default-deny-write extensions of the node or an ancestor; then, for
//    operations only, kill-session and delete-config are denied; then the *-default leaves.
//    enable-nacm false or a recovery session permits everything. A user in no group gets the
//    defaults only (RFC 8341 3.4.4 step 5: rule-lists for "*" apply to users with some group).
//  - Cost: a data-node decision never walks the rules. Per schema node and access operation the
//    Access computes once the ordered rules that can match (path ancestor-or-self of the node,
//    module-name "*" or the node's module); when none of them has a key predicate the decision is
//    a constant, otherwise only those predicates are checked against the keys of the node's
//    ancestors, and consecutive rules predicating the same list keys are one hash lookup (a group
//    limited to 1000 devices costs what one device costs). A subtree none of whose schema
//    descendants is named by a rule, carries an extension or (with module-specific rules) crosses
//    into another module gets the decision of its root, and the read and write walks below skip it
//    whole. permitsAll*() say when no check can deny: the server then takes the NACM-off path.
//  - Reads (RFC 8341 3.4.5): a node the user may not read is omitted with its subtree, except that
//    an ancestor of a readable node stays as bare structure (with its list keys) so the readable
//    node can be shown; a list entry with an unreadable key is omitted whole.
//  - Thread safety: Policy and Access are immutable to their users and may be used from any number
//    of threads at once (the decision cache is internally synchronised). The libyang context must
//    outlive every Policy and Access made from it; data trees are only read.
//  - The engine counts nothing by itself: the server counts refused requests in Counters, which
//    it keeps across policy swaps.
#pragma once

#include "ncstore/yang.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ncstore::nacm {

/// RFC 8341 access operations.
enum class Op : uint8_t { Create, Read, Update, Delete, Exec };

/// What the configuration says about a node, whatever the instance.
enum class SchemaDecision : uint8_t { Permit, Deny, PerInstance };

/// Decision for every instance of a schema node and access operation.
struct SchemaVerdict {
    SchemaDecision decision;
    /// True when every schema descendant gets the same decision as the node, for the same
    /// instance keys: a walk can decide a whole subtree from its root.
    bool sameBelow;
};

/// One thing wrong in a NACM configuration.
struct Problem {
    std::string path;    ///< data path of the offending node, for error-path
    std::string message; ///< what is wrong, naming the rule-list/rule/group concerned
};

/// A NACM configuration the server must refuse (map to rpc-error invalid-value, error-type
/// application, error-path problems().front().path).
class ConfigError : public std::runtime_error {
public:
    explicit ConfigError(std::vector<Problem> problems);
    const std::vector<Problem>& problems() const noexcept { return problems_; }

private:
    std::vector<Problem> problems_;
};

/// The RFC 8341 counters. Count once per refused request (an edit refused for ten nodes is one
/// denied-data-write), once per notification dropped for a subscription.
struct Counters {
    std::atomic<uint32_t> deniedOperations{0};
    std::atomic<uint32_t> deniedDataWrites{0};
    std::atomic<uint32_t> deniedNotifications{0};

    /// /ietf-netconf-acm:nacm holding the three counters (state data, for <get> replies).
    /// Throws YangError when ietf-netconf-acm is not in `ctx`.
    Tree state(const ly_ctx* ctx) const;
};

class Access;

namespace detail {
struct Core;
}

/// A compiled NACM configuration.
class Policy {
public:
    /// Everything wrong with `config` (see ConfigError); empty when compile would succeed.
    /// `config` is the running forest or its /ietf-netconf-acm:nacm container, or nullptr.
    static std::vector<Problem> validate(const lyd_node* config, const ly_ctx* ctx);

    /// Compiles `config` (as for validate). Throws ConfigError.
    static std::shared_ptr<const Policy> compile(const lyd_node* config, const ly_ctx* ctx);

    /// The access object for a session of `user`; `recovery` for the recovery session (RFC 8341
    /// 3.3.3), which bypasses every check. Objects are cached per user: cheap to call per request.
    std::shared_ptr<const Access> forUser(std::string_view user, bool recovery = false) const;

    /// /nacm/enable-nacm.
    bool enabled() const noexcept;
    /// Rules that can never match (unknown module, rpc or notification names), one line each.
    const std::vector<std::string>& warnings() const noexcept;

    ~Policy();
    Policy(const Policy&) = delete;
    Policy& operator=(const Policy&) = delete;

private:
    explicit Policy(std::shared_ptr<const detail::Core> core);

    struct UserCache;
    std::shared_ptr<const detail::Core> core_;
    std::unique_ptr<UserCache> users_;
};

/// What one user may do under one Policy.
class Access {
public:
    /// Nothing this user may ask for is ever denied: skip NACM entirely (same code path as off).
    bool permitsAll() const noexcept { return allReads_ && allWrites_ && allExec_ && allNotifications_; }
    /// No data node read is ever denied (state data included).
    bool permitsAllReads() const noexcept { return allReads_; }
    /// No create, update or delete of a data node is ever denied.
    bool permitsAllWrites() const noexcept { return allWrites_; }
    /// No notification is ever withheld from this user.
    bool permitsAllNotifications() const noexcept { return allNotifications_; }

    /// Protocol operation (RFC 8341 3.4.4), `rpc` a top-level rpc schema node. close-session is
    /// always permitted. For an action use action().
    bool exec(const lysc_node* rpc) const;
    /// As exec(rpc), by module and operation name (an rpc the context does not know is decided
    /// by the rules and exec-default).
    bool exec(std::string_view module, std::string_view rpc) const;
    /// Action (RFC 8341 3.4.4 and 3.4.5): read on every ancestor data node, exec on the action.
    /// `action` is the action node of a parsed action request, with its ancestors.
    bool action(const lyd_node* action) const;

    /// Data node access (RFC 8341 3.4.5) for one node of a data tree with its ancestors (key
    /// predicates of rules are checked against the ancestors' keys). Reads ask readable(),
    /// unreadable() or readableCopy() instead, which also apply the list-key rule.
    bool allowed(const lyd_node* node, Op op) const;
    /// The decision for every instance of `schema`.
    SchemaVerdict decide(const lysc_node* schema, Op op) const;

    /// Notification (RFC 8341 3.4.6) for a parsed notification (top-level, or nested in data
    /// nodes: then every ancestor must also be readable). replayComplete and notificationComplete
    /// are always permitted.
    bool notification(const lyd_node* notification) const;
    /// As notification(), for a top-level notification by module and name.
    bool notification(std::string_view module, std::string_view name) const;

    /// Whether `node` appears in a read reply: readable itself or the ancestor of a readable
    /// node, and, for a list entry, its keys readable; its ancestors are not checked.
    bool readable(const lyd_node* node) const;
    /// Whether the node named by the data path `path` (as libyang prints one, "/m:a/b[k='v']/c";
    /// the node need not exist, e.g. the target of a netconf-config-change edit that deleted it)
    /// may be read, and the keys of every list entry on the path too (the path shows them).
    /// A path the context cannot resolve is not readable.
    bool readablePath(const ly_ctx* ctx, const std::string& path) const;
    /// Appends to `out` the roots of the subtrees of `forest` (all siblings) that a read reply
    /// must leave out. The roots are disjoint, in document order. Cheap: a few ns per node it
    /// visits, and it visits no node below a subtree root whose decision covers the subtree. When
    /// it finds nothing, print `forest` itself: a copy costs about what printing does.
    void unreadable(const lyd_node* forest, std::vector<const lyd_node*>& out) const;
    /// A copy of `forest` (all siblings) without what the user may not read; flags are kept
    /// (LYD_DEFAULT: with-defaults printing works on the copy). nullptr when nothing is readable.
    /// Subtrees with nothing to leave out are duplicated whole (one libyang call each).
    Tree readableCopy(const lyd_node* forest) const;
    /// Frees from `forest` what the user may not read (an owned copy, e.g. a filter's result).
    void pruneUnreadable(Tree& forest) const;

    /// The first node, in document order, of the subtree rooted at `subtree` on which `op` is
    /// denied; nullptr when `op` is permitted on every node of it. For checking a created or
    /// deleted subtree: each of its nodes is created or deleted.
    const lyd_node* firstDenied(const lyd_node* subtree, Op op) const;

    /// Why `node` gets the decision it gets, e.g. "denied by rule 'deny-nacm' of rule-list
    /// 'guest-acl'" or "permitted by read-default". For logs and tests; evaluates the RFC steps
    /// directly, without the cache.
    std::string explain(const lyd_node* node, Op op) const;

    const std::string& user() const noexcept { return user_; }
    /// The user's groups from /nacm/groups, in configuration order.
    const std::vector<std::string>& groups() const noexcept { return groups_; }

    ~Access();
    Access(const Access&) = delete;
    Access& operator=(const Access&) = delete;

private:
    friend class Policy;
    struct Impl;
    Access(std::shared_ptr<const detail::Core> core, std::string user, bool bypass);

    std::shared_ptr<const detail::Core> core_;
    std::string user_;
    std::vector<std::string> groups_;
    bool bypass_ = false; // NACM off or recovery session
    bool allReads_ = false;
    bool allWrites_ = false;
    bool allExec_ = false;
    bool allNotifications_ = false;
    std::unique_ptr<Impl> impl_;
};

/// Name of an access operation as RFC 8341 spells it ("create", "read", ...).
std::string_view toString(Op op) noexcept;

} // namespace ncstore::nacm
