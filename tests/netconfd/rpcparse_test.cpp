// The rpc-errors ncstored gives for <rpc> messages libnetconf2 2.0.24 would answer with
// operation-failed: real messages parsed through the server's context.
#include "models.hpp"
#include "rpcparse.hpp"

#include "server_context.hpp"

#include <gtest/gtest.h>

using namespace ncstore::netconfd;

namespace {

constexpr const char* kNc = "urn:ietf:params:xml:ns:netconf:base:1.0";

using test::serverContext;

struct Parsed {
    LY_ERR rc = LY_SUCCESS;
    ncstore::Tree envelope;
    ncstore::Tree op;
    std::optional<RpcError> error;
};

Parsed parse(const std::string& message) {
    const ly_ctx* ctx = serverContext();
    ly_in* rawIn = nullptr;
    EXPECT_EQ(ly_in_new_memory(message.c_str(), &rawIn), LY_SUCCESS);
    std::unique_ptr<ly_in, void (*)(ly_in*)> in{rawIn, [](ly_in* i) { ly_in_free(i, 0); }};
    lyd_node* env = nullptr;
    lyd_node* op = nullptr;
    Parsed p;
    p.rc = parseRpcMessage(ctx, in.get(), &env, &op);
    p.envelope.reset(env);
    p.op.reset(op);
    p.error = takeRpcParseError(op);
    return p;
}

std::string rpc(const std::string& body, const std::string& attrs = " message-id=\"1\"") {
    return std::string("<rpc xmlns=\"") + kNc + "\"" + attrs + ">" + body + "</rpc>";
}

std::string edit(const std::string& params, const std::string& config = "") {
    return rpc("<edit-config><target><running/></target>" + params + "<config>" + config +
               "</config></edit-config>");
}

} // namespace

TEST(RpcParse, ValidRpcHasNoError) {
    auto p = parse(rpc("<get-config><source><running/></source></get-config>"));
    EXPECT_EQ(p.rc, LY_SUCCESS);
    ASSERT_TRUE(p.op);
    EXPECT_STREQ(p.op->schema->name, "get-config");
    EXPECT_FALSE(p.error);
}

TEST(RpcParse, MissingMessageIdIsMissingAttribute) {
    auto p = parse(rpc("<get-config><source><running/></source></get-config>", ""));
    EXPECT_EQ(p.rc, LY_SUCCESS);
    ASSERT_TRUE(p.error);
    EXPECT_EQ(p.error->tag, "missing-attribute");
    EXPECT_EQ(p.error->type, ErrorType::Rpc);
    EXPECT_EQ(p.error->badAttribute, "message-id");
    EXPECT_EQ(p.error->badElement, "rpc");
    // Asked once only.
    EXPECT_FALSE(takeRpcParseError(p.op.get()));
}

TEST(RpcParse, BadEnumerationsAreInvalidValue) {
    for (const char* param : {"default-operation", "test-option", "error-option"}) {
        SCOPED_TRACE(param);
        auto p = parse(edit(std::string("<") + param + ">frobnicate</" + param + ">"));
        EXPECT_EQ(p.rc, LY_SUCCESS);
        ASSERT_TRUE(p.error);
        EXPECT_EQ(p.error->tag, "invalid-value");
        EXPECT_EQ(p.error->type, ErrorType::Protocol);
        EXPECT_EQ(p.error->badElement, param);
        EXPECT_NE(std::string(p.error->what()).find("frobnicate"), std::string::npos);
    }
}

TEST(RpcParse, BadWithDefaultsModeIsInvalidValue) {
    auto p = parse(rpc("<get-config><source><running/></source><with-defaults "
                       "xmlns=\"urn:ietf:params:xml:ns:yang:ietf-netconf-with-defaults\">everything"
                       "</with-defaults></get-config>"));
    ASSERT_TRUE(p.error);
    EXPECT_EQ(p.error->tag, "invalid-value");
    EXPECT_EQ(p.error->badElement, "with-defaults");
}

TEST(RpcParse, UnknownDatastoreIsUnknownElement) {
    auto p = parse(rpc("<get-config><source><nowhere/></source></get-config>"));
    ASSERT_TRUE(p.error);
    EXPECT_EQ(p.error->tag, "unknown-element");
    EXPECT_EQ(p.error->type, ErrorType::Protocol);
    EXPECT_EQ(p.error->badElement, "nowhere");
}

