// The rpc-errors ncstored gives for <rpc> messages that do not parse (RFC 6241 Appendix A tags):
// real messages parsed through the server's context.
#include "editcontent.hpp"
#include "rpcparse.hpp"

#include "server_context.hpp"

#include <gtest/gtest.h>

#include <cstring>

using namespace ncstore::netconfd;

namespace {

constexpr const char* kNc = "urn:ietf:params:xml:ns:netconf:base:1.0";

using test::serverContext;

struct Parsed {
    ncstore::Tree envelope;
    ncstore::Tree op;
    std::optional<RpcError> error;
    const lyd_node* config = nullptr; ///< the operation's inline <config> anyxml
    std::optional<ParsedConfig> parsedConfig;
    ParsedRpc rest; ///< what parseRpc() left after the above were taken
};

const lyd_node* schemaChild(const lyd_node* parent, const char* name) {
    for (const lyd_node* c = lyd_child(parent); c; c = c->next) {
        if (c->schema && std::strcmp(c->schema->name, name) == 0) {
            return c;
        }
    }
    return nullptr;
}

Parsed parse(const std::string& message) {
    Parsed p;
    p.rest = parseRpc(serverContext(), message);
    p.envelope = std::move(p.rest.envelope);
    p.op = std::move(p.rest.op);
    p.error = p.rest.error;
    const lyd_node* op = p.op.get();
    p.config = schemaChild(op, "config") ? schemaChild(op, "config")
                                         : schemaChild(schemaChild(op, "source"), "config");
    p.parsedConfig = p.rest.takeConfig(p.config);
    return p;
}

/// The XML of a data forest, as the tests compare it.
std::string xmlOf(const lyd_node* tree) {
    return tree ? ncstore::print(tree, LYD_XML,
                                 LYD_PRINT_WITHSIBLINGS | LYD_PRINT_SHRINK | LYD_PRINT_KEEPEMPTYCONT)
                : std::string();
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
    ASSERT_TRUE(p.op);
    EXPECT_STREQ(p.op->schema->name, "get-config");
    EXPECT_FALSE(p.error);
}

TEST(RpcParse, TheConfigPlaceholdersNamespaceIsReservedForTheServer) {
    // Found by fuzz_rpc (tests/fuzz/crashes/fuzz_rpc/forged-config-placeholder-namespace): a
    // client's element in it passed for a <config> parsed apart.
    const std::string forged = "<interfaces xmlns=\"urn:ncstore:internal:config-parsed-separately\"/>";
    for (const std::string& message :
         {rpc("<get><filter type=\"subtree\">" + forged + "</filter></get>"), edit("", forged)}) {
        SCOPED_TRACE(message);
        auto p = parse(message);
        ASSERT_TRUE(p.error);
        EXPECT_EQ(p.error->tag, ErrorTag::UnknownNamespace);
        EXPECT_EQ(p.error->badNamespace, "urn:ncstore:internal:config-parsed-separately");
        EXPECT_FALSE(p.op);
        EXPECT_TRUE(p.envelope); // the reply repeats the message-id
    }
}

TEST(RpcParse, MissingMessageIdIsMissingAttribute) {
    auto p = parse(rpc("<get-config><source><running/></source></get-config>", ""));
    ASSERT_TRUE(p.error);
    EXPECT_EQ(p.error->tag, ErrorTag::MissingAttribute);
    EXPECT_EQ(p.error->type, ErrorType::Rpc);
    EXPECT_EQ(p.error->badAttribute, "message-id");
    EXPECT_EQ(p.error->badElement, "rpc");
}

TEST(RpcParse, BadEnumerationsAreInvalidValue) {
    for (const char* param : {"default-operation", "test-option", "error-option"}) {
        SCOPED_TRACE(param);
        auto p = parse(edit(std::string("<") + param + ">frobnicate</" + param + ">"));
        ASSERT_TRUE(p.error);
        EXPECT_EQ(p.error->tag, ErrorTag::InvalidValue);
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
    EXPECT_EQ(p.error->tag, ErrorTag::InvalidValue);
    EXPECT_EQ(p.error->badElement, "with-defaults");
}

TEST(RpcParse, UnknownDatastoreIsUnknownElement) {
    auto p = parse(rpc("<get-config><source><nowhere/></source></get-config>"));
    ASSERT_TRUE(p.error);
    EXPECT_EQ(p.error->tag, ErrorTag::UnknownElement);
    EXPECT_EQ(p.error->type, ErrorType::Protocol);
    EXPECT_EQ(p.error->badElement, "nowhere");
}

TEST(RpcParse, UnknownParameterIsUnknownElement) {
    auto p = parse(rpc("<get-config><source><running/></source><bogus/></get-config>"));
    ASSERT_TRUE(p.error);
    EXPECT_EQ(p.error->tag, ErrorTag::UnknownElement);
    EXPECT_EQ(p.error->badElement, "bogus");
}

TEST(RpcParse, UnknownOperationNamespace) {
    auto p = parse(rpc("<frobnicate xmlns=\"urn:example:nope\"/>"));
    ASSERT_TRUE(p.error);
    EXPECT_EQ(p.error->tag, ErrorTag::UnknownNamespace);
    EXPECT_EQ(p.error->type, ErrorType::Protocol);
    EXPECT_EQ(p.error->badNamespace, "urn:example:nope");
    EXPECT_EQ(p.error->badElement, "frobnicate");
}

TEST(RpcParse, DeleteConfigOfRunningIsRefused) {
    auto p = parse(rpc("<delete-config><target><running/></target></delete-config>"));
    ASSERT_TRUE(p.error);
    EXPECT_EQ(p.error->tag, ErrorTag::OperationNotSupported);
    EXPECT_EQ(p.error->badElement, "running");
}

TEST(RpcParse, BadOperationAttributeInConfig) {
    auto p = parse(edit("", "<interfaces xmlns=\"urn:ietf:params:xml:ns:yang:ietf-interfaces\">"
                            "<interface xmlns:nc=\"urn:ietf:params:xml:ns:netconf:base:1.0\" "
                            "nc:operation=\"frobnicate\"><name>e</name></interface></interfaces>"));
    ASSERT_TRUE(p.error);
    EXPECT_EQ(p.error->tag, ErrorTag::BadAttribute);
    EXPECT_EQ(p.error->badAttribute, "operation");
    EXPECT_EQ(p.error->badElement, "interface");
    EXPECT_EQ(p.error->type, ErrorType::Application);
}

TEST(RpcParse, UnknownNamespaceNamesItsElement) {
    auto p =
        parse(rpc("<get-config><source><running/></source><x:foo xmlns:x=\"urn:example:x\"/></get-config>"));
    ASSERT_TRUE(p.error);
    EXPECT_EQ(p.error->tag, ErrorTag::UnknownNamespace);
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
    EXPECT_EQ(p.error->tag, ErrorTag::MalformedMessage);
    EXPECT_EQ(p.error->type, ErrorType::Rpc);
}

TEST(RpcParse, NotAnRpcIsMalformedWithoutEnvelope) {
    for (const std::string& message :
         {std::string("this is not xml"), std::string("<hello xmlns=\"") + kNc + "\"/>",
          std::string("<rpc message-id=\"1\"><get/></rpc>"), std::string("")}) {
        SCOPED_TRACE(message);
        auto p = parse(message);
        ASSERT_TRUE(p.error);
        EXPECT_EQ(p.error->tag, ErrorTag::MalformedMessage);
        EXPECT_FALSE(p.envelope);
        EXPECT_FALSE(p.op);
    }
}

TEST(RpcParse, SiblingsWithoutNamespaceAreRefusedBeforeLibyangCrashesOnThem) {
    // Found by tests/fuzz/fuzz_filter: libyang 2.1.30 dies (NULL strcmp) parsing these.
    auto p = parse(rpc("<get><filter type=\"subtree\"><x xmlns=\"\"/><x xmlns=\"\"/></filter></get>"));
    ASSERT_TRUE(p.error);
    EXPECT_EQ(p.error->tag, ErrorTag::MalformedMessage);
    EXPECT_FALSE(p.op);
    auto q = parse(rpc("<edit-config><target><running/></target><config><d xmlns=\"\"><x/><x/></d></config>"
                       "</edit-config>"));
    ASSERT_TRUE(q.error);
    EXPECT_EQ(q.error->tag, ErrorTag::MalformedMessage);
    EXPECT_FALSE(q.op);
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

// ---- the inline <config> of edit-config / copy-config, parsed apart from the message

namespace {

constexpr const char* kIf = "urn:ietf:params:xml:ns:yang:ietf-interfaces";

std::string interfaces(const std::string& body, const std::string& attrs = "") {
    return std::string("<interfaces xmlns=\"") + kIf + "\"" + attrs + ">" + body + "</interfaces>";
}

/// What a parse of `content` alone gives, as a handler got it before.
std::string contentAlone(const std::string& content) {
    return xmlOf(parseEditContent(serverContext(), content).get());
}

} // namespace

TEST(RpcParseConfig, EditConfigContentIsParsedTypedWithTheMessage) {
    // ncclient's form: the nc prefix of nc:operation is declared on <nc:rpc> only.
    const std::string message = std::string("<nc:rpc xmlns:nc=\"") + kNc +
                                "\" message-id=\"1\"><nc:edit-config><nc:target><nc:running/></nc:target>"
                                "<nc:config>" +
                                interfaces("<interface nc:operation=\"delete\"><name>e</name></interface>") +
                                "</nc:config></nc:edit-config></nc:rpc>";
    auto p = parse(message);
    EXPECT_FALSE(p.error);
    ASSERT_TRUE(p.parsedConfig);
    const lyd_node* tree = p.parsedConfig->tree.get();
    ASSERT_TRUE(tree && tree->schema);
    const lyd_node* entry = lyd_child(tree);
    ASSERT_TRUE(entry && entry->schema);
    ASSERT_TRUE(entry->meta);
    EXPECT_STREQ(entry->meta->name, "operation");
    EXPECT_STREQ(lyd_get_meta_value(entry->meta), "delete");
    EXPECT_EQ(xmlOf(tree), contentAlone(std::string("<interfaces xmlns=\"") + kIf + "\" xmlns:nc=\"" + kNc +
                                        "\"><interface nc:operation=\"delete\"><name>e</name></interface>"
                                        "</interfaces>"));
    // The message's own <config> holds only the placeholder, and the content is taken once.
    EXPECT_TRUE(isParsedSeparately(p.config));
    EXPECT_FALSE(p.rest.takeConfig(p.config));
}

TEST(RpcParseConfig, ValuelessLeafToDeleteIsKeptOpaque) {
    const std::string content = interfaces(std::string("<interface xmlns:nc=\"") + kNc +
                                           "\"><name>e</name><enabled nc:operation=\"remove\"/></interface>");
    auto p = parse(edit("", content));
    EXPECT_FALSE(p.error);
    ASSERT_TRUE(p.parsedConfig);
    EXPECT_EQ(xmlOf(p.parsedConfig->tree.get()), contentAlone(content));
    const lyd_node* enabled = lyd_child(lyd_child(p.parsedConfig->tree.get()))->next;
    ASSERT_TRUE(enabled);
    EXPECT_FALSE(enabled->schema);
}

TEST(RpcParseConfig, CopyConfigSourceConfig) {
    const std::string content =
        interfaces("<interface><name>e</name><description>d</description></interface>");
    auto p = parse(rpc("<copy-config><target><candidate/></target><source><config>" + content +
                       "</config></source></copy-config>"));
    EXPECT_FALSE(p.error);
    ASSERT_TRUE(p.parsedConfig);
    EXPECT_EQ(xmlOf(p.parsedConfig->tree.get()), contentAlone(content));
    EXPECT_TRUE(isParsedSeparately(p.config));
}

TEST(RpcParseConfig, BadContentIsLeftInTheMessageForTheHandler) {
    // The handler parses it from the message and reports its error as it always did.
    auto p = parse(edit("", interfaces("<interface><name>e</name><enabled>maybe</enabled></interface>")));
    EXPECT_FALSE(p.error);
    EXPECT_FALSE(p.parsedConfig);
    ASSERT_TRUE(p.config);
    EXPECT_FALSE(isParsedSeparately(p.config));
    EXPECT_TRUE(reinterpret_cast<const lyd_node_any*>(p.config)->value.tree);
}

TEST(RpcParseConfig, ErrorsOutsideTheContentAreUnchanged) {
    const std::string content = interfaces("<interface><name>e</name></interface>");
    auto p =
        parse(rpc("<edit-config><target><nowhere/></target><config>" + content + "</config></edit-config>"));
    ASSERT_TRUE(p.error);
    EXPECT_EQ(p.error->tag, ErrorTag::UnknownElement);
    EXPECT_EQ(p.error->badElement, "nowhere");
    EXPECT_FALSE(p.parsedConfig);

    p = parse(
        rpc("<edit-config><target><running/></target><config>" + content + "</config></edit-config>", ""));
    ASSERT_TRUE(p.error);
    EXPECT_EQ(p.error->tag, ErrorTag::MissingAttribute);
    EXPECT_EQ(p.error->badAttribute, "message-id");
}

TEST(RpcParseConfig, EmptyConfigAndOtherOperationsAreParsedAsBefore) {
    auto p = parse(edit(""));
    EXPECT_FALSE(p.error);
    EXPECT_FALSE(p.parsedConfig);
    ASSERT_TRUE(p.config);
    EXPECT_FALSE(isParsedSeparately(p.config));

    // A <config> inside validate's source is the handler's to parse.
    p = parse(rpc("<validate><source><config>" + interfaces("") + "</config></source></validate>"));
    EXPECT_FALSE(p.error);
    EXPECT_FALSE(p.parsedConfig);
    EXPECT_FALSE(isParsedSeparately(p.config));
}

TEST(RpcParse, AnUndeclaredPrefixInsideConfigIsMalformedNotACrash) {
    // Found by fuzzing: libyang keeps the element with a null namespace and crashed printing it.
    for (const char* config :
         {"<innc:terfaces xmlns=\"urn:ietf:params:xml:ns:yang:ietf-interfaces\" "
          "nc:operation=\"frobnicate\"/>",
          "<interfaces xmlns=\"urn:ietf:params:xml:ns:yang:ietf-interfaces\" q:attr=\"v\"/>",
          "<interfaces xmlns=\"urn:ietf:params:xml:ns:yang:ietf-interfaces\"><z:interface/></interfaces>"}) {
        SCOPED_TRACE(config);
        auto p = parse(
            rpc(std::string("<edit-config><target><running/></target><config xmlns:nc=\"urn:ietf:params:"
                            "xml:ns:netconf:bare:1.0\">") +
                config + "</config></edit-config>"));
        ASSERT_TRUE(p.error);
        EXPECT_EQ(p.error->tag, ErrorTag::MalformedMessage);
        EXPECT_FALSE(p.op);
    }
}
