// The NACM rule engine against RFC 8341: the appendix A examples, every access operation, rule
// order, groups, module-name, the extensions, the defaults, bad configurations, permitsAll, key
// predicates, read filtering, and the cached decisions against the step-by-step reference.
#include "fixture.hpp"

#include <algorithm>
#include <random>
#include <thread>

using namespace ncstore;
using namespace ncstore::nacm;
using namespace nacmtest;

namespace {

/// RFC 8341 A.1.
const std::string kGroups = R"(
  <groups>
    <group><name>admin</name><user-name>admin</user-name><user-name>andy</user-name></group>
    <group><name>limited</name><user-name>wilma</user-name><user-name>bam-bam</user-name></group>
    <group><name>guest</name><user-name>guest</user-name><user-name>guest@example.com</user-name></group>
  </groups>)";

/// RFC 8341 A.2: module rules.
const std::string kModuleRules = R"(
  <rule-list>
    <name>guest-acl</name><group>guest</group>
    <rule><name>deny-ncm</name><module-name>ietf-netconf-monitoring</module-name>
      <access-operations>*</access-operations><action>deny</action></rule>
  </rule-list>
  <rule-list>
    <name>limited-acl</name><group>limited</group>
    <rule><name>permit-ncm</name><module-name>ietf-netconf-monitoring</module-name>
      <access-operations>read</access-operations><action>permit</action></rule>
    <rule><name>permit-exec</name><module-name>*</module-name>
      <access-operations>exec</access-operations><action>permit</action></rule>
  </rule-list>
  <rule-list>
    <name>admin-acl</name><group>admin</group>
    <rule><name>permit-all</name><module-name>*</module-name>
      <access-operations>*</access-operations><action>permit</action></rule>
  </rule-list>)";

/// RFC 8341 A.3: protocol operation rules.
const std::string kOperationRules = R"(
  <rule-list>
    <name>guest-limited-acl</name><group>limited</group><group>guest</group>
    <rule><name>deny-send-feature</name><module-name>acme-system</module-name>
      <rpc-name>send-feature</rpc-name><access-operations>exec</access-operations><action>deny</action></rule>
    <rule><name>deny-kill-session</name><module-name>ietf-netconf</module-name>
      <rpc-name>kill-session</rpc-name><access-operations>exec</access-operations><action>deny</action></rule>
    <rule><name>deny-delete-config</name><module-name>ietf-netconf</module-name>
      <rpc-name>delete-config</rpc-name><access-operations>exec</access-operations><action>deny</action></rule>
  </rule-list>
  <rule-list>
    <name>limited-acl</name><group>limited</group>
    <rule><name>permit-edit-config</name><module-name>ietf-netconf</module-name>
      <rpc-name>edit-config</rpc-name><access-operations>exec</access-operations><action>permit</action></rule>
  </rule-list>
  <rule-list>
    <name>admin-acl</name><group>admin</group>
    <rule><name>permit-all-admin</name><module-name>*</module-name>
      <access-operations>*</access-operations><action>permit</action></rule>
  </rule-list>)";

/// RFC 8341 A.4: data node rules (paths as the RFC writes them, with XML prefixes).
const std::string kDataRules = R"(
  <rule-list>
    <name>guest-acl</name><group>guest</group>
    <rule><name>deny-nacm</name>
      <path xmlns:n="urn:ietf:params:xml:ns:yang:ietf-netconf-acm">/n:nacm</path>
      <access-operations>*</access-operations><action>deny</action></rule>
  </rule-list>
  <rule-list>
    <name>limited-acl</name><group>limited</group>
    <rule><name>permit-acme-config</name>
      <path xmlns:acme="http://example.com/ns/netconf">/acme:acme-netconf/acme:config-parameters</path>
      <access-operations>read create update delete</access-operations><action>permit</action></rule>
  </rule-list>
  <rule-list>
    <name>guest-limited-acl</name><group>guest</group><group>limited</group>
    <rule><name>permit-dummy-interface</name>
      <path xmlns:acme="http://example.com/ns/itf">/acme:interfaces/acme:interface[acme:name='dummy']</path>
      <access-operations>read update</access-operations><action>permit</action></rule>
  </rule-list>
  <rule-list>
    <name>admin-acl</name><group>admin</group>
    <rule><name>permit-interface</name>
      <path xmlns:acme="http://example.com/ns/itf">/acme:interfaces/acme:interface</path>
      <access-operations>*</access-operations><action>permit</action></rule>
  </rule-list>)";

/// RFC 8341 A.5: notification rules.
const std::string kNotificationRules = R"(
  <rule-list>
    <name>sys-acl</name><group>limited</group><group>guest</group>
    <rule><name>deny-config-change</name><module-name>acme-system</module-name>
      <notification-name>sys-config-change</notification-name>
      <access-operations>read</access-operations><action>deny</action></rule>
  </rule-list>)";

const std::string kData = R"(
<interfaces xmlns="http://example.com/ns/itf">
  <interface><name>dummy</name><mtu>1500</mtu><description>test</description>
    <counters><in-octets>5</in-octets></counters><owner xmlns="http://example.com/ns/system">bob</owner></interface>
  <interface><name>eth0</name><mtu>9000</mtu></interface>
</interfaces>
<acme-netconf xmlns="http://example.com/ns/netconf">
  <config-parameters><log-level>debug</log-level><max-sessions>4</max-sessions></config-parameters>
  <banner>hello</banner>
</acme-netconf>
<system xmlns="http://example.com/ns/system">
  <hostname>r1</hostname><root-password>secret</root-password><secrets><api-key>k</api-key></secrets>
  <route><vrf>red</vrf><prefix>10/8</prefix><next-hop>1.1.1.1</next-hop></route>
  <route><vrf>blue</vrf><prefix>10/8</prefix><next-hop>2.2.2.2</next-hop></route>
  <vlan><id>10</id><name>v10</name></vlan><vlan><id>20</id><name>v20</name></vlan>
  <dns-server>8.8.8.8</dns-server><dns-server>1.1.1.1</dns-server>
</system>
<netconf-state xmlns="urn:ietf:params:xml:ns:yang:ietf-netconf-monitoring">
  <statistics><in-bad-hellos>0</in-bad-hellos></statistics>
</netconf-state>)";

class Nacm : public ::testing::Test {
protected:
    Tree tree = data(kData);

    bool can(const Access& a, const std::string& path, Op op) {
        const lyd_node* n = at(tree, path);
        return n && a.allowed(n, op);
    }
    std::string why(const Access& a, const std::string& path, Op op) {
        const lyd_node* n = at(tree, path);
        return n ? a.explain(n, op) : "no node";
    }
};

const lysc_node* rpc(const char* module, const char* name) {
    const lys_module* m = ly_ctx_get_module_implemented(ctx(), module);
    return m ? lys_find_child(nullptr, m, name, 0, LYS_RPC, 0) : nullptr;
}

const Op kAllOps[] = {Op::Create, Op::Read, Op::Update, Op::Delete, Op::Exec};

