// YANG-Push content: YANG Patch edits from change sets (RFC 8072 / 8641), RESTCONF targets, and
// what a selection filter lets through of each change.
#include "events.hpp"
#include "patch.hpp"
#include "selection.hpp"

#include "ncstore/models.hpp"

#include <gtest/gtest.h>

using namespace ncstore;
using namespace ncstore::netconfd;

namespace {

const ly_ctx* context() {
    static const Context ctx = buildContext(defaultModelOptions());
    return ctx.get();
}

const std::string kIfNs = "urn:ietf:params:xml:ns:yang:ietf-interfaces";
const std::string kIf = "/ietf-interfaces:interfaces";

Tree parse(const std::string& xml) {
    return parseData(context(), xml, LYD_XML, LYD_PARSE_ONLY | LYD_PARSE_STRICT, 0);
}

/// The list entry `name` of a parsed interfaces document, unlinked (a change set's value).
Tree entry(const std::string& name, const std::string& content) {
    Tree doc = parse("<interfaces xmlns=\"" + kIfNs + "\"><interface><name>" + name + "</name>" + content +
                     "</interface></interfaces>");
    lyd_node* e = lyd_child(doc.get());
    lyd_unlink_tree(e);
    return Tree{e};
}

ds::Change created(const std::string& name, const std::string& content) {
    ds::Change c;
    c.op = ds::ChangeOp::Create;
    c.path = kIf + "/interface[name='" + name + "']";
    c.newTree = entry(name, content);
    c.schema = c.newTree->schema;
    return c;
}

ds::Change leafChange(ds::ChangeOp op, const std::string& name, const char* leaf,
                      std::optional<std::string> oldValue, std::optional<std::string> newValue) {
    ds::Change c;
    c.op = op;
    c.path = kIf + "/interface[name='" + name + "']/" + leaf;
    c.oldValue = std::move(oldValue);
    c.newValue = std::move(newValue);
    c.schema = lys_find_path(context(), nullptr, (kIf + "/interface/" + leaf).c_str(), 0);
    return c;
}

/// A push-change-update notification validates against ietf-yang-push: proof of the format.
void expectValidNotification(const std::string& content) {
    ly_in* in = nullptr;
    ASSERT_EQ(ly_in_new_memory(content.c_str(), &in), LY_SUCCESS);
    lyd_node* tree = nullptr;
    const LY_ERR rc = lyd_parse_op(context(), nullptr, in, LYD_XML, LYD_TYPE_NOTIF_YANG, &tree, nullptr);
    ly_in_free(in, 0);
    Tree owned{tree};
    EXPECT_EQ(rc, LY_SUCCESS) << lastError(context()) << "\n" << content;
}

/// The selection of a datastore filter as establish-subscription carries it.
push::Selection selection(const std::string& filterXml) {
    const std::string rpc =
        "<establish-subscription xmlns=\"urn:ietf:params:xml:ns:yang:ietf-subscribed-notifications\" "
        "xmlns:yp=\"urn:ietf:params:xml:ns:yang:ietf-yang-push\" "
        "xmlns:ds=\"urn:ietf:params:xml:ns:yang:ietf-datastores\">"
        "<yp:datastore>ds:running</yp:datastore>" +
        filterXml + "<yp:on-change/></establish-subscription>";
    ly_in* in = nullptr;
    EXPECT_EQ(ly_in_new_memory(rpc.c_str(), &in), LY_SUCCESS);
    lyd_node* tree = nullptr;
    const LY_ERR rc = lyd_parse_op(context(), nullptr, in, LYD_XML, LYD_TYPE_RPC_YANG, &tree, nullptr);
    ly_in_free(in, 0);
    Tree owned{tree};
    EXPECT_EQ(rc, LY_SUCCESS) << lastError(context());
    for (const lyd_node* n = lyd_child(owned.get()); n; n = n->next) {
        const std::string name = n->schema->name;
        if (name == "datastore-subtree-filter" || name == "datastore-xpath-filter") {
            return push::Selection::of(n);
        }
    }
    ADD_FAILURE() << "no filter in " << rpc;
    return {};
}

std::string subtreeFilter(const std::string& content) {
    return "<yp:datastore-subtree-filter>" + content + "</yp:datastore-subtree-filter>";
}

std::string xpathFilter(const std::string& expr) {
    return "<yp:datastore-xpath-filter xmlns:if=\"" + kIfNs + "\">" + expr + "</yp:datastore-xpath-filter>";
}

using Kind = push::Selection::Part::Kind;

} // namespace

