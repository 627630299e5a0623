#include "errors.hpp"

#include <gtest/gtest.h>

using namespace ncstore::netconfd;
namespace ds = ncstore::ds;

TEST(Errors, DatastoreTagsMapOneToOne) {
    const ds::Error e(ds::ErrorTag::DataExists, "exists",
                      "/ietf-interfaces:interfaces/interface[name='a/b']");
    const auto r = fromDatastore(e);
    EXPECT_EQ(r.tag, ErrorTag::DataExists);
    EXPECT_EQ(r.type, ErrorType::Application);
    EXPECT_EQ(r.path, "/ietf-interfaces:interfaces/interface[name='a/b']");
    EXPECT_STREQ(r.what(), "exists");

    const auto unknown = fromDatastore(ds::Error(ds::ErrorTag::UnknownElement, "x", "/m:a/m:b[k='/x']/c"));
    EXPECT_EQ(unknown.tag, ErrorTag::UnknownElement);
    EXPECT_EQ(unknown.badElement, "c");

    const auto must =
        fromDatastore(ds::Error(ds::ErrorTag::OperationFailed, "must", "/m:a", "must-violation"));
    EXPECT_EQ(must.tag, ErrorTag::OperationFailed);
    EXPECT_EQ(must.appTag, "must-violation");

    for (auto tag :
         {ds::ErrorTag::InvalidValue, ds::ErrorTag::MissingElement, ds::ErrorTag::BadElement,
          ds::ErrorTag::UnknownNamespace, ds::ErrorTag::MissingAttribute, ds::ErrorTag::BadAttribute,
          ds::ErrorTag::DataMissing, ds::ErrorTag::OperationNotSupported, ds::ErrorTag::InUse,
          ds::ErrorTag::ResourceDenied, ds::ErrorTag::AccessDenied}) {
        EXPECT_STREQ(toString(fromDatastore(ds::Error(tag, "m")).tag), ds::toString(tag));
    }
}

namespace {
RpcError fromMessage(const char* msg, const char* path, LY_VECODE code = LYVE_DATA) {
    ly_err_item item{};
    item.level = LY_LLERR;
    item.no = LY_EVALID;
    item.vecode = code;
    item.msg = const_cast<char*>(msg);
    item.path = const_cast<char*>(path);
    return fromLibyangItem(item);
}
} // namespace

TEST(Errors, LibyangParseErrors) {
    auto e = fromMessage("Node \"bogus\" not found as a child of \"interface\" node.",
                         "Data location \"/ietf-interfaces:interfaces/interface[name='e2']\", line number 5.",
                         LYVE_REFERENCE);
    EXPECT_EQ(e.tag, ErrorTag::UnknownElement);
    EXPECT_EQ(e.badElement, "bogus");
    EXPECT_EQ(e.path, "/ietf-interfaces:interfaces/interface[name='e2']");

    e = fromMessage("No module with namespace \"urn:nothing\" in the context.", "Line number 1.",
                    LYVE_REFERENCE);
    EXPECT_EQ(e.tag, ErrorTag::UnknownNamespace);
    EXPECT_EQ(e.badNamespace, "urn:nothing");
    EXPECT_EQ(e.path, "");

    e = fromMessage(
        "Invalid boolean value \"maybe\".",
        "Data location \"/ietf-interfaces:interfaces/interface[name='e2']/enabled\", line number 5.");
    EXPECT_EQ(e.tag, ErrorTag::InvalidValue);
    EXPECT_EQ(e.badElement, "enabled");
    EXPECT_EQ(e.path, "/ietf-interfaces:interfaces/interface[name='e2']/enabled");

    e = fromMessage("List instance is missing its key \"name\".",
                    "Data location \"/ietf-interfaces:interfaces/interface\", line number 1.");
    EXPECT_EQ(e.tag, ErrorTag::MissingElement);
    EXPECT_EQ(e.badElement, "name");
}

TEST(Errors, DataPathOfLocation) {
    EXPECT_EQ(dataPathOf("Data location \"/a:b/c\", line number 3."), "/a:b/c");
    EXPECT_EQ(dataPathOf("Schema location \"/a:b\"."), "/a:b");
    EXPECT_EQ(dataPathOf("Line number 1."), "");
    EXPECT_EQ(dataPathOf("/a:b"), "/a:b");
}

namespace {
std::string xmlOf(const RpcError& e, const ly_ctx* ctx = nullptr) {
    std::string out;
    appendRpcError(out, e, ctx);
    return out;
}
bool has(const std::string& xml, const std::string& part) {
    return xml.find(part) != std::string::npos;
}
} // namespace

TEST(Errors, RpcErrorXmlCarriesEverything) {
    {
        RpcError e(ErrorTag::LockDenied, ErrorType::Application, "held");
        e.sessionId = 7;
        const auto xml = xmlOf(e);
        EXPECT_TRUE(has(xml, "<error-type>protocol</error-type><error-tag>lock-denied</error-tag>"
                             "<error-severity>error</error-severity>"))
            << xml;
        EXPECT_TRUE(has(xml, "<error-message xml:lang=\"en\">held</error-message>")) << xml;
        EXPECT_TRUE(has(xml, "<error-info><session-id>7</session-id></error-info>")) << xml;
    }
    {
        ly_ctx* ctx = nullptr;
        ASSERT_EQ(ly_ctx_new(nullptr, 0, &ctx), LY_SUCCESS);
        RpcError e(ErrorTag::InvalidValue, ErrorType::Application, "bad <value> & more");
        e.path = "/ietf-yang-library:yang-library/x[name='a:b']";
        e.appTag = "must-violation";
        const auto xml = xmlOf(e, ctx);
        EXPECT_TRUE(has(xml, "<error-type>application</error-type><error-tag>invalid-value</error-tag>"))
            << xml;
        EXPECT_TRUE(has(xml, "<error-app-tag>must-violation</error-app-tag>")) << xml;
        // The module-name prefix of the path is declared where the path is.
        EXPECT_TRUE(
            has(xml, "<error-path xmlns:ietf-yang-library=\"urn:ietf:params:xml:ns:yang:ietf-yang-library\">"
                     "/ietf-yang-library:yang-library/x[name=&apos;a:b&apos;]</error-path>"))
            << xml;
        EXPECT_TRUE(has(xml, "bad &lt;value&gt; &amp; more")) << xml;
        ly_ctx_destroy(ctx);
    }
    {
        RpcError e(ErrorTag::UnknownElement, ErrorType::Protocol, "x");
        e.badElement = "bogus";
        EXPECT_TRUE(has(xmlOf(e), "<error-info><bad-element>bogus</bad-element></error-info>"));
    }
    {
        RpcError e(ErrorTag::MissingAttribute, ErrorType::Rpc, "x");
        e.badAttribute = "message-id";
        e.badElement = "rpc";
        EXPECT_TRUE(has(xmlOf(e), "<error-info><bad-attribute>message-id</bad-attribute>"
                                  "<bad-element>rpc</bad-element></error-info>"));
    }
    EXPECT_TRUE(has(xmlOf(RpcError::accessDenied("no", "/a")), "<error-type>application</error-type>"
                                                               "<error-tag>access-denied</error-tag>"));
}
