// The rule path parser: what it resolves, and the reasons it gives for what it refuses.
#include "fixture.hpp"
#include "rulepath.hpp"

using nacmtest::ctx;
using ncstore::nacm::detail::parseRulePath;
using ncstore::nacm::detail::PathError;

namespace {

const lysc_node* schema(const char* path) {
    const lysc_node* s = lys_find_path(ctx(), nullptr, path, 0);
    EXPECT_NE(s, nullptr) << path;
    return s;
}

std::string refusal(const std::string& path) {
    try {
        parseRulePath(ctx(), path);
    } catch (const PathError& e) {
        return e.what();
    }
    ADD_FAILURE() << path << " was accepted";
    return {};
}

} // namespace

TEST(RulePath, SlashMeansEverything) {
    const auto p = parseRulePath(ctx(), "/");
    EXPECT_TRUE(p.all);
    EXPECT_EQ(p.target, nullptr);
    EXPECT_TRUE(parseRulePath(ctx(), "  /  ").all);
}

TEST(RulePath, ResolvesNodesAcrossModules) {
    const auto p = parseRulePath(ctx(), "/acme-itf:interfaces/interface/acme-system:owner");
    EXPECT_FALSE(p.all);
    EXPECT_EQ(p.target, schema("/acme-itf:interfaces/interface/acme-system:owner"));
    EXPECT_TRUE(p.preds.empty());
}

TEST(RulePath, ResolvesActionsNotificationsAndOperations) {
    EXPECT_EQ(parseRulePath(ctx(), "/acme-itf:interfaces/interface/reset").target->nodetype, LYS_ACTION);
    EXPECT_EQ(parseRulePath(ctx(), "/acme-itf:interfaces/interface/link-flap").target->nodetype, LYS_NOTIF);
    EXPECT_EQ(parseRulePath(ctx(), "/acme-system:send-feature").target->nodetype, LYS_RPC);
}

TEST(RulePath, KeyPredicatesAreCanonicalAndSorted) {
    const auto p = parseRulePath(ctx(), "/acme-system:system/vlan[id='010']");
    ASSERT_EQ(p.preds.size(), 1u);
    EXPECT_EQ(p.preds[0].node, schema("/acme-system:system/vlan"));
    ASSERT_EQ(p.preds[0].keys.size(), 1u);
    EXPECT_EQ(p.preds[0].keys[0].value, "10"); // uint16 canonical form

    const auto a = parseRulePath(ctx(), "/acme-system:system/route[vrf='red'][prefix='10/8']");
    const auto b = parseRulePath(ctx(), "/acme-system:system/route[prefix='10/8'][vrf='red']");
    ASSERT_EQ(a.preds.size(), 1u);
    ASSERT_EQ(a.preds[0].keys.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
        EXPECT_EQ(a.preds[0].keys[i].key, b.preds[0].keys[i].key);
        EXPECT_EQ(a.preds[0].keys[i].value, b.preds[0].keys[i].value);
    }
}

TEST(RulePath, LenientSyntax) {
    // Whitespace, double quotes and prefixed key names (as written in RFC 8341 A.4).
    const auto p =
        parseRulePath(ctx(), " /acme-itf:interfaces / acme-itf:interface[ acme-itf:name = \"dummy\" ] ");
    EXPECT_EQ(p.target, schema("/acme-itf:interfaces/interface"));
    ASSERT_EQ(p.preds.size(), 1u);
    EXPECT_EQ(p.preds[0].keys[0].value, "dummy");
    // A value holding the other quote character.
    EXPECT_EQ(parseRulePath(ctx(), "/acme-itf:interfaces/interface[name=\"it's\"]").preds[0].keys[0].value,
              "it's");
}

TEST(RulePath, LeafListValuePredicate) {
    const auto p = parseRulePath(ctx(), "/acme-system:system/dns-server[.='8.8.8.8']");
    ASSERT_EQ(p.preds.size(), 1u);
    EXPECT_EQ(p.preds[0].keys[0].key, p.target);
    EXPECT_EQ(p.preds[0].keys[0].value, "8.8.8.8");
}

TEST(RulePath, PartialKeysAreAllowed) {
    // RFC 8341: "predicates for keys are optional".
    const auto p = parseRulePath(ctx(), "/acme-system:system/route[vrf='red']/next-hop");
    ASSERT_EQ(p.preds.size(), 1u);
    EXPECT_EQ(p.preds[0].keys.size(), 1u);
}

TEST(RulePath, RefusalsSayWhy) {
    EXPECT_NE(refusal("").find("empty path"), std::string::npos);
    EXPECT_NE(refusal("acme-itf:interfaces").find("expected '/'"), std::string::npos);
    EXPECT_NE(refusal("/interfaces").find("must name its module"), std::string::npos);
    EXPECT_NE(refusal("/no-such-module:x").find("module 'no-such-module' is not implemented"),
              std::string::npos);
    EXPECT_NE(
        refusal("/acme-itf:interfaces/nope").find("no node 'nope' of module 'acme-itf' under interfaces"),
        std::string::npos);
    EXPECT_NE(refusal("/acme-itf:interfaces/interface[1]").find("positional predicates"), std::string::npos);
    EXPECT_NE(refusal("/acme-itf:interfaces/interface[mtu='5']").find("'mtu' is not a key of list interface"),
              std::string::npos);
    EXPECT_NE(refusal("/acme-itf:interfaces/interface[name=$USER]").find("variables"), std::string::npos);
    EXPECT_NE(refusal("/acme-system:system/vlan[id='abc']").find("'abc' is not a valid value of id"),
              std::string::npos);
    EXPECT_NE(refusal("/acme-system:system[name='x']").find("not a list"), std::string::npos);
    EXPECT_NE(refusal("/acme-system:system/hostname[.='x']").find("not a leaf-list"), std::string::npos);
    EXPECT_NE(refusal("/acme-system:system/route[vrf='a'][vrf='b']").find("predicated twice"),
              std::string::npos);
    EXPECT_NE(refusal("/acme-itf:interfaces/interface[name='x").find("unterminated"), std::string::npos);
    EXPECT_NE(refusal("/acme-itf:interfaces//interface").find("expected a node name"), std::string::npos);
    EXPECT_NE(refusal("/acme-itf:interfaces/interface[acme-system:name='x']").find("is in module 'acme-itf'"),
              std::string::npos);
}
