// Validation on the official Open ROADM 2.2.1 device model (shared data, see shared_data.hpp), whose leafrefs
// with predicates made every edit cost O(C^2) in libyang: leafrefs resolved by key lookups must accept and
// refuse exactly what libyang does, and service edits (a roadm-connection with its interfaces) must be
// validated locally yet refuse every broken reference.
#include "leafref.hpp"
#include "shared_data.hpp"
#include "temp_store.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <stdexcept>

using namespace ncstore;
using namespace ncstore::ds;

namespace {

constexpr const char* kDevice = "/org-openroadm-device:org-openroadm-device";
constexpr const char* kModels = "yang/openroadm/2.2.1";

Context openRoadmContext() {
    ly_ctx* raw = nullptr;
    if (ly_ctx_new(test::sharedPath(kModels).c_str(), LY_CTX_NO_YANGLIBRARY, &raw) != LY_SUCCESS) {
        throw std::runtime_error("ly_ctx_new failed");
    }
    Context ctx{raw};
    if (ly_ctx_set_searchdir(raw, NCSTORE_IETF_YANG_DIR) != LY_SUCCESS) {
        throw YangError("cannot add the ietf search dir", raw);
    }
    const char* features[] = {"*", nullptr};
    for (const char* name : {"ietf-netconf", "org-openroadm-device", "org-openroadm-interfaces"}) {
        if (!ly_ctx_load_module(raw, name, nullptr, features)) {
            throw YangError(std::string("cannot load ") + name, raw);
        }
    }
    return ctx;
}

/// The <config> content ncstore-gen writes for `args` (2 degrees, 2 SRGs, 4 connections).
std::string generated(const std::string& args) {
    const std::string cmd = std::string(NCSTORE_GENERATOR) + " roadm --version 2.2.1 -d 2 -s 2 -c 4 " + args;
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
    if (!pipe) {
        throw std::runtime_error("cannot run " + cmd);
    }
    std::string out;
    char buf[65536];
    for (std::size_t n; (n = fread(buf, 1, sizeof buf, pipe.get())) > 0;) {
        out.append(buf, n);
    }
    const auto open = out.find('>', out.find("<config"));
    const auto close = out.rfind("</config>");
    if (open == std::string::npos || close == std::string::npos) {
        throw std::runtime_error(cmd + " wrote no <config>: " + out.substr(0, 200));
    }
    // The nc: prefix is declared on <config>: declare it on the device instead.
    std::string content = out.substr(open + 1, close - open - 1);
    const std::string device = "<org-openroadm-device ";
    const auto at = content.find(device);
    if (at != std::string::npos) {
        content.insert(at + device.size(), "xmlns:nc=\"urn:ietf:params:xml:ns:netconf:base:1.0\" ");
    }
    return content;
}

std::string valueAt(const lyd_node* tree, const std::string& xpath) {
    ly_set* raw = nullptr;
    if (lyd_find_xpath(tree, xpath.c_str(), &raw) != LY_SUCCESS || !raw->count) {
        ly_set_free(raw, nullptr);
        throw std::runtime_error("nothing at " + xpath);
    }
    Set set{raw};
    return lyd_get_value(set->dnodes[0]);
}

struct Verdict {
    LY_ERR rc;
    std::string message;
    std::string path;
};

Verdict validate(const ly_ctx* ctx, const lyd_node* tree) {
    lyd_node* copy = nullptr;
    if (lyd_dup_siblings(tree, nullptr, LYD_DUP_RECURSIVE, &copy) != LY_SUCCESS) {
        throw YangError("cannot copy", ctx);
    }
    Tree owned{copy};
    lyd_node* raw = owned.release();
    ly_err_clean(const_cast<ly_ctx*>(ctx), nullptr);
    const LY_ERR rc = lyd_validate_all(&raw, ctx, LYD_VALIDATE_PRESENT | LYD_VALIDATE_NO_STATE, nullptr);
    owned.reset(raw);
    const ly_err_item* e = ly_err_last(ctx);
    return {rc, rc && e && e->msg ? e->msg : "", rc && e && e->path ? e->path : ""};
}

class OpenRoadmTest : public ::testing::Test {
protected:
    void SetUp() override {
        NCSTORE_REQUIRE_SHARED(kModels, "the official Open ROADM 2.2.1 models");
        ctx_ = openRoadmContext();
        base_ = generated("--scenario base");
        services_ = generated("--scenario B11-create");
    }

    std::unique_ptr<Store> open() {
        StoreOptions o;
        o.file = dir_.path() / "ncstore.db";
        return Store::open(ctx_.get(), o);
    }

    WriteTiming edit(Store& s, const std::string& xml) {
        Tree e = test::parseEdit(ctx_.get(), xml);
        return s.edit({}, Datastore::Running, e.get());
    }

    std::string dump(const Store& s) const { return test::dump(s, Datastore::Running, LYD_PRINT_WD_ALL_TAG); }

