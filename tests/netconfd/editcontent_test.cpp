// edit-config content: what parses (including value-less leaves to delete) and which rpc-error
// every other mistake gets.
#include "editcontent.hpp"
#include "errors.hpp"

#include "server_context.hpp"

#include <gtest/gtest.h>

#include <cstring>

using namespace ncstore::netconfd;

namespace {

using test::serverContext;

std::string interfaces(const std::string& body, const std::string& attrs = "") {
    return "<interfaces xmlns=\"urn:ietf:params:xml:ns:yang:ietf-interfaces\" "
           "xmlns:nc=\"urn:ietf:params:xml:ns:netconf:base:1.0\"" +
           attrs + ">" + body + "</interfaces>";
}

RpcError errorOf(const std::string& text) {
    try {
        parseEditContent(serverContext(), text);
    } catch (const RpcError& e) {
        return e;
    }
    ADD_FAILURE() << "no error for " << text;
    return RpcError::operationFailed("no error");
}

const lyd_node* findChild(const lyd_node* parent, const char* name) {
    for (const lyd_node* c = lyd_child(parent); c; c = c->next) {
        const char* n = c->schema ? c->schema->name : reinterpret_cast<const lyd_node_opaq*>(c)->name.name;
        if (std::strcmp(n, name) == 0) {
            return c;
        }
    }
    return nullptr;
}

} // namespace

TEST(EditContent, PlainContentParsesStrictly) {
    const auto tree = parseEditContent(
        serverContext(), interfaces("<interface><name>e</name><enabled>false</enabled></interface>"));
    ASSERT_TRUE(tree);
    const lyd_node* entry = findChild(tree.get(), "interface");
    ASSERT_TRUE(entry);
    const lyd_node* enabled = findChild(entry, "enabled");
    ASSERT_TRUE(enabled);
    EXPECT_TRUE(enabled->schema);
}

TEST(EditContent, EmptyTextIsNoTree) {
    EXPECT_FALSE(parseEditContent(serverContext(), ""));
}

TEST(EditContent, ValuelessLeafToDeleteIsKeptOpaque) {
    for (const char* op : {"delete", "remove"}) {
        SCOPED_TRACE(op);
        const auto tree = parseEditContent(
            serverContext(), interfaces(std::string("<interface><name>e</name><enabled nc:operation=\"") +
                                        op + "\"/></interface>"));
        ASSERT_TRUE(tree);
        const lyd_node* enabled = findChild(findChild(tree.get(), "interface"), "enabled");
        ASSERT_TRUE(enabled);
        EXPECT_FALSE(enabled->schema); // opaque: the edit engine deletes it by name
    }
    // The operation inherited from the entry counts too.
    EXPECT_TRUE(parseEditContent(
        serverContext(),
        interfaces("<interface nc:operation=\"remove\"><name>e</name><enabled/></interface>")));
}

TEST(EditContent, ValuelessLeafToSetIsInvalidValue) {
    for (const char* op :
         {"", " nc:operation=\"merge\"", " nc:operation=\"create\"", " nc:operation=\"replace\""}) {
        SCOPED_TRACE(op);
        const auto e =
            errorOf(interfaces(std::string("<interface><name>e</name><enabled") + op + "/></interface>"));
        EXPECT_EQ(e.tag, ErrorTag::InvalidValue);
        EXPECT_NE(e.path.find("enabled"), std::string::npos) << e.path;
    }
    const auto e = errorOf(interfaces("<interface><name>e</name><enabled>maybe</enabled></interface>"));
    EXPECT_EQ(e.tag, ErrorTag::InvalidValue);
    EXPECT_NE(e.path.find("enabled"), std::string::npos) << e.path;
}

TEST(EditContent, MissingKeyIsMissingElement) {
    const auto e =
        errorOf(interfaces("<interface nc:operation=\"delete\"><description>d</description></interface>"));
    EXPECT_EQ(e.tag, ErrorTag::MissingElement);
    EXPECT_EQ(e.badElement, "name");
}

TEST(EditContent, UnknownElementAndNamespace) {
    auto e = errorOf(interfaces("<interface><name>e</name><bogus nc:operation=\"delete\"/></interface>"));
    EXPECT_EQ(e.tag, ErrorTag::UnknownElement);
    EXPECT_EQ(e.type, ErrorType::Protocol);
    EXPECT_EQ(e.badElement, "bogus");

    e = errorOf("<interfaces xmlns=\"urn:example:nope\"><interface><name>x</name></interface></interfaces>");
    EXPECT_EQ(e.tag, ErrorTag::UnknownNamespace);
    EXPECT_EQ(e.badNamespace, "urn:example:nope");
    EXPECT_EQ(e.badElement, "interfaces");
}