/// Reference read filter straight from the rules as the header states them, built on the
/// step-by-step decisions of explain(): a node stays when it is readable or the ancestor of a
/// node that stays, and a list entry only with readable keys.
bool referenceKeeps(const Access& a, const lyd_node* n, std::set<std::string>& kept) {
    const auto readable = [&](const lyd_node* x) {
        return a.explain(x, Op::Read).rfind("permitted", 0) == 0;
    };
    if (n->schema->nodetype == LYS_LIST) {
        for (const lyd_node* k = lyd_child(n); k && lysc_is_key(k->schema); k = k->next) {
            if (!readable(k)) {
                return false;
            }
        }
    }
    std::set<std::string> below;
    bool anyChild = false;
    for (const lyd_node* c = lyd_child_no_keys(n); c; c = c->next) {
        anyChild = referenceKeeps(a, c, below) || anyChild;
    }
    if (!readable(n) && !anyChild) {
        return false;
    }
    kept.insert(pathOf(n));
    for (const lyd_node* k = lyd_child(n); k && k->schema && lysc_is_key(k->schema); k = k->next) {
        kept.insert(pathOf(k));
    }
    kept.insert(below.begin(), below.end());
    return true;
}

std::set<std::string> referenceReadable(const Access& a, const lyd_node* forest) {
    std::set<std::string> kept;
    for (const lyd_node* n = lyd_first_sibling(forest); n; n = n->next) {
        referenceKeeps(a, n, kept);
    }
    return kept;
}

/// Every cached decision equals the step-by-step one, for every node and operation; the three
/// read helpers agree with the reference read filter and with each other.
void expectConsistent(const Access& a, const Tree& tree) {
    for (const lyd_node* top = lyd_first_sibling(tree.get()); top; top = top->next) {
        const lyd_node* n;
        LYD_TREE_DFS_BEGIN(top, n) {
            for (Op op : kAllOps) {
                const std::string reason = a.explain(n, op);
                EXPECT_EQ(a.allowed(n, op), reason.rfind("permitted", 0) == 0)
                    << pathOf(n) << " " << toString(op) << ": " << reason;
            }
            // By its path alone (a config-change edit's target): the node's read rules, and the
            // keys the path shows. A key leaf is never a target (its entry is).
            if (!lysc_is_key(n->schema)) {
                bool keys = true;
                for (const lyd_node* p = n; p; p = lyd_parent(p)) {
                    for (const lyd_node* k = p->schema->nodetype == LYS_LIST ? lyd_child(p) : nullptr;
                         k && lysc_is_key(k->schema); k = k->next) {
                        keys = keys && a.allowed(k, Op::Read);
                    }
                }
                EXPECT_EQ(a.readablePath(ctx(), pathOf(n)), a.allowed(n, Op::Read) && keys) << pathOf(n);
            }
            LYD_TREE_DFS_END(top, n);
        }
    }
    const std::set<std::string> expected = referenceReadable(a, tree.get());
    Tree copy = a.readableCopy(tree.get());
    EXPECT_EQ(pathsOf(copy.get()), expected);

    Tree pruned(nullptr);
    {
        lyd_node* dup = nullptr;
        ASSERT_EQ(lyd_dup_siblings(tree.get(), nullptr, LYD_DUP_RECURSIVE | LYD_DUP_WITH_FLAGS, &dup),
                  LY_SUCCESS);
        pruned.reset(dup);
    }
    a.pruneUnreadable(pruned);
    EXPECT_EQ(pathsOf(pruned.get()), expected);

    std::vector<const lyd_node*> dropped;
    a.unreadable(tree.get(), dropped);
    std::set<std::string> all = pathsOf(tree.get());
    for (const lyd_node* d : dropped) {
        const lyd_node* x;
        LYD_TREE_DFS_BEGIN(d, x) {
            all.erase(pathOf(x));
            LYD_TREE_DFS_END(d, x);
        }
    }
    EXPECT_EQ(all, expected);
}

} // namespace

// -------------------------------------------------------------------------------------------------
// RFC 8341 appendix A

TEST_F(Nacm, A1GroupsResolveUsers) {
    auto p = policy(kGroups);
    EXPECT_EQ(p->forUser("andy")->groups(), std::vector<std::string>{"admin"});
    EXPECT_EQ(p->forUser("bam-bam")->groups(), std::vector<std::string>{"limited"});
    EXPECT_EQ(p->forUser("guest@example.com")->groups(), std::vector<std::string>{"guest"});
    EXPECT_TRUE(p->forUser("nobody")->groups().empty());
    EXPECT_EQ(p->forUser("andy"), p->forUser("andy")) << "access objects are cached per user";
}

TEST_F(Nacm, A2ModuleRules) {
    auto p = policy(kGroups + kModuleRules);
    auto guest = p->forUser("guest");
    auto wilma = p->forUser("wilma");
    auto andy = p->forUser("andy");
    const std::string stats = "/ietf-netconf-monitoring:netconf-state/statistics/in-bad-hellos";
    const lysc_node* getSchema = rpc("ietf-netconf-monitoring", "get-schema");

    // deny-ncm: guests get nothing of ietf-netconf-monitoring, data or operations.
    EXPECT_FALSE(can(*guest, stats, Op::Read));
    EXPECT_EQ(why(*guest, stats, Op::Read), "denied by rule 'deny-ncm' of rule-list 'guest-acl'");
    EXPECT_FALSE(guest->exec(getSchema));
    EXPECT_TRUE(guest->exec(rpc("ietf-netconf", "get-config"))) << "exec-default permit";
    // permit-ncm and permit-exec for the limited group.
    EXPECT_TRUE(can(*wilma, stats, Op::Read));
    EXPECT_EQ(why(*wilma, stats, Op::Read), "permitted by rule 'permit-ncm' of rule-list 'limited-acl'");
    EXPECT_TRUE(wilma->exec(getSchema));
    EXPECT_TRUE(wilma->exec(rpc("ietf-netconf", "kill-session"))) << "permit-exec is an explicit rule";
    EXPECT_FALSE(can(*wilma, "/acme-itf:interfaces/interface[name='eth0']/mtu", Op::Update))
        << "write-default";
    // permit-all: "no access control rules will apply to any session for the admin group".
    EXPECT_TRUE(andy->permitsAll());
    EXPECT_FALSE(guest->permitsAll());
    EXPECT_FALSE(wilma->permitsAll());
    Tree nacm = nacmConfig(kGroups + kModuleRules);
    for (Op op : {Op::Create, Op::Read, Op::Update, Op::Delete}) {
        EXPECT_TRUE(andy->allowed(at(nacm, "/ietf-netconf-acm:nacm/groups"), op)) << toString(op);
        EXPECT_FALSE(wilma->allowed(at(nacm, "/ietf-netconf-acm:nacm/groups"), op)) << toString(op);
    }
    // Without any group: the defaults; kill-session and delete-config are denied (3.4.4 step 11).
    auto nobody = p->forUser("nobody");
    EXPECT_TRUE(nobody->exec(rpc("ietf-netconf", "get")));
    EXPECT_FALSE(nobody->exec(rpc("ietf-netconf", "kill-session")));
    EXPECT_FALSE(nobody->exec(rpc("ietf-netconf", "delete-config")));
    EXPECT_TRUE(nobody->exec(rpc("ietf-netconf", "close-session")));
    expectConsistent(*guest, tree);
    expectConsistent(*wilma, tree);
    expectConsistent(*andy, tree);
}

