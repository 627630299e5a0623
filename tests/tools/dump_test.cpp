// ncstore-load's cleaning of a device dump (tools/load/dump.hpp): what a lenient load keeps,
// drops and why, on a small model with every kind of defect real dumps have.
#include "load/dump.hpp"

#include <gtest/gtest.h>

#include <algorithm>

using namespace ncstore;

namespace {

constexpr const char* kModel = R"(module ld-test {
  yang-version 1.1;
  namespace "urn:ld-test";
  prefix lt;
  identity kind;
  identity fast { base kind; }
  container dev {
    list shelf { key name; leaf name { type string; } }
    list card {
      key name;
      leaf name { type string; }
      leaf shelf { type leafref { path "/dev/shelf/name"; } mandatory true; }
      leaf serial { type string; config false; }
    }
    list port {
      key name;
      leaf name { type string; }
      leaf card { type leafref { path "/dev/card/name"; } }
      leaf speed { when "../card"; type uint32; }
      leaf kind { type identityref { base kind; } }
      leaf peer { type instance-identifier; }
      leaf oper { type string; config false; }
    }
    container info {
      leaf node-id { type string; }
      leaf vendor { type string; config false; }
    }
  }
  container status { config false; leaf uptime { type uint32; } }
})";

// Every defect once: a dangling leafref that takes a mandatory leaf (and so its entry) along, a
// `when` that turns false when that entry goes, an instance-identifier to nothing, a value not
// of its type, an unknown element, a list entry without its key, a module the models lack; the
// identityref's prefix is declared on the wrapper only.
constexpr const char* kDump = R"(<?xml version="1.0"?>
<!-- a device's <get> -->
<data xmlns="urn:ietf:params:xml:ns:netconf:base:1.0" xmlns:lt="urn:ld-test">
  <dev xmlns="urn:ld-test">
    <shelf><name>S1</name></shelf>
    <card><name>C1</name><shelf>S1</shelf><serial>X1</serial></card>
    <card><name>C2</name><shelf>S9</shelf><serial>X2</serial></card>
    <card><serial>no-key</serial></card>
    <port><name>P1</name><card>C1</card><speed>100</speed><kind>lt:fast</kind><oper>up</oper></port>
    <port><name>P2</name><card>C2</card><speed>10</speed></port>
    <port><name>P3</name><peer>/lt:dev/lt:port[lt:name='P9']</peer></port>
    <port><name>P4</name><speed>fast</speed></port>
    <bogus>1</bogus>
    <info><node-id>N1</node-id><vendor>acme</vendor></info>
  </dev>
  <status xmlns="urn:ld-test"><uptime>42</uptime></status>
  <other xmlns="urn:not-in-the-models"><x>1</x></other>
</data>)";

class DumpTest : public ::testing::Test {
protected:
    void SetUp() override {
        ly_ctx* raw = nullptr;
        ASSERT_EQ(ly_ctx_new(nullptr, 0, &raw), LY_SUCCESS);
        ctx_.reset(raw);
        ASSERT_EQ(lys_parse_mem(ctx_.get(), kModel, LYS_IN_YANG, nullptr), LY_SUCCESS);
    }
    load::Result clean(const std::string& text, LYD_FORMAT format = LYD_XML) {
        return load::clean(ctx_.get(), load::unwrap(text, format), format, {"ld-test"});
    }
    std::string xml(const lyd_node* tree) {
        return print(tree, LYD_XML, LYD_PRINT_WITHSIBLINGS | LYD_PRINT_SHRINK);
    }
    Context ctx_;
};

const load::Dropped* droppedAt(const load::Result& r, const std::string& path) {
    const auto it =
        std::find_if(r.dropped.begin(), r.dropped.end(), [&](const auto& d) { return d.path == path; });
    return it == r.dropped.end() ? nullptr : &*it;
}