    std::string deviceXml(const std::string& inner) const {
        return "<org-openroadm-device xmlns=\"http://org/openroadm/device\" "
               "xmlns:nc=\"urn:ietf:params:xml:ns:netconf:base:1.0\" "
               "xmlns:if=\"http://org/openroadm/interfaces\">" +
               inner + "</org-openroadm-device>";
    }

    /// The edit is refused with data-missing / instance-required on `pathPart`, and nothing changes.
    void expectDangling(Store& s, const std::string& xml, const std::string& pathPart) {
        const std::string before = dump(s);
        try {
            edit(s, xml);
            ADD_FAILURE() << "accepted: " << xml;
        } catch (const Error& e) {
            EXPECT_EQ(e.tag(), ErrorTag::DataMissing) << e.what();
            EXPECT_EQ(e.appTag(), "instance-required") << e.what();
            EXPECT_NE(e.path().find(pathPart), std::string::npos) << e.path();
        }
        EXPECT_EQ(dump(s), before);
    }

    Context ctx_;
    test::TempDir dir_;
    std::string base_;
    std::string services_;
};

TEST_F(OpenRoadmTest, KeyLookupsAcceptAndRefuseExactlyWhatLibyangDoes) {
    Tree tree = parseData(ctx_.get(), deviceXml(""), LYD_XML, LYD_PARSE_ONLY, 0);
    {
        Tree b = test::parseEdit(ctx_.get(), base_);
        Tree c = test::parseEdit(ctx_.get(), services_);
        lyd_node* raw = tree.release();
        ASSERT_EQ(lyd_merge_siblings(&raw, b.get(), 0), LY_SUCCESS);
        ASSERT_EQ(lyd_merge_siblings(&raw, c.get(), 0), LY_SUCCESS);
        tree.reset(raw);
    }
    const std::string dev = kDevice;
    const std::string cpIf = dev + "/interface[supporting-circuit-pack-name='1/0'][supporting-port='L1']";
    struct Change {
        std::string xpath;
        std::string value;
        bool valid;
    };
    const std::vector<Change> changes = {
        {"", "", true},
        {dev + "/roadm-connections[1]/source/src-if", "no-such-interface", false},
        {cpIf + "/supporting-port", "PP1", false},     // a port of another circuit-pack
        {cpIf + "/supporting-port", "CTP-SRG1", true}, // a port of this one
        {cpIf + "/supporting-circuit-pack-name", "9/9", false},
        {cpIf + "/supporting-interface", "no-such-interface", false},
        {dev + "/circuit-packs[circuit-pack-name='1/0']/shelf", "7", false},
        {dev + "/degree[1]/circuit-packs[1]/circuit-pack-name", "3/0", true},
    };
    for (const Change& change : changes) {
        SCOPED_TRACE(change.xpath + " = " + change.value);
        lyd_node* copy = nullptr;
        ASSERT_EQ(lyd_dup_siblings(tree.get(), nullptr, LYD_DUP_RECURSIVE, &copy), LY_SUCCESS);
        Tree changed{copy};
        if (!change.xpath.empty()) {
            ly_set* raw = nullptr;
            ASSERT_EQ(lyd_find_xpath(changed.get(), change.xpath.c_str(), &raw), LY_SUCCESS);
            Set set{raw};
            ASSERT_GT(set->count, 0u);
            ASSERT_EQ(lyd_change_term(set->dnodes[0], change.value.c_str()), LY_SUCCESS);
        }
        const Verdict plain = validate(ctx_.get(), changed.get());
        ds::detail::LeafrefAccelerator accelerator(ctx_.get());
        const Verdict fast = validate(ctx_.get(), changed.get());
        const auto counters = accelerator.counters();
        EXPECT_EQ(plain.rc == LY_SUCCESS, change.valid) << plain.message;
        EXPECT_EQ(fast.rc, plain.rc);
        EXPECT_EQ(fast.message, plain.message);
        EXPECT_EQ(fast.path, plain.path);
        EXPECT_GT(counters.planned, 10u);
        if (change.valid) {
            EXPECT_GT(counters.hits, 50u); // every reference was answered by lookups
            EXPECT_EQ(counters.fallbacks, 0u);
        } else {
            EXPECT_GE(counters.fallbacks, 1u); // the refusal is libyang's
        }
    }
}

TEST_F(OpenRoadmTest, ServiceEditsAreValidatedLocallyAndPersist) {
    auto s = open();
    edit(*s, base_);
    const WriteTiming t = edit(*s, services_);
    EXPECT_FALSE(t.wholeTreeValidation);
    std::string after = dump(*s);
    EXPECT_NE(after.find("<connection-name>"), std::string::npos);
    s.reset();
    s = open();
    EXPECT_EQ(dump(*s), after);

    // Deleting one service (its connection and interfaces) needs no whole-tree validation either.
    Tree deleteEdit = test::parseEdit(ctx_.get(), generated("--scenario B11-delete --index 1"));
    const WriteTiming d = s->edit({}, Datastore::Running, deleteEdit.get());
    EXPECT_FALSE(d.wholeTreeValidation);
    after = dump(*s);
    s.reset();
    s = open();
    EXPECT_EQ(dump(*s), after);
}

TEST_F(OpenRoadmTest, LocallyValidatedEditsStillRefuseDanglingReferences) {
    auto s = open();
    edit(*s, base_);
    edit(*s, services_);
    std::string tree;
    s->read(Datastore::Running, [&](const lyd_node* t) { tree = print(t, LYD_XML, 0); });
    Tree current = parseData(ctx_.get(), tree, LYD_XML, LYD_PARSE_ONLY, 0);
    const std::string srcIf =
        valueAt(current.get(), std::string(kDevice) + "/roadm-connections[1]/source/src-if");
    const auto newInterface = [&](const std::string& name, const std::string& cp, const std::string& port) {
        return deviceXml("<interface nc:operation=\"create\"><name>" + name +
                         "</name><type>if:networkMediaChannelConnectionTerminationPoint</type>"
                         "<supporting-circuit-pack-name>" +
                         cp + "</supporting-circuit-pack-name><supporting-port>" + port +
                         "</supporting-port></interface>");
    };

    expectDangling(*s, newInterface("x1", "3/0", "NO-SUCH-PORT"), "supporting-port");
    expectDangling(*s, newInterface("x2", "1/0", "PP1"), "supporting-port"); // PP1 is on 3/0
    expectDangling(*s, newInterface("x3", "9/9", "L1"), "x3");
    expectDangling(
        *s,
        deviceXml("<roadm-connections nc:operation=\"create\"><connection-name>c-x</connection-name>"
                  "<source><src-if>no-such-interface</src-if></source>"
                  "<destination><dst-if>" +
                  srcIf + "</dst-if></destination></roadm-connections>"),
        "src-if");
    // Deleting what others reference: an interface a connection uses, a circuit-pack with ports in use.
    expectDangling(*s, deviceXml("<interface nc:operation=\"delete\"><name>" + srcIf + "</name></interface>"),
                   "-if");
    expectDangling(
        *s,
        deviceXml("<circuit-packs nc:operation=\"delete\"><circuit-pack-name>3/0</circuit-pack-name>"
                  "</circuit-packs>"),
        "circuit-pack-name");

    // A well-formed new interface is accepted, validated locally.
    const WriteTiming ok = edit(*s, newInterface("x4", "3/0", "PP1"));
    EXPECT_FALSE(ok.wholeTreeValidation);
}

TEST_F(OpenRoadmTest, CandidateServiceEditsAreCheckedAgainstTheCandidateAndCommitted) {
    auto s = open();
    edit(*s, base_);
    Tree services = test::parseEdit(ctx_.get(), services_);
    const WriteTiming t = s->edit({}, Datastore::Candidate, services.get());
    EXPECT_FALSE(t.wholeTreeValidation);
    // The references resolve in the candidate: an interface created there can be used there.
    Tree use = test::parseEdit(
        ctx_.get(),
        deviceXml("<interface nc:operation=\"create\"><name>c1</name>"
                  "<type>if:networkMediaChannelConnectionTerminationPoint</type>"
                  "<supporting-circuit-pack-name>3/0</supporting-circuit-pack-name>"
                  "<supporting-port>PP1</supporting-port></interface>"
                  "<roadm-connections nc:operation=\"create\"><connection-name>cx</connection-name>"
                  "<source><src-if>c1</src-if></source><destination><dst-if>c1</dst-if></destination>"
                  "</roadm-connections>"));
    s->edit({}, Datastore::Candidate, use.get());
    Tree dangling = test::parseEdit(
        ctx_.get(),
        deviceXml("<roadm-connections nc:operation=\"create\"><connection-name>cy</connection-name>"
                  "<source><src-if>not-in-candidate</src-if></source>"
                  "<destination><dst-if>c1</dst-if></destination></roadm-connections>"));
    try {
        s->edit({}, Datastore::Candidate, dangling.get());
        ADD_FAILURE() << "a connection to a missing interface was accepted in candidate";
    } catch (const Error& e) {
        EXPECT_EQ(e.tag(), ErrorTag::DataMissing) << e.what();
        EXPECT_NE(e.path().find("src-if"), std::string::npos) << e.path();
    }
    const std::string running = dump(*s);
    EXPECT_EQ(running.find("<connection-name>cx</connection-name>"), std::string::npos);
    s->commit({});
    const std::string committed = dump(*s);
    EXPECT_NE(committed.find("<connection-name>cx</connection-name>"), std::string::npos);
    EXPECT_EQ(committed.find("<connection-name>cy</connection-name>"), std::string::npos);
    s.reset();
    s = open();
    EXPECT_EQ(dump(*s), committed);
}

} // namespace