TEST_F(Nacm, A3OperationRules) {
    auto p = policy("<exec-default>deny</exec-default>" + kGroups + kOperationRules);
    auto guest = p->forUser("guest");
    auto wilma = p->forUser("wilma");
    auto andy = p->forUser("andy");
    EXPECT_FALSE(wilma->exec(rpc("acme-system", "send-feature")));
    EXPECT_FALSE(guest->exec(rpc("acme-system", "send-feature")));
    EXPECT_FALSE(wilma->exec(rpc("ietf-netconf", "kill-session")));
    EXPECT_FALSE(guest->exec(rpc("ietf-netconf", "delete-config")));
    EXPECT_TRUE(wilma->exec(rpc("ietf-netconf", "edit-config"))) << "permit-edit-config";
    EXPECT_FALSE(guest->exec(rpc("ietf-netconf", "edit-config"))) << "exec-default deny";
    EXPECT_FALSE(wilma->exec(rpc("ietf-netconf", "commit"))) << "exec-default deny";
    EXPECT_TRUE(wilma->exec(rpc("ietf-netconf", "close-session"))) << "always permitted (3.4.4 step 3)";
    EXPECT_TRUE(andy->exec(rpc("ietf-netconf", "kill-session")));
    EXPECT_TRUE(andy->exec(rpc("acme-system", "system-restart"))) << "explicit rule beats default-deny-all";
    // By name, for operations the context knows and does not know.
    EXPECT_FALSE(wilma->exec("acme-system", "send-feature"));
    EXPECT_TRUE(wilma->exec("ietf-netconf", "edit-config"));
    EXPECT_FALSE(wilma->exec("no-such-module", "frobnicate")) << "exec-default deny";
    EXPECT_TRUE(andy->exec("no-such-module", "frobnicate"));
}

TEST_F(Nacm, A4DataNodeRules) {
    auto p = policy(kGroups + kDataRules);
    auto guest = p->forUser("guest");
    auto wilma = p->forUser("wilma");
    auto andy = p->forUser("andy");
    const std::string dummy = "/acme-itf:interfaces/interface[name='dummy']";
    const std::string eth0 = "/acme-itf:interfaces/interface[name='eth0']";
    const std::string params = "/acme-netconf:acme-netconf/config-parameters";
    Tree nacm = nacmConfig(kGroups);
    const lyd_node* nacmNode = at(nacm, "/ietf-netconf-acm:nacm/groups");

    // deny-nacm for guests; the limited group has no rule for /nacm: default-deny-all.
    EXPECT_EQ(guest->explain(nacmNode, Op::Read), "denied by rule 'deny-nacm' of rule-list 'guest-acl'");
    EXPECT_EQ(wilma->explain(nacmNode, Op::Read), "denied by default-deny-all");
    EXPECT_FALSE(andy->allowed(nacmNode, Op::Read)) << "A.4 gives admin interfaces only";
    // permit-acme-config: complete access for the limited group, to the subtree.
    for (Op op : {Op::Create, Op::Read, Op::Update, Op::Delete}) {
        EXPECT_TRUE(can(*wilma, params + "/log-level", op)) << toString(op);
        EXPECT_TRUE(can(*wilma, params, op)) << toString(op);
    }
    EXPECT_FALSE(can(*wilma, "/acme-netconf:acme-netconf/banner", Op::Update)) << "write-default";
    EXPECT_TRUE(can(*wilma, "/acme-netconf:acme-netconf/banner", Op::Read)) << "read-default";
    EXPECT_FALSE(can(*guest, params + "/log-level", Op::Update));
    // permit-dummy-interface: read and update of 'dummy' only; neither create nor delete.
    for (const auto& a : {guest, wilma}) {
        EXPECT_TRUE(can(*a, dummy, Op::Read));
        EXPECT_TRUE(can(*a, dummy + "/mtu", Op::Update));
        EXPECT_FALSE(can(*a, dummy, Op::Create));
        EXPECT_FALSE(can(*a, dummy + "/description", Op::Delete));
        EXPECT_FALSE(can(*a, eth0 + "/mtu", Op::Update));
        EXPECT_EQ(why(*a, eth0 + "/mtu", Op::Update), "denied by write-default");
    }
    // permit-interface: everything on every interface for admin.
    for (Op op : {Op::Create, Op::Read, Op::Update, Op::Delete}) {
        EXPECT_TRUE(can(*andy, eth0 + "/mtu", op));
    }
    EXPECT_FALSE(can(*andy, params + "/log-level", Op::Update)) << "write-default";
    for (const auto& a : {guest, wilma, andy}) {
        expectConsistent(*a, tree);
    }
    expectConsistent(*guest, nacm);
    expectConsistent(*wilma, nacm);
}

TEST_F(Nacm, A5NotificationRules) {
    auto p = policy(kGroups + kNotificationRules);
    for (const char* user : {"wilma", "guest"}) {
        EXPECT_FALSE(p->forUser(user)->notification("acme-system", "sys-config-change")) << user;
    }
    auto andy = p->forUser("andy");
    EXPECT_TRUE(andy->notification("acme-system", "sys-config-change")) << "read-default";
    EXPECT_FALSE(andy->notification("acme-system", "secret-rotated")) << "default-deny-all";
    EXPECT_TRUE(andy->notification("nc-notifications", "replayComplete"));

    Tree n = Tree(nullptr);
    {
        ly_in* in = nullptr;
        ASSERT_EQ(ly_in_new_memory("<sys-config-change xmlns=\"http://example.com/ns/system\"><who>x</who>"
                                   "</sys-config-change>",
                                   &in),
                  LY_SUCCESS);
        lyd_node* raw = nullptr;
        ASSERT_EQ(lyd_parse_op(ctx(), nullptr, in, LYD_XML, LYD_TYPE_NOTIF_YANG, &raw, nullptr), LY_SUCCESS);
        ly_in_free(in, 0);
        n.reset(raw);
    }
    EXPECT_FALSE(p->forUser("wilma")->notification(n.get()));
    EXPECT_TRUE(andy->notification(n.get()));
}

// -------------------------------------------------------------------------------------------------
// Access operations, order, groups, module-name