TEST(RpcParse, UnknownParameterIsUnknownElement) {
    auto p = parse(rpc("<get-config><source><running/></source><bogus/></get-config>"));
    ASSERT_TRUE(p.error);
    EXPECT_EQ(p.error->tag, "unknown-element");
    EXPECT_EQ(p.error->badElement, "bogus");
}

TEST(RpcParse, UnknownOperationNamespace) {
    auto p = parse(rpc("<frobnicate xmlns=\"urn:example:nope\"/>"));
    ASSERT_TRUE(p.error);
    EXPECT_EQ(p.error->tag, "unknown-namespace");
    EXPECT_EQ(p.error->type, ErrorType::Protocol);
    EXPECT_EQ(p.error->badNamespace, "urn:example:nope");
    EXPECT_EQ(p.error->badElement, "frobnicate");
}

TEST(RpcParse, DeleteConfigOfRunningIsRefused) {
    auto p = parse(rpc("<delete-config><target><running/></target></delete-config>"));
    ASSERT_TRUE(p.error);
    EXPECT_EQ(p.error->tag, "operation-not-supported");
    EXPECT_EQ(p.error->badElement, "running");
}

TEST(RpcParse, BadOperationAttributeInConfig) {
    auto p = parse(edit("", "<interfaces xmlns=\"urn:ietf:params:xml:ns:yang:ietf-interfaces\">"
                            "<interface xmlns:nc=\"urn:ietf:params:xml:ns:netconf:base:1.0\" "
                            "nc:operation=\"frobnicate\"><name>e</name></interface></interfaces>"));
    ASSERT_TRUE(p.error);
    EXPECT_EQ(p.error->tag, "bad-attribute");
    EXPECT_EQ(p.error->badAttribute, "operation");
    EXPECT_EQ(p.error->badElement, "interface");
    EXPECT_EQ(p.error->type, ErrorType::Application);
}

TEST(RpcParse, UnknownNamespaceNamesItsElement) {
    auto p =
        parse(rpc("<get-config><source><running/></source><x:foo xmlns:x=\"urn:example:x\"/></get-config>"));
    ASSERT_TRUE(p.error);
    EXPECT_EQ(p.error->tag, "unknown-namespace");
    EXPECT_EQ(p.error->badNamespace, "urn:example:x");
    EXPECT_EQ(p.error->badElement, "foo");
}

TEST(RpcParse, ElementDeclaringNamespace) {
    EXPECT_EQ(elementDeclaring("<a xmlns=\"urn:a\"><p:b xmlns:p='urn:b' x=\"urn:c\"/></a>", "urn:b"), "b");
    EXPECT_EQ(elementDeclaring("<a xmlns=\"urn:a\"><b x=\"urn:c\"/></a>", "urn:c"), "");
    EXPECT_EQ(elementDeclaring("<a xmlns=\"urn:a\"/>", "urn:a"), "a");
}

TEST(RpcParse, TruncatedMessageIsMalformed) {
    auto p = parse(std::string("<rpc xmlns=\"") + kNc +
                   "\" message-id=\"7\"><get-config><source><running/></source></get-config>");
    ASSERT_TRUE(p.error);
    EXPECT_EQ(p.error->tag, "malformed-message");
    EXPECT_EQ(p.error->type, ErrorType::Rpc);
}

TEST(RpcParse, NotAnRpcIsLeftToLibnetconf2) {
    auto p = parse("this is not xml");
    EXPECT_NE(p.rc, LY_SUCCESS);
    EXPECT_FALSE(p.error);
}

TEST(RpcParse, UnprefixedSchemaFormatIsAccepted) {
    // ncclient: <get-schema xmlns="...monitoring"><format xmlns="...base:1.0">yang</format>
    auto p =
        parse(rpc("<m:get-schema xmlns:m=\"urn:ietf:params:xml:ns:yang:ietf-netconf-monitoring\">"
                  "<m:identifier>ietf-interfaces</m:identifier><m:format>yang</m:format></m:get-schema>"));
    EXPECT_FALSE(p.error);
    ASSERT_TRUE(p.op);
    EXPECT_STREQ(p.op->schema->name, "get-schema");
}
