#include "core.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>

namespace ncstore::nacm {

namespace detail {

uint8_t nacmExtensions(const lysc_node* node) {
    uint8_t flags = 0;
    LY_ARRAY_COUNT_TYPE i;
    LY_ARRAY_FOR(node->exts, i) {
        const lysc_ext* def = node->exts[i].def;
        if (!def || !def->module || std::strcmp(def->module->name, kNacmModule) != 0) {
            continue;
        }
        if (std::strcmp(def->name, "default-deny-all") == 0) {
            flags |= kDenyAll;
        } else if (std::strcmp(def->name, "default-deny-write") == 0) {
            flags |= kDenyWrite;
        }
    }
    return flags;
}

uint8_t inheritedExtensions(const lysc_node* node) {
    uint8_t flags = 0;
    for (const lysc_node* n = node; n; n = n->parent) {
        flags |= nacmExtensions(n);
    }
    return flags;
}

bool isNetconfOp(const lysc_node* s, const char* name) {
    return s && std::strcmp(s->module->name, "ietf-netconf") == 0 && std::strcmp(s->name, name) == 0;
}

bool isNetconfOp(std::string_view module, std::string_view rpc, std::string_view name) {
    return module == "ietf-netconf" && rpc == name;
}

namespace {

/// Whether `s` is an operation or notification, or lies inside one (input, output, content).
bool inOperationOrNotification(const lysc_node* s) {
    for (const lysc_node* n = s; n; n = n->parent) {
        if (n->nodetype & (LYS_RPC | LYS_ACTION | LYS_NOTIF | LYS_INPUT | LYS_OUTPUT)) {
            return true;
        }
    }
    return false;
}

} // namespace

void SchemaIndex::addAncestors(std::unordered_set<const lysc_node*>& set, const lysc_node* node) {
    for (const lysc_node* p = node->parent; p; p = p->parent) {
        if (!set.insert(p).second) {
            break; // its ancestors are in already
        }
    }
}

void SchemaIndex::visit(const lysc_node* node) {
    const uint8_t ext = nacmExtensions(node);
    const bool inOp = inOperationOrNotification(node);
    if (ext & kDenyAll) {
        addAncestors(aboveDenyAll, node);
        dataDenyAll |= !inOp;
    }
    if (ext & kDenyWrite) {
        addAncestors(aboveDenyWrite, node);
        dataDenyWrite |= !inOp;
    }
    if (node->parent && node->parent->module != node->module) {
        addAncestors(aboveModuleChange, node);
    }
    if (node->nodetype & (LYS_RPC | LYS_ACTION)) {
        opDenyAll |= (inheritedExtensions(node) & kDenyAll) != 0;
        if (node->nodetype == LYS_RPC) {
            rpcs.insert(std::string(node->module->name) + ":" + node->name);
            rpcs.insert(std::string(":") + node->name);
        }
        alwaysDeniedOps |= isNetconfOp(node, "kill-session") || isNetconfOp(node, "delete-config");
    }
    if (node->nodetype == LYS_NOTIF) {
        notifDenyAll |= (inheritedExtensions(node) & kDenyAll) != 0;
        notifications.insert(std::string(node->module->name) + ":" + node->name);
        notifications.insert(std::string(":") + node->name);
    }
}

SchemaIndex SchemaIndex::build(const ly_ctx* ctx) {
    SchemaIndex index;
    uint32_t i = 0;
    while (const lys_module* mod = ly_ctx_get_module_iter(ctx, &i)) {
        if (!mod->implemented || !mod->compiled) {
            continue;
        }
        lysc_module_dfs_full(
            mod,
            [](lysc_node* node, void* data, ly_bool*) -> LY_ERR {
                static_cast<SchemaIndex*>(data)->visit(node);
                return LY_SUCCESS;
            },
            &index);
    }
    return index;
}

} // namespace detail

using detail::bit;
using detail::Core;
using detail::inQuotes;
using detail::kAllOps;
using detail::kNacmModule;
using detail::Rule;
using detail::RuleType;

namespace {

const char* valueOf(const lyd_node* node) {
    return node ? lyd_get_value(node) : nullptr;
}

/// The child of `parent` named `name` (schema nodes only), or nullptr.
const lyd_node* childNamed(const lyd_node* parent, const char* name) {
    for (const lyd_node* c = lyd_child(parent); c; c = c->next) {
        if (c->schema && std::strcmp(c->schema->name, name) == 0) {
            return c;
        }
    }
    return nullptr;
}

bool permitValue(const lyd_node* leaf, bool dflt) {
    const char* v = valueOf(leaf);
    return v ? std::strcmp(v, "permit") == 0 : dflt;
}

uint8_t parseOps(const char* v) {
    if (!v || std::strcmp(v, "*") == 0) {
        return kAllOps;
    }
    uint8_t ops = 0;
    std::string_view rest(v);
    while (!rest.empty()) {
        const size_t sp = rest.find(' ');
        const std::string_view tok = rest.substr(0, sp);
        for (Op op : {Op::Create, Op::Read, Op::Update, Op::Delete, Op::Exec}) {
            if (tok == toString(op)) {
                ops |= bit(op);
            }
        }
        rest = sp == std::string_view::npos ? std::string_view{} : rest.substr(sp + 1);
    }
    return ops;
}

const lyd_node* findNacm(const lyd_node* config) {
    for (const lyd_node* n = config ? lyd_first_sibling(config) : nullptr; n; n = n->next) {
        if (n->schema && std::strcmp(n->schema->name, "nacm") == 0 &&
            std::strcmp(n->schema->module->name, kNacmModule) == 0) {
            return n;
        }
    }
    return nullptr;
}

/// Builds the core from the configuration; problems are collected, not thrown.
std::shared_ptr<Core> buildCore(const lyd_node* config, const ly_ctx* ctx, std::vector<Problem>& problems) {
    if (!ctx) {
        throw std::invalid_argument("nacm: no libyang context");
    }
    auto core = std::make_shared<Core>();
    core->ctx = ctx;
    core->schema = detail::SchemaIndex::build(ctx);
    const lyd_node* nacm = findNacm(config);
    if (!nacm) {
        return core;
    }
    if (const char* v = valueOf(childNamed(nacm, "enable-nacm"))) {
        core->enabled = std::strcmp(v, "true") == 0;
    }
    core->readPermit = permitValue(childNamed(nacm, "read-default"), true);
    core->writePermit = permitValue(childNamed(nacm, "write-default"), false);
    core->execPermit = permitValue(childNamed(nacm, "exec-default"), true);

    std::unordered_set<std::string> groupNames;
    if (const lyd_node* groups = childNamed(nacm, "groups")) {
        for (const lyd_node* g = lyd_child(groups); g; g = g->next) {
            const char* name = g->schema ? valueOf(childNamed(g, "name")) : nullptr;
            if (!name) {
                continue;
            }
            groupNames.insert(name);
            for (const lyd_node* u = lyd_child(g); u; u = u->next) {
                if (u->schema && std::strcmp(u->schema->name, "user-name") == 0) {
                    auto& mine = core->userGroups[lyd_get_value(u)];
                    if (std::find(mine.begin(), mine.end(), name) == mine.end()) {
                        mine.emplace_back(name);
                    }
                }
            }
        }
    }

    for (const lyd_node* rl = lyd_child(nacm); rl; rl = rl->next) {
        if (!rl->schema || std::strcmp(rl->schema->name, "rule-list") != 0) {
            continue;
        }
        detail::RuleList list;
        const char* listName = valueOf(childNamed(rl, "name"));
        list.name = listName ? listName : "";
        for (const lyd_node* c = lyd_child(rl); c; c = c->next) {
            if (!c->schema) {
                continue;
            }
            if (std::strcmp(c->schema->name, "group") == 0) {
                const std::string g = lyd_get_value(c);
                if (g == "*") {
                    list.allGroups = true;
                } else if (!groupNames.count(g)) {
                    problems.push_back({pathOf(c), "rule-list " + inQuotes(list.name) + " names group " +
                                                       inQuotes(g) + ", which /nacm/groups does not define"});
                }
                list.groups.push_back(g);
                continue;
            }
            if (std::strcmp(c->schema->name, "rule") != 0) {
                continue;
            }
            Rule rule;
            rule.list = list.name;
            const char* ruleName = valueOf(childNamed(c, "name"));
            rule.name = ruleName ? ruleName : "";
            const char* module = valueOf(childNamed(c, "module-name"));
            rule.module = module ? module : "*";
            rule.ops = parseOps(valueOf(childNamed(c, "access-operations")));
            const char* action = valueOf(childNamed(c, "action"));
            if (!action) {
                problems.push_back({pathOf(c), rule.describe() + " has no action"});
                continue;
            }
            rule.permit = std::strcmp(action, "permit") == 0;
            if (const char* rpc = valueOf(childNamed(c, "rpc-name"))) {
                rule.type = RuleType::Operation;
                rule.opName = rpc;
            } else if (const char* notif = valueOf(childNamed(c, "notification-name"))) {
                rule.type = RuleType::Notification;
                rule.opName = notif;
            } else if (const lyd_node* path = childNamed(c, "path")) {
                rule.type = RuleType::Data;
                try {
                    rule.path = detail::parseRulePath(ctx, lyd_get_value(path));
                } catch (const detail::PathError& e) {
                    problems.push_back({pathOf(path), rule.describe() + ": path \"" + lyd_get_value(path) +
                                                          "\" cannot be used: " + e.what()});
                    continue;
                }
            }
            // Never matching is not an error (RFC 8341 3.3.5): the module may be loaded later.
            if (!rule.anyModule() && !core->moduleImplemented(rule.module)) {
                core->warnings.push_back(rule.describe() + " never matches: module " + inQuotes(rule.module) +
                                         " is not implemented");
            } else if (rule.type == RuleType::Operation && rule.opName != "*" &&
                       !core->schema.rpcs.count((rule.anyModule() ? "" : rule.module) + ":" + rule.opName)) {
                core->warnings.push_back(rule.describe() + " never matches: no operation " +
                                         inQuotes(rule.opName) +
                                         (rule.anyModule() ? "" : " in module " + inQuotes(rule.module)));
            } else if (rule.type == RuleType::Notification && rule.opName != "*" &&
                       !core->schema.notifications.count((rule.anyModule() ? "" : rule.module) + ":" +
                                                         rule.opName)) {
                core->warnings.push_back(rule.describe() + " never matches: no notification " +
                                         inQuotes(rule.opName) +
                                         (rule.anyModule() ? "" : " in module " + inQuotes(rule.module)));
            }
            list.rules.push_back(std::move(rule));
        }
        core->lists.push_back(std::move(list));
    }
    return core;
}

} // namespace

ConfigError::ConfigError(std::vector<Problem> problems)
    : std::runtime_error([&] {
          std::string what = "invalid NACM configuration:";
          for (const Problem& p : problems) {
              what += " " + p.message + " (" + p.path + ");";
          }
          what.pop_back();
          return what;
      }()),
      problems_(std::move(problems)) {}

Tree Counters::state(const ly_ctx* ctx) const {
    lyd_node* raw = nullptr;
    const std::string base = std::string("/") + kNacmModule + ":nacm/";
    const std::pair<const char*, uint32_t> leaves[] = {
        {"denied-operations", deniedOperations.load(std::memory_order_relaxed)},
        {"denied-data-writes", deniedDataWrites.load(std::memory_order_relaxed)},
        {"denied-notifications", deniedNotifications.load(std::memory_order_relaxed)}};
    Tree tree;
    for (const auto& [name, value] : leaves) {
        if (lyd_new_path(tree.get(), ctx, (base + name).c_str(), std::to_string(value).c_str(), 0, &raw) !=
            LY_SUCCESS) {
            throw YangError(std::string("creating nacm counter ") + name, ctx);
        }
        if (!tree) {
            tree.reset(raw);
        }
    }
    return tree;
}

struct Policy::UserCache {
    std::mutex mutex;
    std::unordered_map<std::string, std::shared_ptr<const Access>> byUser;
};

Policy::Policy(std::shared_ptr<const Core> core)
    : core_(std::move(core)), users_(std::make_unique<UserCache>()) {}

Policy::~Policy() = default;

std::vector<Problem> Policy::validate(const lyd_node* config, const ly_ctx* ctx) {
    std::vector<Problem> problems;
    buildCore(config, ctx, problems);
    return problems;
}

std::shared_ptr<const Policy> Policy::compile(const lyd_node* config, const ly_ctx* ctx) {
    std::vector<Problem> problems;
    auto core = buildCore(config, ctx, problems);
    if (!problems.empty()) {
        throw ConfigError(std::move(problems));
    }
    return std::shared_ptr<const Policy>(new Policy(std::move(core)));
}

std::shared_ptr<const Access> Policy::forUser(std::string_view user, bool recovery) const {
    const std::string name(user);
    if (recovery) {
        return std::shared_ptr<const Access>(new Access(core_, name, true));
    }
    std::lock_guard lock(users_->mutex);
    auto& slot = users_->byUser[name];
    if (!slot) {
        slot = std::shared_ptr<const Access>(new Access(core_, name, !core_->enabled));
    }
    return slot;
}

bool Policy::enabled() const noexcept {
    return core_->enabled;
}

const std::vector<std::string>& Policy::warnings() const noexcept {
    return core_->warnings;
}

} // namespace ncstore::nacm