TEST_F(Nacm, EveryAccessOperationIsItsOwnBit) {
    const std::string path = "/acme-system:system/hostname";
    for (Op granted : {Op::Create, Op::Read, Op::Update, Op::Delete}) {
        auto p = policy("<read-default>deny</read-default>" + kGroups +
                        "<rule-list><name>l</name><group>limited</group><rule><name>only</name>"
                        "<path xmlns:s=\"http://example.com/ns/system\">/s:system/s:hostname</path>"
                        "<access-operations>" +
                        std::string(toString(granted)) +
                        "</access-operations><action>permit</action></rule></rule-list>");
        auto wilma = p->forUser("wilma");
        for (Op op : {Op::Create, Op::Read, Op::Update, Op::Delete}) {
            EXPECT_EQ(can(*wilma, path, op), op == granted)
                << toString(granted) << " granted, " << toString(op);
        }
    }
    // exec on a data node: actions.
    auto p = policy(kGroups + R"(<rule-list><name>l</name><group>limited</group>
        <rule><name>no-reset</name><path xmlns:i="http://example.com/ns/itf">/i:interfaces/i:interface[i:name='eth0']/i:reset</path>
          <access-operations>exec</access-operations><action>deny</action></rule></rule-list>)");
    auto wilma = p->forUser("wilma");
    for (const char* name : {"dummy", "eth0"}) {
        ly_in* in = nullptr;
        const std::string xml =
            std::string("<interfaces xmlns=\"http://example.com/ns/itf\"><interface><name>") + name +
            "</name><reset><delay>1</delay></reset></interface></interfaces>";
        ASSERT_EQ(ly_in_new_memory(xml.c_str(), &in), LY_SUCCESS);
        lyd_node* raw = nullptr;
        lyd_node* op = nullptr;
        ASSERT_EQ(lyd_parse_op(ctx(), nullptr, in, LYD_XML, LYD_TYPE_RPC_YANG, &raw, &op), LY_SUCCESS);
        ly_in_free(in, 0);
        Tree request(raw);
        EXPECT_EQ(wilma->action(op), std::string(name) == "dummy") << name;
    }
}

TEST_F(Nacm, FirstMatchWinsAcrossRuleListsInOrder) {
    const std::string deny = R"(<rule-list><name>first</name><group>limited</group>
        <rule><name>deny-itf</name><module-name>acme-itf</module-name><access-operations>read</access-operations>
          <action>deny</action></rule></rule-list>)";
    const std::string permit = R"(<rule-list><name>second</name><group>guest</group><group>limited</group>
        <rule><name>permit-dummy</name><path xmlns:i="http://example.com/ns/itf">/i:interfaces/i:interface[i:name='dummy']</path>
          <access-operations>read</access-operations><action>permit</action></rule></rule-list>)";
    const std::string dummy = "/acme-itf:interfaces/interface[name='dummy']/mtu";
    {
        auto wilma = policy(kGroups + deny + permit)->forUser("wilma");
        EXPECT_EQ(why(*wilma, dummy, Op::Read), "denied by rule 'deny-itf' of rule-list 'first'");
        expectConsistent(*wilma, tree);
    }
    {
        auto wilma = policy(kGroups + permit + deny)->forUser("wilma");
        EXPECT_EQ(why(*wilma, dummy, Op::Read), "permitted by rule 'permit-dummy' of rule-list 'second'");
        EXPECT_EQ(why(*wilma, "/acme-itf:interfaces/interface[name='eth0']/mtu", Op::Read),
                  "denied by rule 'deny-itf' of rule-list 'first'");
        expectConsistent(*wilma, tree);
    }
    // Within one list, too; and a rule not for this access operation is skipped.
    auto p = policy(kGroups + R"(<rule-list><name>l</name><group>limited</group>
        <rule><name>a</name><module-name>acme-system</module-name><access-operations>update</access-operations><action>deny</action></rule>
        <rule><name>b</name><module-name>acme-system</module-name><access-operations>read update</access-operations><action>permit</action></rule>
        <rule><name>c</name><module-name>acme-system</module-name><access-operations>*</access-operations><action>deny</action></rule>
      </rule-list>)");
    auto wilma = p->forUser("wilma");
    EXPECT_EQ(why(*wilma, "/acme-system:system/hostname", Op::Update), "denied by rule 'a' of rule-list 'l'");
    EXPECT_EQ(why(*wilma, "/acme-system:system/hostname", Op::Read),
              "permitted by rule 'b' of rule-list 'l'");
    EXPECT_EQ(why(*wilma, "/acme-system:system/hostname", Op::Delete), "denied by rule 'c' of rule-list 'l'");
}

TEST_F(Nacm, StarGroupAppliesToUsersWithSomeGroup) {
    auto p = policy(kGroups + R"(<rule-list><name>everyone</name><group>*</group>
        <rule><name>deny-system</name><module-name>acme-system</module-name><action>deny</action></rule></rule-list>)");
    EXPECT_EQ(why(*p->forUser("guest"), "/acme-system:system/hostname", Op::Read),
              "denied by rule 'deny-system' of rule-list 'everyone'");
    EXPECT_EQ(why(*p->forUser("andy"), "/acme-system:system/hostname", Op::Read),
              "denied by rule 'deny-system' of rule-list 'everyone'");
    // RFC 8341 3.4.5 step 4: a user in no group skips the rule-lists.
    EXPECT_EQ(why(*p->forUser("stranger"), "/acme-system:system/hostname", Op::Read),
              "permitted by read-default");
}

TEST_F(Nacm, ModuleNameMatchesTheModuleDefiningTheNode) {
    // The augmented 'owner' leaf belongs to acme-system, not to acme-itf.
    auto p = policy(kGroups + R"(<rule-list><name>l</name><group>limited</group>
        <rule><name>hide-itf</name><module-name>acme-itf</module-name><access-operations>read</access-operations>
          <action>deny</action></rule></rule-list>)");
    auto wilma = p->forUser("wilma");
    const std::string dummy = "/acme-itf:interfaces/interface[name='dummy']";
    EXPECT_FALSE(can(*wilma, dummy + "/mtu", Op::Read));
    EXPECT_TRUE(can(*wilma, dummy + "/acme-system:owner", Op::Read));
    // ... but the entry's key is not readable, so the entry goes whole, 'owner' with it.
    Tree copy = wilma->readableCopy(tree.get());
    const auto paths = pathsOf(copy.get());
    EXPECT_EQ(paths.count(dummy + "/acme-system:owner"), 0u);
    EXPECT_EQ(paths.count("/acme-itf:interfaces"), 0u);
    EXPECT_EQ(paths.count("/acme-system:system/hostname"), 1u);
    expectConsistent(*wilma, tree);
}

// -------------------------------------------------------------------------------------------------
// Extensions and defaults

