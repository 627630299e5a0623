#include "errors.hpp"

#include <gtest/gtest.h>

#include <nc_server.h>

using namespace ncstore::netconfd;
namespace ds = ncstore::ds;

TEST(Errors, DatastoreTagsMapOneToOne) {
    const ds::Error e(ds::ErrorTag::DataExists, "exists",
                      "/ietf-interfaces:interfaces/interface[name='a/b']");
    const auto r = fromDatastore(e);
    EXPECT_EQ(r.tag, "data-exists");
    EXPECT_EQ(r.type, ErrorType::Application);
    EXPECT_EQ(r.path, "/ietf-interfaces:interfaces/interface[name='a/b']");
    EXPECT_STREQ(r.what(), "exists");

    const auto unknown = fromDatastore(ds::Error(ds::ErrorTag::UnknownElement, "x", "/m:a/m:b[k='/x']/c"));
    EXPECT_EQ(unknown.tag, "unknown-element");
    EXPECT_EQ(unknown.badElement, "c");

    const auto must =
        fromDatastore(ds::Error(ds::ErrorTag::OperationFailed, "must", "/m:a", "must-violation"));
    EXPECT_EQ(must.tag, "operation-failed");
    EXPECT_EQ(must.appTag, "must-violation");

    for (auto tag :
         {ds::ErrorTag::InvalidValue, ds::ErrorTag::MissingElement, ds::ErrorTag::BadElement,
          ds::ErrorTag::UnknownNamespace, ds::ErrorTag::MissingAttribute, ds::ErrorTag::BadAttribute,
          ds::ErrorTag::DataMissing, ds::ErrorTag::OperationNotSupported, ds::ErrorTag::InUse,
          ds::ErrorTag::ResourceDenied}) {
        EXPECT_EQ(fromDatastore(ds::Error(tag, "m")).tag, ds::toString(tag));
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
    EXPECT_EQ(e.tag, "unknown-element");
    EXPECT_EQ(e.badElement, "bogus");
    EXPECT_EQ(e.path, "/ietf-interfaces:interfaces/interface[name='e2']");

    e = fromMessage("No module with namespace \"urn:nothing\" in the context.", "Line number 1.",
                    LYVE_REFERENCE);
    EXPECT_EQ(e.tag, "unknown-namespace");
    EXPECT_EQ(e.badNamespace, "urn:nothing");
    EXPECT_EQ(e.path, "");

    e = fromMessage(
        "Invalid boolean value \"maybe\".",
        "Data location \"/ietf-interfaces:interfaces/interface[name='e2']/enabled\", line number 5.");
    EXPECT_EQ(e.tag, "invalid-value");
    EXPECT_EQ(e.badElement, "enabled");
    EXPECT_EQ(e.path, "/ietf-interfaces:interfaces/interface[name='e2']/enabled");

    e = fromMessage("List instance is missing its key \"name\".",
                    "Data location \"/ietf-interfaces:interfaces/interface\", line number 1.");
    EXPECT_EQ(e.tag, "missing-element");
    EXPECT_EQ(e.badElement, "name");
}

TEST(Errors, DataPathOfLocation) {
    EXPECT_EQ(dataPathOf("Data location \"/a:b/c\", line number 3."), "/a:b/c");
    EXPECT_EQ(dataPathOf("Schema location \"/a:b\"."), "/a:b");
    EXPECT_EQ(dataPathOf("Line number 1."), "");
    EXPECT_EQ(dataPathOf("/a:b"), "/a:b");
}

TEST(Errors, NcErrTreeCarriesEverything) {
    ly_ctx* ctx = nullptr;
    ASSERT_EQ(ly_ctx_new(nullptr, 0, &ctx), LY_SUCCESS);
    {
        RpcError e("lock-denied", ErrorType::Protocol, "held");
        e.sessionId = 7;
        lyd_node* err = toNcErr(ctx, e);
        ASSERT_NE(err, nullptr);
        EXPECT_EQ(nc_err_get_tag(err), NC_ERR_LOCK_DENIED);
        EXPECT_STREQ(nc_err_get_msg(err), "held");
        lyd_free_tree(err);
    }
    {
        RpcError e("invalid-value", ErrorType::Application, "bad");
        e.path = "/a:b";
        e.appTag = "must-violation";
        lyd_node* err = toNcErr(ctx, e);
        ASSERT_NE(err, nullptr);
        EXPECT_EQ(nc_err_get_tag(err), NC_ERR_INVALID_VALUE);
        EXPECT_EQ(nc_err_get_type(err), NC_ERR_TYPE_APP);
        EXPECT_STREQ(nc_err_get_path(err), "/a:b");
        EXPECT_STREQ(nc_err_get_app_tag(err), "must-violation");
        lyd_free_tree(err);
    }
    {
        RpcError e("unknown-element", ErrorType::Protocol, "x");
        e.badElement = "bogus";
        lyd_node* err = toNcErr(ctx, e);
        ASSERT_NE(err, nullptr);
        EXPECT_EQ(nc_err_get_tag(err), NC_ERR_UNKNOWN_ELEM);
        EXPECT_EQ(nc_err_get_type(err), NC_ERR_TYPE_PROT);
        lyd_free_tree(err);
    }
    {
        lyd_node* err = toNcErr(ctx, RpcError("no-such-tag", ErrorType::Application, "x"));
        ASSERT_NE(err, nullptr);
        EXPECT_EQ(nc_err_get_tag(err), NC_ERR_OP_FAILED);
        lyd_free_tree(err);
    }
    ly_ctx_destroy(ctx);
}
