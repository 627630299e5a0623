// The capability exchange: what the server announces and which client hellos it accepts.
#include "hello.hpp"

#include "server_context.hpp"

#include <gtest/gtest.h>

#include <algorithm>

using namespace ncstore::netconfd;
using test::serverContext;

namespace {

bool contains(const std::vector<std::string>& caps, const std::string& prefix) {
    return std::any_of(caps.begin(), caps.end(),
                       [&](const std::string& c) { return c.rfind(prefix, 0) == 0; });
}

std::string hello(const std::string& body) {
    return std::string("<hello xmlns=\"") + kNetconfNs + "\">" + body + "</hello>";
}

std::string caps(std::initializer_list<const char*> list) {
    std::string out = "<capabilities>";
    for (const char* c : list) {
        out += std::string("<capability>") + c + "</capability>";
    }
    return out + "</capabilities>";
}

} // namespace

TEST(Hello, ServerCapabilitiesFollowTheContext) {
    const auto c = serverCapabilities(serverContext());
    EXPECT_TRUE(contains(c, kBase10));
    EXPECT_TRUE(contains(c, kBase11));
    EXPECT_TRUE(contains(c, "urn:ietf:params:netconf:capability:candidate:1.0"));
    EXPECT_TRUE(contains(c, "urn:ietf:params:netconf:capability:with-defaults:1.0?basic-mode=explicit"));
    EXPECT_TRUE(
        contains(c, "urn:ietf:params:netconf:capability:yang-library:1.1?revision=2019-01-04&content-id="));
    EXPECT_TRUE(contains(
        c, "urn:ietf:params:xml:ns:yang:ietf-interfaces?module=ietf-interfaces&revision=2014-05-08"));
    EXPECT_TRUE(contains(c, "urn:ietf:params:netconf:capability:confirmed-commit:1.1"));
    // Not implemented, so not announced.
    EXPECT_FALSE(contains(c, "urn:ietf:params:netconf:capability:url"));
}

TEST(Hello, ServerHelloEscapesCapabilities) {
    const std::string h = serverHello({"urn:x?a=1&b=2"}, 7);
    EXPECT_NE(h.find("<capability>urn:x?a=1&amp;b=2</capability>"), std::string::npos);
    EXPECT_NE(h.find("<session-id>7</session-id>"), std::string::npos);
}

TEST(Hello, ClientBaseVersionDecidesTheFraming) {
    EXPECT_TRUE(parseClientHello(serverContext(), hello(caps({kBase10, kBase11}))).base11);
    EXPECT_FALSE(parseClientHello(serverContext(), hello(caps({kBase10}))).base11);
    // Prefixes, comments, an XML declaration and whitespace around the URI are fine.
    const auto h =
        parseClientHello(serverContext(), std::string("<?xml version=\"1.0\"?><nc:hello xmlns:nc=\"") +
                                              kNetconfNs + "\"><!-- x --><nc:capabilities><nc:capability> " +
                                              kBase11 + "\n</nc:capability></nc:capabilities></nc:hello>");
    EXPECT_TRUE(h.base11);
}

TEST(Hello, BadClientHellosAreRefused) {
    const std::string docType = "<!DOCTYPE h [<!ENTITY x \"y\">]>";
    for (const std::string& bad : {
             std::string("not xml"),
             hello(caps({"urn:example:other"})),                    // no base capability
             hello(caps({kBase11}) + "<session-id>4</session-id>"), // RFC 6241 8.1
             hello(""),                                             // no capabilities
             std::string("<hello>") + caps({kBase11}) + "</hello>", // no namespace
             std::string("<rpc xmlns=\"") + kNetconfNs + "\" message-id=\"1\"><get/></rpc>", // no hello
             docType + hello(caps({kBase11})),                                               // DTD
             hello(caps({kBase11})) + hello(caps({kBase11})),                                // two roots
             hello("<capabilities><capability>&xxe;</capability></capabilities>"),
             hello("<capabilities><capability>\xff\xfe</capability></capabilities>"),
         }) {
        SCOPED_TRACE(bad);
        EXPECT_THROW(parseClientHello(serverContext(), bad), HelloError);
    }
}