TEST_F(Nacm, DefaultDenyWriteAndDenyAll) {
    auto p = policy("<write-default>permit</write-default>" + kGroups);
    auto wilma = p->forUser("wilma");
    const std::string pw = "/acme-system:system/root-password";
    EXPECT_TRUE(can(*wilma, pw, Op::Read));
    EXPECT_EQ(why(*wilma, pw, Op::Update), "denied by default-deny-write");
    EXPECT_TRUE(can(*wilma, "/acme-system:system/hostname", Op::Update)) << "write-default permit";
    EXPECT_EQ(why(*wilma, "/acme-system:system/secrets/api-key", Op::Read), "denied by default-deny-all")
        << "the extension covers the descendants";
    EXPECT_FALSE(can(*wilma, "/acme-system:system/secrets", Op::Delete));
    EXPECT_FALSE(wilma->exec(rpc("acme-system", "system-restart")));
    EXPECT_FALSE(wilma->permitsAllReads());
    EXPECT_FALSE(wilma->permitsAllWrites());
    expectConsistent(*wilma, tree);

    // An explicit rule is what it takes.
    auto q = policy(kGroups + R"(<rule-list><name>l</name><group>limited</group>
        <rule><name>pw</name><path xmlns:s="http://example.com/ns/system">/s:system/s:root-password</path>
          <action>permit</action></rule>
        <rule><name>secrets</name><path xmlns:s="http://example.com/ns/system">/s:system/s:secrets</path>
          <access-operations>read</access-operations><action>permit</action></rule>
        <rule><name>restart</name><module-name>acme-system</module-name><rpc-name>system-restart</rpc-name>
          <action>permit</action></rule></rule-list>)");
    auto w = q->forUser("wilma");
    EXPECT_TRUE(can(*w, pw, Op::Update));
    EXPECT_TRUE(can(*w, "/acme-system:system/secrets/api-key", Op::Read));
    EXPECT_TRUE(w->exec(rpc("acme-system", "system-restart")));
    expectConsistent(*w, tree);
}

TEST_F(Nacm, Defaults) {
    // Absent configuration: RFC 8341 defaults.
    auto none = Policy::compile(nullptr, ctx());
    EXPECT_TRUE(none->enabled());
    auto u = none->forUser("anyone");
    EXPECT_TRUE(can(*u, "/acme-system:system/hostname", Op::Read));
    EXPECT_FALSE(can(*u, "/acme-system:system/hostname", Op::Update));
    EXPECT_TRUE(u->exec(rpc("ietf-netconf", "get")));
    // Each default flipped.
    auto p = policy("<read-default>deny</read-default><write-default>permit</write-default>"
                    "<exec-default>deny</exec-default>" +
                    kGroups);
    auto wilma = p->forUser("wilma");
    EXPECT_EQ(why(*wilma, "/acme-system:system/hostname", Op::Read), "denied by read-default");
    EXPECT_EQ(why(*wilma, "/acme-system:system/hostname", Op::Create), "permitted by write-default");
    EXPECT_FALSE(wilma->exec(rpc("ietf-netconf", "get")));
    EXPECT_FALSE(wilma->notification("acme-system", "sys-config-change"))
        << "notifications follow read-default";
    EXPECT_TRUE(wilma->permitsAllWrites() == false) << "root-password is default-deny-write";
    expectConsistent(*wilma, tree);
}

TEST_F(Nacm, DisabledAndRecoveryBypassEverything) {
    auto off =
        policy("<enable-nacm>false</enable-nacm><read-default>deny</read-default>" + kGroups + kDataRules);
    EXPECT_FALSE(off->enabled());
    for (const char* user : {"guest", "stranger"}) {
        auto a = off->forUser(user);
        EXPECT_TRUE(a->permitsAll());
        EXPECT_TRUE(a->exec(rpc("ietf-netconf", "kill-session")));
        EXPECT_TRUE(can(*a, "/acme-system:system/secrets/api-key", Op::Delete));
        EXPECT_EQ(pathsOf(a->readableCopy(tree.get()).get()), pathsOf(tree.get()));
    }
    auto on = policy("<read-default>deny</read-default>" + kGroups + kDataRules);
    auto rescue = on->forUser("guest", true);
    EXPECT_TRUE(rescue->permitsAll());
    EXPECT_TRUE(rescue->exec(rpc("ietf-netconf", "delete-config")));
    EXPECT_TRUE(rescue->exec(rpc("acme-system", "system-restart")));
    EXPECT_TRUE(can(*rescue, "/acme-system:system/root-password", Op::Update));
    EXPECT_EQ(rescue->explain(at(tree, "/acme-system:system"), Op::Read), "permitted: recovery session");
    EXPECT_FALSE(on->forUser("guest")->permitsAll()) << "the same user outside recovery";
}

// -------------------------------------------------------------------------------------------------
// Configurations the server must refuse, and those it accepts with warnings

TEST(NacmConfig, UnknownGroupIsRefusedWithItsPath) {
    Tree config =
        nacmConfig(kGroups + R"(<rule-list><name>ops</name><group>limited</group><group>operators</group>
        <rule><name>r</name><action>permit</action></rule></rule-list>)");
    const auto problems = Policy::validate(config.get(), ctx());
    ASSERT_EQ(problems.size(), 1u);
    EXPECT_EQ(problems[0].path, "/ietf-netconf-acm:nacm/rule-list[name='ops']/group[.='operators']");
    EXPECT_EQ(problems[0].message,
              "rule-list 'ops' names group 'operators', which /nacm/groups does not define");
    try {
        Policy::compile(config.get(), ctx());
        FAIL() << "compiled";
    } catch (const ConfigError& e) {
        EXPECT_EQ(e.problems().size(), 1u);
        EXPECT_NE(std::string(e.what()).find("'operators'"), std::string::npos);
    }
    EXPECT_TRUE(Policy::validate(nacmConfig(kGroups + kDataRules + kNotificationRules).get(), ctx()).empty());
}

TEST(NacmConfig, BadPathsAndMissingActionAreRefused) {
    // libyang itself refuses most bad paths when it parses the configuration; a configuration
    // stored while a module was loaded and compiled in a context without it is one that gets
    // through, and so is a tree that was never validated.
    ly_ctx* rawSmall = nullptr;
    ASSERT_EQ(ly_ctx_new(IETF_YANG_DIR, LY_CTX_NO_YANGLIBRARY, &rawSmall), LY_SUCCESS);
    Context small(rawSmall);
    ASSERT_NE(ly_ctx_load_module(small.get(), "ietf-netconf-acm", nullptr, nullptr), nullptr);
    Tree config = nacmConfig(kGroups + kDataRules);
    const auto problems = Policy::validate(config.get(), small.get());
    ASSERT_EQ(problems.size(), 3u); // the three acme paths
    EXPECT_EQ(problems[0].path,
              "/ietf-netconf-acm:nacm/rule-list[name='limited-acl']/rule[name='permit-acme-config']/path");
    EXPECT_EQ(problems[0].message,
              "rule 'permit-acme-config' of rule-list 'limited-acl': path \"/acme-netconf:acme-netconf/"
              "config-parameters\" cannot be used: module 'acme-netconf' is not implemented by the server");

    Tree unvalidated = parseData(ctx(),
                                 "<nacm xmlns=\"urn:ietf:params:xml:ns:yang:ietf-netconf-acm\">" + kGroups +
                                     "<rule-list><name>l</name><group>guest</group><rule><name>r</name>"
                                     "<module-name>acme-system</module-name></rule></rule-list></nacm>",
                                 LYD_XML, LYD_PARSE_ONLY | LYD_PARSE_STRICT, 0);
    const auto missing = Policy::validate(unvalidated.get(), ctx());
    ASSERT_EQ(missing.size(), 1u);
    EXPECT_EQ(missing[0].message, "rule 'r' of rule-list 'l' has no action");
}

