#include "NcClient.hpp"

#include <gtest/gtest.h>

using ncstore::client::stripConfigWrapper;
using ncstore::client::stripWrapper;

TEST(StripWrapper, KeepsPrefixesTheConfigElementDeclared) {
    const std::string in =
        "<?xml version=\"1.0\"?>\n<config xmlns=\"urn:ietf:params:xml:ns:netconf:base:1.0\" "
        "xmlns:nc=\"urn:ietf:params:xml:ns:netconf:base:1.0\"><a xmlns=\"urn:a\"><b nc:operation=\"delete\">"
        "<c/></b></a><d xmlns=\"urn:d\" xmlns:nc=\"urn:x\"/></config>\n";
    EXPECT_EQ(stripConfigWrapper(in),
              "<a xmlns:nc=\"urn:ietf:params:xml:ns:netconf:base:1.0\" xmlns=\"urn:a\">"
              "<b nc:operation=\"delete\"><c/></b></a><d xmlns=\"urn:d\" xmlns:nc=\"urn:x\"/>");
}

TEST(StripWrapper, LeavesUnwrappedContentAlone) {
    EXPECT_EQ(stripConfigWrapper("  <a xmlns=\"urn:a\"/>"), "<a xmlns=\"urn:a\"/>");
    EXPECT_EQ(stripConfigWrapper("<nc:config xmlns:nc=\"urn:ietf:params:xml:ns:netconf:base:1.0\"/>"), "");
}

TEST(StripWrapper, StripsFilter) {
    EXPECT_EQ(
        stripWrapper(
            "<filter xmlns=\"urn:ietf:params:xml:ns:netconf:base:1.0\" type=\"subtree\"><i xmlns=\"urn:i\"/>"
            "<!-- x > y --></filter>",
            "filter"),
        "<i xmlns=\"urn:i\"/><!-- x > y -->");
}