TEST(YangPatch, TargetsAreRestconfPathsWithEncodedKeys) {
    EXPECT_EQ(push::restconfPath(kIf), kIf);
    EXPECT_EQ(push::restconfPath(kIf + "/interface[name='eth0']/mtu"), kIf + "/interface=eth0/mtu");
    // Reserved characters of a key value are percent-encoded; quotes of either kind are read.
    EXPECT_EQ(push::restconfPath(kIf + "/interface[name=\"a'b/c,d e=%\"]"),
              kIf + "/interface=a%27b%2Fc%2Cd%20e%3D%25");
    EXPECT_EQ(push::restconfPath(kIf + "/interface[name='e']/higher-layer-if[.='x y']"),
              kIf + "/interface=e/higher-layer-if=x%20y");
    // A module change is written where it happens.
    EXPECT_EQ(push::restconfPath(kIf + "/interface[name='e']/ietf-ip:ipv4/mtu"),
              kIf + "/interface=e/ietf-ip:ipv4/mtu");
    EXPECT_THROW(push::restconfPath("interfaces"), notify::PathError);
}

TEST(YangPatch, EachChangeIsOneEditWithItsOwnValue) {
    const ds::Change create =
        created("eth0", "<type xmlns:ianaift=\"urn:ietf:params:xml:ns:yang:iana-if-type\">"
                        "ianaift:ethernetCsmacd</type><enabled>false</enabled>");
    const std::string e = push::edit(create, "7.1", nullptr, context());
    EXPECT_NE(e.find("<edit-id>7.1</edit-id><operation>create</operation><target>" + kIf +
                     "/interface=eth0</target><value><interface xmlns=\"" + kIfNs + "\"><name>eth0</name>"),
              std::string::npos)
        << e;
    EXPECT_NE(e.find("<enabled>false</enabled>"), std::string::npos) << e;

    // A changed identityref leaf is sent with its XML prefix declared.
    const ds::Change type = leafChange(ds::ChangeOp::Update, "eth0", "type", "iana-if-type:ethernetCsmacd",
                                       "iana-if-type:softwareLoopback");
    const std::string t = push::edit(type, "7.2", nullptr, context());
    EXPECT_NE(
        t.find("<operation>replace</operation><target>" + kIf + "/interface=eth0/type</target><value><type "),
        std::string::npos)
        << t;
    EXPECT_NE(t.find(":softwareLoopback</type></value>"), std::string::npos) << t;
    EXPECT_NE(t.find("=\"urn:ietf:params:xml:ns:yang:iana-if-type\""), std::string::npos) << t;

    const ds::Change del = leafChange(ds::ChangeOp::Delete, "eth0", "enabled", "false", std::nullopt);
    EXPECT_EQ(push::edit(del, "7.3", nullptr, context()),
              "<edit><edit-id>7.3</edit-id><operation>delete</operation><target>" + kIf +
                  "/interface=eth0/enabled</target></edit>");

    ds::Change moved;
    moved.op = ds::ChangeOp::Move;
    moved.path = kIf + "/interface[name='b']/higher-layer-if[.='x']";
    moved.position =
        ds::Position{ds::Position::Where::After, kIf + "/interface[name='b']/higher-layer-if[.='w']"};
    EXPECT_EQ(push::edit(moved, "7.4", nullptr, context()),
              "<edit><edit-id>7.4</edit-id><operation>move</operation><target>" + kIf +
                  "/interface=b/higher-layer-if=x</target><point>" + kIf +
                  "/interface=b/higher-layer-if=w</point><where>after</where></edit>");

    // The whole notification is what ietf-yang-push defines.
    const std::string edits = e + t + push::edit(del, "7.3", nullptr, context());
    expectValidNotification(push::pushChangeUpdate(3, "7", edits));
    expectValidNotification(push::pushUpdate(3, "<interfaces xmlns=\"" + kIfNs + "\"/>"));
    expectValidNotification(
        push::subscriptionTerminated(3, "ietf-subscribed-notifications:no-such-subscription"));
    expectValidNotification(
        push::subscriptionSuspended(3, "ietf-subscribed-notifications:insufficient-resources"));
    expectValidNotification(push::subscriptionTerminated(3, "ietf-yang-push:datastore-not-subscribable"));
    expectValidNotification(push::replayCompleted(3));
}

TEST(YangPatch, TheCacheMakesEachChangeSetsEditsOnce) {
    ds::ChangeSet cs;
    cs.commitId = 42;
    cs.changes.push_back(created("a", ""));
    cs.changes.push_back(leafChange(ds::ChangeOp::Delete, "b", "enabled", "true", std::nullopt));
    push::EditCache cache(2);
    const auto first = cache.edits(cs, context());
    ASSERT_EQ(first->size(), 2u);
    EXPECT_NE((*first)[1].find("<edit-id>42.2</edit-id><operation>delete</operation>"), std::string::npos);
    EXPECT_EQ(cache.edits(cs, context()), first); // the same edits, not made again
    for (std::uint64_t id : {43, 44}) {
        cs.commitId = id;
        cache.edits(cs, context());
    }
    cs.commitId = 42;
    EXPECT_NE(cache.edits(cs, context()), first); // forgotten past the bound: made again
}