TEST(NacmConfig, NeverMatchingRulesAreWarnings) {
    auto p = policy(kGroups + R"(<rule-list><name>l</name><group>guest</group>
        <rule><name>gone</name><module-name>acme-gone</module-name><action>deny</action></rule>
        <rule><name>typo-rpc</name><module-name>ietf-netconf</module-name><rpc-name>edit-confg</rpc-name><action>deny</action></rule>
        <rule><name>typo-notif</name><notification-name>sys-config-chnage</notification-name><action>deny</action></rule>
        <rule><name>fine</name><rpc-name>send-feature</rpc-name><action>deny</action></rule>
      </rule-list>)");
    const auto& w = p->warnings();
    ASSERT_EQ(w.size(), 3u);
    EXPECT_EQ(w[0], "rule 'gone' of rule-list 'l' never matches: module 'acme-gone' is not implemented");
    EXPECT_EQ(w[1], "rule 'typo-rpc' of rule-list 'l' never matches: no operation 'edit-confg' in module "
                    "'ietf-netconf'");
    EXPECT_EQ(w[2], "rule 'typo-notif' of rule-list 'l' never matches: no notification 'sys-config-chnage'");
    // ... and a never-matching deny does not spoil permitsAll.
    auto q = policy(kGroups + R"(<rule-list><name>l</name><group>admin</group>
        <rule><name>gone</name><module-name>acme-gone</module-name><action>deny</action></rule>
        <rule><name>all</name><action>permit</action></rule></rule-list>)");
    EXPECT_TRUE(q->forUser("andy")->permitsAll());
}

// -------------------------------------------------------------------------------------------------
// permitsAll

TEST_F(Nacm, PermitsAll) {
    auto p = policy(kGroups + R"(
      <rule-list><name>admin</name><group>admin</group><rule><name>all</name><action>permit</action></rule></rule-list>
      <rule-list><name>readers</name><group>limited</group>
        <rule><name>read-all</name><path>/</path><access-operations>read</access-operations><action>permit</action></rule>
      </rule-list>
      <rule-list><name>guests</name><group>guest</group>
        <rule><name>deny-eth0</name><path xmlns:i="http://example.com/ns/itf">/i:interfaces/i:interface[i:name='eth0']</path>
          <access-operations>read</access-operations><action>deny</action></rule>
        <rule><name>all</name><action>permit</action></rule>
      </rule-list>)");
    auto andy = p->forUser("andy");
    EXPECT_TRUE(andy->permitsAll());
    EXPECT_TRUE(andy->permitsAllReads());
    EXPECT_TRUE(andy->permitsAllWrites());
    auto wilma = p->forUser("wilma");
    EXPECT_TRUE(wilma->permitsAllReads()) << "read on '/' reaches even default-deny-all nodes";
    EXPECT_FALSE(wilma->permitsAllWrites());
    EXPECT_FALSE(wilma->permitsAll());
    auto guest = p->forUser("guest");
    EXPECT_FALSE(guest->permitsAllReads()) << "a deny before the permit-all";
    EXPECT_TRUE(guest->permitsAllWrites());
    auto nobody = p->forUser("stranger");
    EXPECT_FALSE(nobody->permitsAllReads()) << "/nacm is default-deny-all";
    EXPECT_FALSE(nobody->permitsAllWrites()) << "write-default deny";
    // Consistency: what permitsAll promises holds on every node.
    for (const auto& a : {andy, wilma, guest}) {
        const lyd_node* n;
        for (const lyd_node* top = tree.get(); top; top = top->next) {
            LYD_TREE_DFS_BEGIN(top, n) {
                if (a->permitsAllReads()) {
                    EXPECT_TRUE(a->allowed(n, Op::Read)) << pathOf(n);
                }
                if (a->permitsAllWrites()) {
                    EXPECT_TRUE(a->allowed(n, Op::Create) && a->allowed(n, Op::Update) &&
                                a->allowed(n, Op::Delete));
                }
                LYD_TREE_DFS_END(top, n);
            }
        }
    }
}

// -------------------------------------------------------------------------------------------------
// Key predicates, read filtering, write checks

TEST_F(Nacm, KeyPredicatesOnListsAndLeafLists) {
    auto p = policy(kGroups + R"(<rule-list><name>l</name><group>limited</group>
        <rule><name>red</name><path xmlns:s="http://example.com/ns/system">/s:system/s:route[s:vrf='red'][s:prefix='10/8']</path>
          <action>permit</action></rule>
        <rule><name>blue</name><path xmlns:s="http://example.com/ns/system">/s:system/s:route[s:prefix='10/8'][s:vrf='blue']</path>
          <access-operations>update</access-operations><action>deny</action></rule>
        <rule><name>vlan10</name><path xmlns:s="http://example.com/ns/system">/s:system/s:vlan[s:id='010']/s:name</path>
          <access-operations>update</access-operations><action>permit</action></rule>
        <rule><name>dns</name><path xmlns:s="http://example.com/ns/system">/s:system/s:dns-server[.='8.8.8.8']</path>
          <access-operations>delete</access-operations><action>permit</action></rule>
        <rule><name>hide-routes</name><path xmlns:s="http://example.com/ns/system">/s:system/s:route</path>
          <access-operations>read</access-operations><action>deny</action></rule>
      </rule-list>)");
    auto wilma = p->forUser("wilma");
    const std::string red = "/acme-system:system/route[vrf='red'][prefix='10/8']";
    const std::string blue = "/acme-system:system/route[vrf='blue'][prefix='10/8']";
    EXPECT_TRUE(can(*wilma, red + "/next-hop", Op::Update));
    EXPECT_FALSE(can(*wilma, blue + "/next-hop", Op::Update));
    EXPECT_EQ(why(*wilma, blue + "/next-hop", Op::Update), "denied by rule 'blue' of rule-list 'l'");
    EXPECT_TRUE(can(*wilma, red + "/next-hop", Op::Read));
    EXPECT_FALSE(can(*wilma, blue + "/next-hop", Op::Read));
    EXPECT_TRUE(can(*wilma, "/acme-system:system/vlan[id='10']/name", Op::Update));
    EXPECT_FALSE(can(*wilma, "/acme-system:system/vlan[id='20']/name", Op::Update));
    EXPECT_TRUE(can(*wilma, "/acme-system:system/dns-server[.='8.8.8.8']", Op::Delete));
    EXPECT_FALSE(can(*wilma, "/acme-system:system/dns-server[.='1.1.1.1']", Op::Delete));

    const SchemaVerdict v =
        wilma->decide(lys_find_path(ctx(), nullptr, "/acme-system:system/route/next-hop", 0), Op::Read);
    EXPECT_EQ(v.decision, SchemaDecision::PerInstance);
    const SchemaVerdict h =
        wilma->decide(lys_find_path(ctx(), nullptr, "/acme-system:system/hostname", 0), Op::Read);
    EXPECT_EQ(h.decision, SchemaDecision::Permit);
    EXPECT_TRUE(h.sameBelow);

    Tree copy = wilma->readableCopy(tree.get());
    const auto paths = pathsOf(copy.get());
    EXPECT_EQ(paths.count(red + "/next-hop"), 1u);
    EXPECT_EQ(paths.count(blue), 0u);
    expectConsistent(*wilma, tree);
}

