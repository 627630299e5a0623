// libFuzzer target for the NACM rule engine: the input is an XML document holding a
// /ietf-netconf-acm:nacm configuration. It is parsed (validated, or, when the first byte is odd,
// not: compile must cope with trees libyang never checked), compiled, and then every user the
// configuration names is asked about every node of a fixed data tree, every access operation,
// every operation and notification of the context. Besides crashes and sanitizer reports, it traps
// when
//  - a cached decision differs from the step-by-step one (allowed() vs explain()),
//  - readableCopy() and pruneUnreadable() keep different nodes,
//  - permitsAllReads()/permitsAllWrites() promise what a node check then denies,
//  - compile() and validate() disagree about whether the configuration is acceptable.
// Seeds: tests/fuzz/nacm_corpus/. Build definitions: NACM_TEST_YANG_DIR (tests/nacm/yang),
// IETF_YANG_DIR (/usr/share/yuma/modules/ietf).
#include "nacm.hpp"

#include <cstdint>
#include <set>
#include <string>
#include <vector>

using namespace ncstore;
using namespace ncstore::nacm;

namespace {

#define NACM_FUZZ_CHECK(cond)                                                                                \
    do {                                                                                                     \
        if (!(cond)) {                                                                                       \
            __builtin_trap();                                                                                \
        }                                                                                                    \
    } while (0)

struct World {
    Context ctx;
    Tree data;
    std::vector<const lyd_node*> nodes;
    std::vector<const lysc_node*> rpcs;
    std::vector<const lysc_node*> notifications;
};

const World& world() {
    static const World w = [] {
        World out;
        ly_log_options(0); // the fuzzer feeds garbage on purpose
        ly_ctx* raw = nullptr;
        const std::string dirs = std::string(IETF_YANG_DIR) + ":" + NACM_TEST_YANG_DIR;
        if (ly_ctx_new(dirs.c_str(), LY_CTX_NO_YANGLIBRARY, &raw) != LY_SUCCESS) {
            __builtin_trap();
        }
        out.ctx.reset(raw);
        const char* all[] = {"*", nullptr};
        for (const char* m : {"ietf-netconf-acm", "ietf-netconf", "ietf-netconf-monitoring", "acme-netconf",
                              "acme-itf", "acme-system"}) {
            if (!ly_ctx_load_module(raw, m, nullptr, all)) {
                __builtin_trap();
            }
        }
        out.data = parseData(raw, R"(
<interfaces xmlns="http://example.com/ns/itf">
  <interface><name>dummy</name><mtu>1500</mtu><description>d</description>
    <owner xmlns="http://example.com/ns/system">bob</owner></interface>
  <interface><name>eth0</name><mtu>9000</mtu></interface>
</interfaces>
<acme-netconf xmlns="http://example.com/ns/netconf">
  <config-parameters><log-level>x</log-level><max-sessions>4</max-sessions></config-parameters><banner>b</banner>
</acme-netconf>
<system xmlns="http://example.com/ns/system">
  <hostname>r1</hostname><root-password>p</root-password><secrets><api-key>k</api-key></secrets>
  <route><vrf>red</vrf><prefix>10/8</prefix><next-hop>1</next-hop></route>
  <route><vrf>blue</vrf><prefix>10/8</prefix><next-hop>2</next-hop></route>
  <vlan><id>10</id><name>a</name></vlan><dns-server>8.8.8.8</dns-server><dns-server>1.1.1.1</dns-server>
</system>
<nacm xmlns="urn:ietf:params:xml:ns:yang:ietf-netconf-acm">
  <groups><group><name>g</name><user-name>u</user-name></group></groups>
</nacm>)",
                             LYD_XML, LYD_PARSE_STRICT | LYD_PARSE_NO_STATE,
                             LYD_VALIDATE_PRESENT | LYD_VALIDATE_NO_STATE);
        for (const lyd_node* top = out.data.get(); top; top = top->next) {
            const lyd_node* n;
            LYD_TREE_DFS_BEGIN(top, n) {
                out.nodes.push_back(n);
                LYD_TREE_DFS_END(top, n);
            }
        }
        uint32_t i = 0;
        while (const lys_module* mod = ly_ctx_get_module_iter(raw, &i)) {
            if (!mod->implemented || !mod->compiled) {
                continue;
            }
            for (const lysc_node* s = nullptr; (s = lys_getnext(s, nullptr, mod->compiled, 0));) {
                if (s->nodetype == LYS_RPC) {
                    out.rpcs.push_back(s);
                } else if (s->nodetype == LYS_NOTIF) {
                    out.notifications.push_back(s);
                }
            }
        }
        return out;
    }();
    return w;
}