TEST(Selection, NoFilterSelectsEveryChangeWhole) {
    const push::Selection all;
    EXPECT_EQ(all.select(created("a", ""), context(), nullptr).kind, Kind::Whole);
}

TEST(Selection, ASubtreeOfContainmentNodesIsDecidedByPathAlone) {
    const auto s = selection(subtreeFilter("<interfaces xmlns=\"" + kIfNs + "\"/>"));
    EXPECT_EQ(s.select(created("a", "<enabled>true</enabled>"), context(), nullptr).kind, Kind::Whole);
    EXPECT_EQ(
        s.select(leafChange(ds::ChangeOp::Update, "a", "enabled", "true", "false"), context(), nullptr).kind,
        Kind::Whole);
    ds::Change other;
    other.op = ds::ChangeOp::Update;
    other.path = "/ietf-netconf-acm:nacm/enable-nacm";
    other.oldValue = "true";
    other.newValue = "false";
    other.schema = lys_find_path(context(), nullptr, "/ietf-netconf-acm:nacm/enable-nacm", 0);
    EXPECT_EQ(s.select(other, context(), nullptr).kind, Kind::None);
}

TEST(Selection, AChangeAboveTheSelectionIsCutToIt) {
    const auto s = selection(subtreeFilter("<interfaces xmlns=\"" + kIfNs +
                                           "\"><interface><description/></interface></interfaces>"));
    const ds::Change c = created("a", "<description>up</description><enabled>false</enabled>");
    const auto part = s.select(c, context(), nullptr);
    ASSERT_EQ(part.kind, Kind::Cut);
    const std::string e = push::edit(c, "1.1", part.node, context());
    EXPECT_NE(e.find("<value><interface xmlns=\"" + kIfNs +
                     "\"><name>a</name><description>up</description></interface>"),
              std::string::npos)
        << e;
    EXPECT_EQ(e.find("enabled"), std::string::npos) << e;
    // A change beside the selection is not sent; one inside it is, whole.
    EXPECT_EQ(
        s.select(leafChange(ds::ChangeOp::Update, "a", "enabled", "true", "false"), context(), nullptr).kind,
        Kind::None);
    EXPECT_EQ(
        s.select(leafChange(ds::ChangeOp::Update, "a", "description", "x", "y"), context(), nullptr).kind,
        Kind::Whole);
    // Deleting the entry deletes what is selected in it.
    ds::Change del = created("a", "<enabled>true</enabled>");
    del.op = ds::ChangeOp::Delete;
    del.oldTree = std::move(del.newTree);
    EXPECT_EQ(s.select(del, context(), nullptr).kind, Kind::Whole);
}

TEST(Selection, ContentMatchesAreJudgedOnTheChange) {
    const auto s = selection(subtreeFilter("<interfaces xmlns=\"" + kIfNs +
                                           "\"><interface><name>b</name></interface></interfaces>"));
    EXPECT_EQ(s.select(created("a", "<enabled>true</enabled>"), context(), nullptr).kind, Kind::None);
    const auto b = s.select(created("b", "<enabled>true</enabled>"), context(), nullptr);
    ASSERT_EQ(b.kind, Kind::Cut);
    EXPECT_NE(printTree(b.node, LYD_XML, LYD_PRINT_SHRINK).find("<enabled>true</enabled>"),
              std::string::npos);
    EXPECT_EQ(s.select(leafChange(ds::ChangeOp::Update, "b", "enabled", "true", "false"), context(), nullptr)
                      .kind != Kind::None,
              true);
    EXPECT_EQ(
        s.select(leafChange(ds::ChangeOp::Update, "a", "enabled", "true", "false"), context(), nullptr).kind,
        Kind::None);
}

TEST(Selection, XPathFilters) {
    const auto plain = selection(xpathFilter("/if:interfaces"));
    EXPECT_EQ(plain.select(created("a", ""), context(), nullptr).kind, Kind::Whole);
    const auto keyed = selection(xpathFilter("/if:interfaces/if:interface[if:name='b']/if:enabled"));
    EXPECT_EQ(
        keyed.select(leafChange(ds::ChangeOp::Update, "a", "enabled", "true", "false"), context(), nullptr)
            .kind,
        Kind::None);
    EXPECT_NE(
        keyed.select(leafChange(ds::ChangeOp::Update, "b", "enabled", "true", "false"), context(), nullptr)
            .kind,
        Kind::None);
    const auto part = keyed.select(created("b", "<enabled>false</enabled><description>d</description>"),
                                   context(), nullptr);
    ASSERT_EQ(part.kind, Kind::Cut);
    const std::string value = printTree(part.node, LYD_XML, LYD_PRINT_SHRINK);
    EXPECT_NE(value.find("<enabled>false</enabled>"), std::string::npos) << value;
    EXPECT_EQ(value.find("description"), std::string::npos) << value;
}