TEST_F(Nacm, ManyDevicesByKeyOnOpenRoadm) {
    // A group limited to some devices: consecutive rules on the same key are one hash lookup;
    // every decision still equals the step-by-step one.
    std::string rules;
    for (int i : {2, 4, 6, 8}) {
        rules += "<rule><name>dev" + std::to_string(i) +
                 "</name><path xmlns:o=\"urn:ncstore:yang:openroadm-inventory\">/o:openroadm-devices/"
                 "o:openroadm-device[o:device-id='C201-7-1A-" +
                 std::to_string(i) + "']</path><action>" + (i == 6 ? "deny" : "permit") + "</action></rule>";
    }
    rules += "<rule><name>dev6-again</name><path "
             "xmlns:o=\"urn:ncstore:yang:openroadm-inventory\">/o:openroadm-devices/"
             "o:openroadm-device[o:device-id='C201-7-1A-6']</path><action>permit</action></rule>";
    rules +=
        R"(<rule><name>others</name><path xmlns:o="urn:ncstore:yang:openroadm-inventory">/o:openroadm-devices/o:openroadm-device</path>
        <action>deny</action></rule>)";
    auto p = policy(kGroups + "<rule-list><name>l</name><group>limited</group>" + rules + "</rule-list>");
    auto wilma = p->forUser("wilma");
    std::string xml = "<openroadm-devices xmlns=\"urn:ncstore:yang:openroadm-inventory\">";
    for (int i = 1; i <= 8; ++i) {
        xml += "<openroadm-device><device-id>C201-7-1A-" + std::to_string(i) +
               "</device-id><status>success</status><org-openroadm-device><degree><degree-number>1</"
               "degree-number>"
               "<max-wavelengths>96</max-wavelengths></degree></org-openroadm-device></openroadm-device>";
    }
    Tree devices = data(xml + "</openroadm-devices>");
    const auto dev = [](int i) {
        return "/ncstore-openroadm-inventory:openroadm-devices/openroadm-device[device-id='C201-7-1A-" +
               std::to_string(i) + "']";
    };
    for (int i = 1; i <= 8; ++i) {
        const bool mine = i == 2 || i == 4 || i == 8;
        EXPECT_EQ(wilma->allowed(
                      at(devices, dev(i) + "/org-openroadm-device/degree[degree-number='1']/max-wavelengths"),
                      Op::Update),
                  mine)
            << i;
        EXPECT_EQ(wilma->firstDenied(at(devices, dev(i)), Op::Delete) == nullptr, mine) << i;
    }
    EXPECT_EQ(wilma->explain(at(devices, dev(6) + "/status"), Op::Update),
              "denied by rule 'dev6' of rule-list 'l'");
    Tree copy = wilma->readableCopy(devices.get());
    int kept = 0;
    for (const lyd_node* d = copy ? lyd_child(copy.get()) : nullptr; d; d = d->next) {
        ++kept;
    }
    EXPECT_EQ(kept, 3) << "devices 2, 4 and 8";
    expectConsistent(*wilma, devices);
}

TEST_F(Nacm, ReadKeepsAncestorsOfReadableNodesAsStructure) {
    auto p = policy("<read-default>deny</read-default>" + kGroups +
                    R"(<rule-list><name>l</name><group>limited</group>
        <rule><name>names</name><path xmlns:i="http://example.com/ns/itf">/i:interfaces/i:interface/i:name</path>
          <access-operations>read</access-operations><action>permit</action></rule>
        <rule><name>mtu</name><path xmlns:i="http://example.com/ns/itf">/i:interfaces/i:interface/i:mtu</path>
          <access-operations>read</access-operations><action>permit</action></rule></rule-list>)");
    auto wilma = p->forUser("wilma");
    Tree copy = wilma->readableCopy(tree.get());
    const std::set<std::string> expected = {
        "/acme-itf:interfaces",
        "/acme-itf:interfaces/interface[name='dummy']",
        "/acme-itf:interfaces/interface[name='dummy']/name",
        "/acme-itf:interfaces/interface[name='dummy']/mtu",
        "/acme-itf:interfaces/interface[name='eth0']",
        "/acme-itf:interfaces/interface[name='eth0']/name",
        "/acme-itf:interfaces/interface[name='eth0']/mtu",
    };
    EXPECT_EQ(pathsOf(copy.get()), expected);
    EXPECT_FALSE(wilma->readable(at(tree, "/acme-system:system")));
    EXPECT_TRUE(wilma->readable(at(tree, "/acme-itf:interfaces")));
    expectConsistent(*wilma, tree);

    // Without the key: no entry can be shown.
    auto q = policy("<read-default>deny</read-default>" + kGroups +
                    R"(<rule-list><name>l</name><group>limited</group>
        <rule><name>mtu</name><path xmlns:i="http://example.com/ns/itf">/i:interfaces/i:interface/i:mtu</path>
          <access-operations>read</access-operations><action>permit</action></rule></rule-list>)");
    EXPECT_EQ(q->forUser("wilma")->readableCopy(tree.get()), nullptr);
    expectConsistent(*q->forUser("wilma"), tree);
}

TEST_F(Nacm, ReadableCopyKeepsDefaultFlags) {
    Tree itf =
        data(R"(<interfaces xmlns="urn:ietf:params:xml:ns:yang:ietf-interfaces"><interface><name>eth1</name>
        <type xmlns:ianaift="urn:ietf:params:xml:ns:yang:iana-if-type">ianaift:ethernetCsmacd</type></interface></interfaces>)");
    auto p = policy(kGroups + R"(<rule-list><name>l</name><group>limited</group>
        <rule><name>no-desc</name><path xmlns:if="urn:ietf:params:xml:ns:yang:ietf-interfaces">/if:interfaces/if:interface/if:type</path>
          <access-operations>read</access-operations><action>deny</action></rule></rule-list>)");
    Tree copy = p->forUser("wilma")->readableCopy(itf.get());
    const lyd_node* enabled = at(copy, "/ietf-interfaces:interfaces/interface[name='eth1']/enabled");
    ASSERT_NE(enabled, nullptr);
    EXPECT_TRUE(enabled->flags & LYD_DEFAULT);
    EXPECT_EQ(pathsOf(copy.get()).count("/ietf-interfaces:interfaces/interface[name='eth1']/type"), 0u);
}

TEST_F(Nacm, FirstDeniedWalksCreatedSubtrees) {
    auto p = policy(kGroups + kDataRules);
    auto wilma = p->forUser("wilma");
    EXPECT_EQ(wilma->firstDenied(at(tree, "/acme-netconf:acme-netconf/config-parameters"), Op::Create),
              nullptr);
    EXPECT_EQ(wilma->firstDenied(at(tree, "/acme-netconf:acme-netconf"), Op::Create),
              at(tree, "/acme-netconf:acme-netconf"));
    auto q = policy("<write-default>permit</write-default>" + kGroups);
    EXPECT_EQ(q->forUser("wilma")->firstDenied(at(tree, "/acme-system:system"), Op::Create),
              at(tree, "/acme-system:system/root-password"));
}

