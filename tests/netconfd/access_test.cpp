// NACM in the server (access.hpp, readview.hpp, nacmsetup.hpp), on a real store with the server's
// context: write checks on change sets, the policy swap, lockdown, read views with filters, the
// first-start configuration, notifications. The rule engine itself is tested in tests/nacm.
#include "editcontent.hpp"
#include "nacmsetup.hpp"
#include "readview.hpp"
#include "rpcargs.hpp"
#include "rpcparse.hpp"
#include "sessionaccess.hpp"

#include "ncstore/models.hpp"

#include "temp_store.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

using namespace ncstore;
using namespace ncstore::netconfd;

namespace {

constexpr const char* kIf = "urn:ietf:params:xml:ns:yang:ietf-interfaces";
constexpr const char* kNacm = "urn:ietf:params:xml:ns:yang:ietf-netconf-acm";

const ly_ctx* context() {
    static const Context ctx = [] {
        Context c = buildContext(defaultModelOptions());
        // For SessionAccess::maySend: a module with notifications.
        if (!ly_ctx_load_module(c.get(), "ietf-netconf-notifications", nullptr, nullptr)) {
            throw YangError("cannot load ietf-netconf-notifications", c.get());
        }
        return c;
    }();
    return ctx.get();
}

std::string iface(const std::string& name, const std::string& extra = "") {
    return "<interface><name>" + name +
           "</name><type "
           "xmlns:ianaift=\"urn:ietf:params:xml:ns:yang:iana-if-type\">ianaift:ethernetCsmacd</type>" +
           extra + "</interface>";
}

std::string interfaces(const std::string& entries, const std::string& attrs = "") {
    return std::string("<interfaces xmlns=\"") + kIf + "\"" + attrs + ">" + entries + "</interfaces>";
}

std::string rule(const std::string& name, const std::string& action, const std::string& ops,
                 const std::string& path) {
    return "<rule><name>" + name + "</name><path xmlns:if=\"" + kIf + "\">" + path +
           "</path><access-operations>" + ops + "</access-operations><action>" + action + "</action></rule>";
}

class Access : public ::testing::Test {
protected:
    void SetUp() override {
        store_ = ncstore::test::openStore(context(), dir_);
        control_ = std::make_unique<AccessControl>(context(), "rescue");
    }
    void TearDown() override {
        control_.reset();
        store_.reset();
    }

    /// Writes `xml` as the server itself, without any check (what a hand-made store could hold).
    void raw(const std::string& xml) { store_->edit({}, ds::Datastore::Running, parse(xml).get()); }

    /// Installs the NACM configuration: group admin (root) may do all, group ops (bob) `rules`.
    void rules(const std::string& opsRules) {
        std::string xml = nacmsetup::firstStartXml({"root"});
        const std::string groupsEnd = "</groups>";
        xml.insert(xml.find(groupsEnd), "<group><name>ops</name><user-name>bob</user-name></group>");
        xml.insert(xml.rfind("</nacm>"),
                   "<rule-list><name>ops</name><group>ops</group>" + opsRules + "</rule-list>");
        // As the recovery user: whatever the rules in force.
        write("rescue", std::string("<nacm xmlns=\"") + kNacm +
                            "\" xmlns:nc=\"urn:ietf:params:xml:ns:netconf:base:1.0\" "
                            "nc:operation=\"replace\"" +
                            xml.substr(xml.find('>')));
    }

    Tree parse(const std::string& xml) const { return parseEditContent(context(), xml); }

    /// An edit of running by `user` through the server's write check.
    void write(const std::string& user, const std::string& xml, ds::Datastore target = ds::Datastore::Running,
               ds::EditOptions options = {}) {
        const auto access = control_->forUser(user);
        const Tree edit = parse(xml);
        WriteCheck check(*control_, access->permitsAllWrites() ? nullptr : access.get(),
                         target == ds::Datastore::Running, options.testOption != ds::TestOption::TestOnly);
        const ds::WriteContext who = check.context({.session = 7, .user = user});
        check.run(*store_, [&] { return store_->edit(who, target, edit.get(), options); });
    }

    /// The datastore error `write` throws.
    ds::Error refused(const std::string& user, const std::string& xml,
                      ds::Datastore target = ds::Datastore::Running) {
        try {
            write(user, xml, target);
        } catch (const ds::Error& e) {
            return e;
        }
        ADD_FAILURE() << "the write went through: " << xml;
        return ds::Error(ds::ErrorTag::OperationFailed, "none");
    }