TEST_F(DumpTest, KeepsWhatIsValidAndSaysWhyTheRestWent) {
    const load::Result r = clean(kDump);
    auto reasonAt = [&](const std::string& path) {
        const load::Dropped* d = droppedAt(r, path);
        return d ? d->reason : "(kept)";
    };
    EXPECT_EQ(reasonAt("/ld-test:dev/card[name='C2']/shelf"), "dangling-leafref");
    EXPECT_EQ(reasonAt("/ld-test:dev/card[name='C2']"), "missing-mandatory");
    EXPECT_EQ(reasonAt("/ld-test:dev/port[name='P2']/card"), "dangling-leafref");
    EXPECT_EQ(reasonAt("/ld-test:dev/port[name='P2']/speed"), "when-false");
    EXPECT_EQ(reasonAt("/ld-test:dev/port[name='P3']/peer"), "missing-instance");
    EXPECT_EQ(reasonAt("/ld-test:dev/port[name='P4']/speed"), "invalid-value");
    EXPECT_EQ(reasonAt("/ld-test:dev/bogus"), "unknown-node");
    EXPECT_EQ(reasonAt("/ld-test:dev/card"), "invalid-key");
    const auto counts = r.countsByReason();
    EXPECT_EQ(counts.at("unknown-node"), 2u) << "bogus and the unknown module's element";
    EXPECT_EQ(r.dropped.size(), 9u);
    // The entry that went took its state along: 2 config nodes (name, card entry) + its serial.
    EXPECT_EQ(droppedAt(r, "/ld-test:dev/card[name='C2']")->nodes, 3u);

    const std::string config = xml(r.config.get());
    const std::string state = xml(r.state.get());
    EXPECT_NE(config.find("<card><name>C1</name><shelf>S1</shelf></card>"), std::string::npos) << config;
    EXPECT_NE(config.find("<kind xmlns:lt=\"urn:ld-test\">lt:fast</kind>"), std::string::npos) << config;
    EXPECT_NE(config.find("<port><name>P2</name></port>"), std::string::npos) << config;
    EXPECT_NE(config.find("<node-id>N1</node-id>"), std::string::npos) << config;
    EXPECT_EQ(config.find("C2"), std::string::npos) << config;
    EXPECT_EQ(config.find("serial"), std::string::npos) << "state is not configuration: " << config;
    EXPECT_NE(state.find("<card><name>C1</name><serial>X1</serial></card>"), std::string::npos) << state;
    EXPECT_NE(state.find("<vendor>acme</vendor>"), std::string::npos) << state;
    EXPECT_NE(state.find("<status xmlns=\"urn:ld-test\"><uptime>42</uptime></status>"), std::string::npos)
        << state;
    EXPECT_EQ(state.find("X2"), std::string::npos) << "the dropped card's state went with it: " << state;
    EXPECT_EQ(r.configNodes + r.stateNodes,
              load::countNodes(r.config.get()) + load::countNodes(r.state.get()));

    // What is kept is what a strict server accepts: parsed strictly, validated as running.
    EXPECT_NO_THROW(
        parseData(ctx_.get(), config, LYD_XML, LYD_PARSE_STRICT | LYD_PARSE_NO_STATE, LYD_VALIDATE_NO_STATE));
    EXPECT_NO_THROW(parseData(ctx_.get(), state, LYD_XML, LYD_PARSE_STRICT | LYD_PARSE_ONLY, 0));
}

TEST_F(DumpTest, AValidDumpLosesNothing) {
    const load::Result r = clean(R"(<dev xmlns="urn:ld-test"><shelf><name>S1</name></shelf>
        <card><name>C1</name><shelf>S1</shelf><serial>X1</serial></card></dev>)");
    EXPECT_TRUE(r.dropped.empty());
    EXPECT_EQ(r.nodesRead, 7u);
    EXPECT_EQ(r.configNodes, 6u);
    EXPECT_EQ(r.stateNodes, 4u) << "serial with its card entry, its key and dev";
}

TEST_F(DumpTest, UnwrapsRpcReplyConfigAndJsonData) {
    const std::string inner = R"(<dev xmlns="urn:ld-test"><info><node-id>N</node-id></info></dev>)";
    for (const std::string& doc :
         {R"(<rpc-reply xmlns="urn:ietf:params:xml:ns:netconf:base:1.0" message-id="1"><data>)" + inner +
              "</data></rpc-reply>",
          "<config>" + inner + "</config>", inner}) {
        const load::Result r = clean(doc);
        EXPECT_TRUE(r.dropped.empty()) << doc;
        EXPECT_EQ(xml(r.config.get()), inner) << doc;
    }
    const load::Result j = clean(
        R"({"ietf-restconf:data": {"ld-test:dev": {"info": {"node-id": "N", "vendor": "v"}}}})", LYD_JSON);
    EXPECT_TRUE(j.dropped.empty());
    EXPECT_EQ(xml(j.config.get()), inner);
    EXPECT_NE(xml(j.state.get()).find("<vendor>v</vendor>"), std::string::npos);
}

TEST_F(DumpTest, SetLeafChangesTheNodeIdAndRefusesWhatDoesNotValidate) {
    load::Result r = clean(kDump);
    load::setLeaf(r, ctx_.get(), "/ld-test:dev/info/node-id", "N7");
    EXPECT_NE(xml(r.config.get()).find("<node-id>N7</node-id>"), std::string::npos);
    load::setLeaf(r, ctx_.get(), "/ld-test:dev/info/vendor", "other");
    EXPECT_NE(xml(r.state.get()).find("<vendor>other</vendor>"), std::string::npos);
    EXPECT_THROW(load::setLeaf(r, ctx_.get(), "/ld-test:dev/card[name='C1']/shelf", "S9"), YangError);
    EXPECT_THROW(load::setLeaf(r, ctx_.get(), "/ld-test:dev/nothing", "x"), YangError);
}

TEST_F(DumpTest, MalformedDocumentsAreRefusedWithTheReason) {
    EXPECT_THROW(load::unwrap("<data><dev>", LYD_XML), std::invalid_argument);
    EXPECT_THROW(load::unwrap("<data><!-- open", LYD_XML), std::invalid_argument);
    EXPECT_THROW(load::unwrap(R"({"data": {"a": )", LYD_JSON), std::invalid_argument);
    EXPECT_THROW(clean("<dev xmlns=\"urn:ld-test\"><info></dev>"), YangError);
}

} // namespace