TEST_F(Nacm, NestedNotificationNeedsReadableAncestors) {
    const auto parse = [](const char* name) {
        const std::string xml =
            std::string("<interfaces xmlns=\"http://example.com/ns/itf\"><interface><name>") + name +
            "</name><link-flap><count>3</count></link-flap></interface></interfaces>";
        ly_in* in = nullptr;
        EXPECT_EQ(ly_in_new_memory(xml.c_str(), &in), LY_SUCCESS);
        lyd_node* raw = nullptr;
        lyd_node* notif = nullptr;
        EXPECT_EQ(lyd_parse_op(ctx(), nullptr, in, LYD_XML, LYD_TYPE_NOTIF_YANG, &raw, &notif), LY_SUCCESS);
        ly_in_free(in, 0);
        return std::make_pair(Tree(raw), notif);
    };
    auto p = policy(kGroups + R"(<rule-list><name>l</name><group>limited</group>
        <rule><name>no-eth0</name><path xmlns:i="http://example.com/ns/itf">/i:interfaces/i:interface[i:name='eth0']</path>
          <access-operations>read</access-operations><action>deny</action></rule>
        <rule><name>no-flaps</name><module-name>acme-itf</module-name><notification-name>link-flap</notification-name>
          <access-operations>read</access-operations><action>deny</action></rule></rule-list>)");
    auto [eth0, eth0Notif] = parse("eth0");
    auto [dummy, dummyNotif] = parse("dummy");
    EXPECT_FALSE(p->forUser("wilma")->notification(eth0Notif));
    EXPECT_FALSE(p->forUser("wilma")->notification(dummyNotif)) << "notification-name rule";
    EXPECT_TRUE(p->forUser("guest")->notification(dummyNotif));
}

TEST(NacmCounters, StateTree) {
    Counters c;
    c.deniedOperations = 3;
    c.deniedDataWrites += 2;
    Tree t = c.state(ctx());
    EXPECT_EQ(std::string(lyd_get_value(at(t, "/ietf-netconf-acm:nacm/denied-operations"))), "3");
    EXPECT_EQ(std::string(lyd_get_value(at(t, "/ietf-netconf-acm:nacm/denied-data-writes"))), "2");
    EXPECT_EQ(std::string(lyd_get_value(at(t, "/ietf-netconf-acm:nacm/denied-notifications"))), "0");
}

// -------------------------------------------------------------------------------------------------
// Random policies: the cached path always agrees with the RFC steps.

TEST_F(Nacm, RandomPoliciesAgreeWithTheReference) {
    const std::vector<std::string> paths = {"/",
                                            "/i:interfaces",
                                            "/i:interfaces/i:interface",
                                            "/i:interfaces/i:interface[i:name='dummy']",
                                            "/i:interfaces/i:interface[i:name='eth0']/i:mtu",
                                            "/i:interfaces/i:interface/s:owner",
                                            "/i:interfaces/i:interface[i:name='dummy']/s:owner",
                                            "/s:system",
                                            "/s:system/s:secrets",
                                            "/s:system/s:route[s:vrf='red'][s:prefix='10/8']",
                                            "/s:system/s:route[s:vrf='blue'][s:prefix='10/8']",
                                            "/s:system/s:route/s:next-hop",
                                            "/s:system/s:vlan[s:id='20']",
                                            "/s:system/s:dns-server[.='1.1.1.1']",
                                            "/a:acme-netconf/a:config-parameters",
                                            "/s:system/s:root-password",
                                            "/s:system/s:vlan/s:id"};
    const std::vector<std::string> modules = {"*", "acme-itf", "acme-system", "acme-netconf",
                                              "ietf-netconf-monitoring"};
    const std::vector<std::string> ops = {"*", "read", "create update", "delete", "read update", "exec"};
    std::mt19937 rng(8341);
    const auto pick = [&](const auto& v) {
        return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
    };
    for (int round = 0; round < 40; ++round) {
        std::string body = std::string("<read-default>") + (rng() % 2 ? "permit" : "deny") +
                           "</read-default><write-default>" + (rng() % 2 ? "permit" : "deny") +
                           "</write-default>" + kGroups;
        for (int l = 0; l < 3; ++l) {
            body += "<rule-list><name>l" + std::to_string(l) + "</name><group>" +
                    pick(std::vector<std::string>{"limited", "*", "guest"}) + "</group>";
            const int n = 1 + static_cast<int>(rng() % 6);
            for (int r = 0; r < n; ++r) {
                body += "<rule><name>r" + std::to_string(r) + "</name>";
                if (rng() % 3) {
                    body += "<path xmlns:i=\"http://example.com/ns/itf\" "
                            "xmlns:s=\"http://example.com/ns/system\" "
                            "xmlns:a=\"http://example.com/ns/netconf\">" +
                            pick(paths) + "</path>";
                } else {
                    body += "<module-name>" + pick(modules) + "</module-name>";
                }
                body += "<access-operations>" + pick(ops) + "</access-operations><action>" +
                        (rng() % 2 ? "permit" : "deny") + "</action></rule>";
            }
            body += "</rule-list>";
        }
        auto p = policy(body);
        SCOPED_TRACE(body);
        expectConsistent(*p->forUser("wilma"), tree);
        expectConsistent(*p->forUser("stranger"), tree);
    }
}

TEST_F(Nacm, ConcurrentUseGivesTheSameAnswers) {
    auto p = policy(kGroups + kDataRules + kNotificationRules);
    auto wilma = p->forUser("wilma");
    std::vector<const lyd_node*> nodes;
    for (const lyd_node* top = tree.get(); top; top = top->next) {
        const lyd_node* n;
        LYD_TREE_DFS_BEGIN(top, n) {
            nodes.push_back(n);
            LYD_TREE_DFS_END(top, n);
        }
    }
    std::vector<char> expected;
    for (const lyd_node* n : nodes) {
        for (Op op : kAllOps) {
            expected.push_back(wilma->explain(n, op).rfind("permitted", 0) == 0);
        }
    }
    auto fresh = policy(kGroups + kDataRules + kNotificationRules)->forUser("wilma"); // cold cache
    std::vector<std::thread> threads;
    std::atomic<int> mismatches{0};
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            for (int round = 0; round < 50; ++round) {
                for (size_t k = 0; k < nodes.size(); ++k) {
                    const lyd_node* n = nodes[(k + static_cast<size_t>(t) * 7) % nodes.size()];
                    const size_t base = ((k + static_cast<size_t>(t) * 7) % nodes.size()) * 5;
                    for (Op op : kAllOps) {
                        if (fresh->allowed(n, op) !=
                            static_cast<bool>(expected[base + static_cast<size_t>(op)])) {
                            ++mismatches;
                        }
                    }
                }
            }
        });
    }
    for (auto& t : threads) {
        t.join();
    }
    EXPECT_EQ(mismatches.load(), 0);
}
