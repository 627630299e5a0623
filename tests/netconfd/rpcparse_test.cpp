// The rpc-errors ncstored gives for <rpc> messages libnetconf2 2.0.24 would answer with
// operation-failed: real messages parsed through the server's context.
#include "models.hpp"
#include "rpcparse.hpp"

#include <gtest/gtest.h>

#include <iostream>

using namespace ncstore::netconfd;

namespace {

constexpr const char* kNc = "urn:ietf:params:xml:ns:netconf:base:1.0";

const ly_ctx* serverContext() {
    static const ncstore::Context ctx = [] {
        ModelOptions o;
        o.ietfDir = systemIetfDir();
        o.bundledDir = bundledModelsDir();
        o.defaultModels = true;
        return buildContext(o);
    }();
    return ctx.get();
}

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
    if (p.error) {
        std::cout << "  " << p.error->tag << " path=" << p.error->path
                  << " bad-element=" << p.error->badElement << " msg=" << p.error->what() << "\n";
    }
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
    EXPECT_EQ(p.error->badNamespace, "urn:example:nope");
    EXPECT_FALSE(p.error->badElement.empty());
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
    EXPECT_TRUE(p.error->tag == "bad-attribute" || p.error->tag == "invalid-value") << p.error->tag;
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
    auto p = parse(rpc("<get-schema xmlns=\"urn:ietf:params:xml:ns:yang:ietf-netconf-monitoring\">"
                       "<identifier>ietf-interfaces</identifier><format>yang</format></get-schema>"));
    EXPECT_FALSE(p.error);
}