    std::string running() const {
        std::string out;
        store_->read(ds::Datastore::Running, [&](const lyd_node* tree) {
            out = tree ? print(tree, LYD_XML, LYD_PRINT_WITHSIBLINGS | LYD_PRINT_SHRINK) : "";
        });
        return out;
    }

    std::string read(const std::string& user, const lyd_node* filter = nullptr, uint32_t wd = 0,
                     bool skipNacm = false) const {
        const auto access = control_->forUser(user);
        std::string out;
        store_->read(ds::Datastore::Running, [&](const lyd_node* tree) {
            out = readableXml(tree, filter, wd, access->permitsAll() ? nullptr : access.get(),
                              skipNacm ? nacmTop(tree) : nullptr);
        });
        return out;
    }

    ncstore::test::TempDir dir_;
    std::unique_ptr<ds::Store> store_;
    std::unique_ptr<AccessControl> control_;
};

const std::string kLabOnly =
    rule("lab", "permit", "create update delete", "/if:interfaces/if:interface[if:name='lab0']");

TEST_F(Access, ADeniedWriteNamesTheFirstDeniedNodeAndChangesNothing) {
    rules(kLabOnly);
    write("root", interfaces(iface("eth0")));
    const std::string before = running();
    const auto e = refused("bob", interfaces(iface("lab0") + iface("eth1") + iface("eth2")));
    EXPECT_EQ(e.tag(), ds::ErrorTag::AccessDenied);
    EXPECT_EQ(e.path(), "/ietf-interfaces:interfaces/interface[name='eth1']");
    EXPECT_EQ(running(), before);
    EXPECT_EQ(control_->counters().deniedDataWrites.load(), 1u) << "one per refused write, not per node";
    write("bob", interfaces(iface("lab0", "<description>mine</description>")));
    EXPECT_NE(running().find("<name>lab0</name>"), std::string::npos);
}

TEST_F(Access, ANonPresenceContainerComesWithItsPermittedChildren) {
    rules(kLabOnly);
    // No /interfaces yet: creating lab0 creates it, which needs no right of its own.
    write("bob", interfaces(iface("lab0")));
    const std::string ns = " xmlns:nc=\"urn:ietf:params:xml:ns:netconf:base:1.0\"";
    write("bob", interfaces("", ns + " nc:operation=\"remove\""));
    EXPECT_EQ(running().find("<name>lab0</name>"), std::string::npos);
    write("root", interfaces(iface("eth0")));
    const auto e = refused("bob", interfaces("", ns + " nc:operation=\"remove\""));
    EXPECT_EQ(e.path(), "/ietf-interfaces:interfaces/interface[name='eth0']");
}

TEST_F(Access, NodesHoldingTheirDefaultAreNotChecked) {
    // bob may create interfaces but not set `enabled`, whose default (true) every entry gets.
    rules(rule("no-enabled", "deny", "create update", "/if:interfaces/if:interface/if:enabled") +
          rule("interfaces", "permit", "create update delete", "/if:interfaces"));
    write("bob", interfaces(iface("eth0")));
    const auto e = refused("bob", interfaces(iface("eth1", "<enabled>false</enabled>")));
    EXPECT_EQ(e.path(), "/ietf-interfaces:interfaces/interface[name='eth1']/enabled");
}

TEST_F(Access, DeletesAreCheckedWithTheKeysOfTheirAncestors) {
    rules(kLabOnly);
    write("root", interfaces(iface("eth0", "<description>d</description>") +
                             iface("lab0", "<description>d</description>")));
    const std::string ns = " xmlns:nc=\"urn:ietf:params:xml:ns:netconf:base:1.0\"";
    // The deleted leaf is gone from the resulting tree: its entry's key decides.
    write("bob",
          interfaces("<interface><name>lab0</name><description nc:operation=\"delete\"/></interface>", ns));
    const auto e = refused(
        "bob",
        interfaces("<interface><name>eth0</name><description nc:operation=\"delete\"/></interface>", ns));
    EXPECT_EQ(e.path(), "/ietf-interfaces:interfaces/interface[name='eth0']/description");
    const auto whole = refused("bob", interfaces("", ns + " nc:operation=\"remove\""));
    EXPECT_EQ(whole.tag(), ds::ErrorTag::AccessDenied);
    EXPECT_NE(running().find("eth0"), std::string::npos);
}

TEST_F(Access, ANacmChangeIsInForceWhenTheWriteReturns) {
    rules("");
    EXPECT_FALSE(control_->forUser("bob")->permitsAllWrites());
    rules(rule("all", "permit", "*", "/"));
    EXPECT_TRUE(control_->forUser("bob")->permitsAllWrites()) << "no listener, no delay: at once";
    // A test-only edit validates but does not change what is in force.
    ds::EditOptions testOnly;
    testOnly.testOption = ds::TestOption::TestOnly;
    write("root", std::string("<nacm xmlns=\"") + kNacm + "\"><enable-nacm>false</enable-nacm></nacm>",
          ds::Datastore::Running, testOnly);
    EXPECT_TRUE(control_->policy()->enabled());
    // Candidate edits are not in force; their commit is (CommitOps::commit in netconfd/ops/commit.cpp uses the same check).
    write("root", std::string("<nacm xmlns=\"") + kNacm + "\"><enable-nacm>false</enable-nacm></nacm>",
          ds::Datastore::Candidate);
    EXPECT_TRUE(control_->policy()->enabled());
    WriteCheck check(*control_, nullptr, true);
    const ds::WriteContext who = check.context({.session = 7, .user = "root"});
    check.run(*store_, [&] { return store_->commit(who); });
    EXPECT_FALSE(control_->policy()->enabled());
}

TEST_F(Access, ABadNacmConfigurationIsRefusedAndNothingChanges) {
    rules(kLabOnly);
    const auto inForce = control_->policy();
    const std::string before = running();
    const auto e =
        refused("root", std::string("<nacm xmlns=\"") + kNacm +
                            "\"><rule-list><name>x</name><group>nobody</group></rule-list></nacm>");
    EXPECT_EQ(e.tag(), ds::ErrorTag::InvalidValue);
    EXPECT_NE(std::string(e.what()).find("'nobody'"), std::string::npos) << e.what();
    EXPECT_NE(e.path().find("rule-list[name='x']"), std::string::npos) << e.path();
    EXPECT_EQ(running(), before);
    EXPECT_EQ(control_->policy(), inForce);
}

TEST_F(Access, PoliciesAreInstalledInTheOrderOfTheirWrites) {
    const auto first = control_->reserve();
    const auto second = control_->reserve();
    const auto newer = nacm::Policy::compile(nullptr, context());
    const auto older = nacm::Policy::compile(nullptr, context());
    control_->install(newer, second);
    control_->install(older, first); // its write came first: it must not win
    EXPECT_EQ(control_->policy(), newer);
}

TEST_F(Access, AStoredConfigurationThatDoesNotCompileLocksEveryoneButRecoveryOut) {
    // Written without any check, as a hand-edited or imported store could hold it.
    raw(std::string("<nacm xmlns=\"") + kNacm +
        "\"><rule-list><name>x</name><group>nobody</group></rule-list></nacm>");
    control_->load(*store_);
    EXPECT_TRUE(control_->lockdown());
    EXPECT_FALSE(control_->forUser("root")->exec("ietf-netconf", "get-config"));
    EXPECT_FALSE(control_->forUser("root")->permitsAllReads());
    EXPECT_TRUE(control_->forUser("rescue")->permitsAll());
    // The recovery user repairs /nacm: in force at once, lockdown over.
    rules("");
    EXPECT_FALSE(control_->lockdown());
    EXPECT_TRUE(control_->forUser("root")->permitsAll());
}

TEST_F(Access, ReadsLeaveOutWhatTheUserMayNotReadAlsoForFilters) {
    rules(rule("hide-secret", "deny", "read", "/if:interfaces/if:interface[if:name='secret0']") +
          rule("hide-description", "deny", "read", "/if:interfaces/if:interface/if:description"));
    write("root", interfaces(iface("eth0", "<description>hidden</description>") + iface("secret0")));
    const std::string all = read("root");
    EXPECT_NE(all.find("secret0"), std::string::npos);
    const std::string mine = read("bob");
    EXPECT_NE(mine.find("eth0"), std::string::npos);
    EXPECT_EQ(mine.find("secret0"), std::string::npos);
    EXPECT_EQ(mine.find("hidden"), std::string::npos);
    EXPECT_EQ(mine.find("nacm"), std::string::npos) << "/nacm is default-deny-all";

    // A filter cannot select by a value the user may not read.
    const ParsedRpc rpc =
        parseRpc(context(), std::string("<rpc message-id=\"1\" xmlns=\"urn:ietf:params:xml:ns:netconf:"
                                        "base:1.0\"><get-config><source><running/></source><filter>") +
                                interfaces("<interface><description>hidden</description></interface>") +
                                "</filter></get-config></rpc>");
    ASSERT_FALSE(rpc.error) << rpc.error->what();
    const lyd_node* filter = rpcargs::child(rpc.op.get(), "filter");
    ASSERT_NE(filter, nullptr);
    EXPECT_NE(read("root", filter).find("eth0"), std::string::npos);
    EXPECT_EQ(read("bob", filter), "");
}

TEST_F(Access, ATopLevelNodeLeftOutOfAFilteredReadCostsNoCopyAndChangesNothingElse) {
    rules(""); // bob: the defaults; /nacm (default-deny-all) is all he may not read
    write("root", interfaces(iface("eth0", "<description>d</description>") + iface("eth1")));
    const ParsedRpc rpc =
        parseRpc(context(), std::string("<rpc message-id=\"1\" xmlns=\"urn:ietf:params:xml:ns:netconf:"
                                        "base:1.0\"><get-config><source><running/></source><filter>") +
                                interfaces("<interface><name>eth0</name></interface>") + "<nacm xmlns=\"" +
                                kNacm + "\"/></filter></get-config></rpc>");
    ASSERT_FALSE(rpc.error) << rpc.error->what();
    const lyd_node* filter = rpcargs::child(rpc.op.get(), "filter");
    const std::string mine = read("bob", filter);
    const std::string all = read("root", filter);
    EXPECT_NE(all.find("<nacm"), std::string::npos);
    EXPECT_EQ(mine.find("<nacm"), std::string::npos);
    EXPECT_EQ(mine, all.substr(0, all.find("<nacm"))) << "the interfaces part is the administrator's";
}

TEST_F(Access, ANodeLeftOutOfARead) {
    rules("");
    write("root", interfaces(iface("eth0")));
    const std::string all = read("root");
    const std::string skipped = read("root", nullptr, 0, true);
    EXPECT_NE(all.find("<nacm"), std::string::npos);
    EXPECT_EQ(skipped.find("<nacm"), std::string::npos);
    EXPECT_NE(skipped.find("eth0"), std::string::npos);
}

TEST_F(Access, TheFirstStartWritesItsRulesIntoANewStoreOnly) {
    EXPECT_TRUE(nacmsetup::initialize(*store_, *control_, {"admin"}));
    EXPECT_TRUE(control_->forUser("admin")->permitsAll()) << "in force at once";
    EXPECT_FALSE(control_->forUser("someone")->permitsAllWrites());
    // Once written, never again: an operator's later removal of it stays.
    write("admin", std::string("<nacm xmlns=\"") + kNacm +
                       "\" xmlns:nc=\"urn:ietf:params:xml:ns:netconf:base:1.0\" nc:operation=\"remove\"/>");
    EXPECT_FALSE(nacmsetup::initialize(*store_, *control_, {"admin"}));
    EXPECT_FALSE(control_->forUser("admin")->permitsAllWrites());
}

TEST_F(Access, NotificationsASessionMayNotReceiveAreCounted) {
    rules(
        "<rule><name>no-starts</name><module-name>ietf-netconf-notifications</module-name><notification-name>"
        "netconf-session-start</notification-name><access-operations>read</access-operations><action>deny"
        "</action></rule>");
    lyd_node* tree = nullptr;
    lyd_node* op = nullptr;
    ly_in* in = nullptr;
    const std::string xml =
        "<netconf-session-start xmlns=\"urn:ietf:params:xml:ns:yang:ietf-netconf-notifications\">"
        "<username>x</username><session-id>1</session-id></netconf-session-start>";
    ASSERT_EQ(ly_in_new_memory(xml.c_str(), &in), LY_SUCCESS);
    ASSERT_EQ(lyd_parse_op(context(), nullptr, in, LYD_XML, LYD_TYPE_NOTIF_YANG, &tree, &op), LY_SUCCESS);
    ly_in_free(in, 0);
    const Tree owned{tree};
    const SessionAccess bob(*control_, "bob");
    const SessionAccess root(*control_, "root");
    EXPECT_TRUE(root.maySend(op));
    EXPECT_FALSE(bob.maySend(op));
    EXPECT_EQ(control_->counters().deniedNotifications.load(), 1u);
}

} // namespace
