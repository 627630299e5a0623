// Internal to the NACM engine: the compiled configuration (rules, rule-lists, what the schema
// holds that matters to NACM) shared by the policy compiler (policy.cpp) and the per-user
// decisions (access.cpp).
#pragma once

#include "nacm.hpp"
#include "rulepath.hpp"

#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace ncstore::nacm::detail {

inline constexpr const char* kNacmModule = "ietf-netconf-acm";
inline constexpr size_t kOps = 5;
inline constexpr uint8_t kAllOps = 0x1f;

constexpr uint8_t bit(Op op) {
    return static_cast<uint8_t>(1u << static_cast<unsigned>(op));
}

inline bool isWrite(Op op) {
    return op == Op::Create || op == Op::Update || op == Op::Delete;
}

enum ExtFlags : uint8_t { kDenyAll = 1, kDenyWrite = 2 };

/// The ietf-netconf-acm extensions (ExtFlags) on `node` itself.
uint8_t nacmExtensions(const lysc_node* node);
/// The extensions on `node` or any ancestor ("the data node and all its descendants").
uint8_t inheritedExtensions(const lysc_node* node);

inline bool isTopRpc(const lysc_node* s) {
    return s->nodetype == LYS_RPC;
}

inline bool isTopNotification(const lysc_node* s) {
    return s->nodetype == LYS_NOTIF && !s->parent;
}

/// Whether `s` is the ietf-netconf operation `name`.
bool isNetconfOp(const lysc_node* s, const char* name);
bool isNetconfOp(std::string_view module, std::string_view rpc, std::string_view name);

inline std::string inQuotes(std::string_view s) {
    return "'" + std::string(s) + "'";
}

enum class RuleType : uint8_t { Any, Operation, Notification, Data };

struct Rule {
    std::string name;
    std::string list;
    std::string module; ///< "*" for any
    RuleType type = RuleType::Any;
    std::string opName; ///< rpc-name or notification-name, "*" for any
    RulePath path;      ///< data-node rules
    uint8_t ops = kAllOps;
    bool permit = false;

    bool anyModule() const { return module == "*"; }
    bool moduleMatches(const lys_module* m) const { return anyModule() || module == m->name; }
    bool moduleMatches(std::string_view m) const { return anyModule() || module == m; }
    bool nameMatches(std::string_view n) const { return opName == "*" || opName == n; }
    std::string describe() const { return "rule " + inQuotes(name) + " of rule-list " + inQuotes(list); }
};

struct RuleList {
    std::string name;
    std::vector<std::string> groups;
    bool allGroups = false;
    std::vector<Rule> rules;
};

/// What the policy needs to know about the whole schema, found in one walk of it.
struct SchemaIndex {
    // Strict ancestors of nodes carrying an extension / of nodes in another module than their
    // parent: a subtree below such an ancestor may decide differently from its root.
    std::unordered_set<const lysc_node*> aboveDenyAll;
    std::unordered_set<const lysc_node*> aboveDenyWrite;
    std::unordered_set<const lysc_node*> aboveModuleChange;
    bool dataDenyAll = false;             ///< some data node carries default-deny-all
    bool dataDenyWrite = false;           ///< some data node carries default-deny-write
    bool opDenyAll = false;               ///< some rpc or action is default-deny-all (itself or an ancestor)
    bool notifDenyAll = false;            ///< some notification is default-deny-all (itself or an ancestor)
    bool alwaysDeniedOps = false;         ///< ietf-netconf kill-session or delete-config exists
    std::unordered_set<std::string> rpcs; ///< "module:name" and ":name"
    std::unordered_set<std::string> notifications; ///< "module:name" and ":name"

    /// Adds the strict ancestors of `node` to `set`.
    static void addAncestors(std::unordered_set<const lysc_node*>& set, const lysc_node* node);
    /// One walk of every implemented module's schema.
    static SchemaIndex build(const ly_ctx* ctx);

private:
    void visit(const lysc_node* node);
};

struct Core {
    const ly_ctx* ctx = nullptr;
    bool enabled = true;
    bool readPermit = true;
    bool writePermit = false;
    bool execPermit = true;
    std::unordered_map<std::string, std::vector<std::string>> userGroups;
    std::vector<RuleList> lists;
    SchemaIndex schema;
    std::vector<std::string> warnings;

    bool moduleImplemented(const std::string& name) const {
        return ly_ctx_get_module_implemented(ctx, name.c_str()) != nullptr;
    }
};

} // namespace ncstore::nacm::detail