std::set<std::string> pathsOf(const lyd_node* forest) {
    std::set<std::string> out;
    for (const lyd_node* top = forest ? lyd_first_sibling(forest) : nullptr; top; top = top->next) {
        const lyd_node* n;
        LYD_TREE_DFS_BEGIN(top, n) {
            out.insert(pathOf(n));
            LYD_TREE_DFS_END(top, n);
        }
    }
    return out;
}

/// Users named anywhere in the configuration's groups, and one named nowhere.
std::vector<std::string> usersOf(const lyd_node* config) {
    std::vector<std::string> users{"nobody"};
    for (const lyd_node* top = config ? lyd_first_sibling(config) : nullptr; top; top = top->next) {
        const lyd_node* n;
        LYD_TREE_DFS_BEGIN(top, n) {
            if (n->schema && n->schema->nodetype == LYS_LEAFLIST &&
                std::string(n->schema->name) == "user-name" && users.size() < 8) {
                users.emplace_back(lyd_get_value(n));
            }
            LYD_TREE_DFS_END(top, n);
        }
    }
    return users;
}

void ask(const World& w, const Access& a) {
    const bool allReads = a.permitsAllReads();
    const bool allWrites = a.permitsAllWrites();
    for (const lyd_node* n : w.nodes) {
        for (Op op : {Op::Create, Op::Read, Op::Update, Op::Delete, Op::Exec}) {
            const bool fast = a.allowed(n, op);
            NACM_FUZZ_CHECK(fast == (a.explain(n, op).rfind("permitted", 0) == 0));
            if (op == Op::Read && allReads) {
                NACM_FUZZ_CHECK(fast);
            }
            if ((op == Op::Create || op == Op::Update || op == Op::Delete) && allWrites) {
                NACM_FUZZ_CHECK(fast);
            }
        }
        (void)a.decide(n->schema, Op::Read);
    }
    Tree copy = a.readableCopy(w.data.get());
    lyd_node* dup = nullptr;
    NACM_FUZZ_CHECK(lyd_dup_siblings(w.data.get(), nullptr, LYD_DUP_RECURSIVE | LYD_DUP_WITH_FLAGS, &dup) ==
                    LY_SUCCESS);
    Tree pruned(dup);
    a.pruneUnreadable(pruned);
    NACM_FUZZ_CHECK(pathsOf(copy.get()) == pathsOf(pruned.get()));
    for (const lyd_node* top = w.data.get(); top; top = top->next) {
        (void)a.firstDenied(top, Op::Create);
        (void)a.readable(top);
    }
    for (const lysc_node* rpc : w.rpcs) {
        NACM_FUZZ_CHECK(a.exec(rpc) == a.exec(rpc->module->name, rpc->name));
    }
    for (const lysc_node* notif : w.notifications) {
        (void)a.notification(notif->module->name, notif->name);
    }
    (void)a.exec("no-such-module", "no-such-rpc");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
    const World& w = world();
    if (size == 0) {
        return 0;
    }
    const bool validated = (bytes[0] & 1) == 0;
    const std::string xml(reinterpret_cast<const char*>(bytes) + 1, size - 1);
    lyd_node* raw = nullptr;
    const uint32_t parse = LYD_PARSE_NO_STATE | (validated ? 0u : LYD_PARSE_ONLY);
    const uint32_t validate = validated ? (LYD_VALIDATE_PRESENT | LYD_VALIDATE_NO_STATE) : 0u;
    if (lyd_parse_data_mem(w.ctx.get(), xml.c_str(), LYD_XML, parse, validate, &raw) != LY_SUCCESS) {
        lyd_free_all(raw);
        return 0;
    }
    Tree config(raw);
    const auto problems = Policy::validate(config.get(), w.ctx.get());
    std::shared_ptr<const Policy> policy;
    try {
        policy = Policy::compile(config.get(), w.ctx.get());
    } catch (const ConfigError& e) {
        NACM_FUZZ_CHECK(!problems.empty() && e.problems().size() == problems.size());
        return 0;
    }
    NACM_FUZZ_CHECK(problems.empty());
    for (const std::string& user : usersOf(config.get())) {
        ask(w, *policy->forUser(user));
    }
    ask(w, *policy->forUser("nobody", true));
    return 0;
}
