// Notification content: RFC 6470 events and their instance-identifiers, RFC 5277 envelopes.
#include "events.hpp"

#include "ncstore/models.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <ctime>
#include <vector>

using namespace ncstore;
using namespace ncstore::netconfd::notify;

namespace {

const ly_ctx* context() {
    static const Context ctx = buildContext(defaultModelOptions());
    return ctx.get();
}

std::string target(const std::string& path) {
    std::string out;
    appendInstanceIdentifier(out, "target", path, context());
    return out;
}

const std::string kIf = "xmlns:ietf-interfaces=\"urn:ietf:params:xml:ns:yang:ietf-interfaces\"";

} // namespace

TEST(Events, InstanceIdentifiersQualifyEveryNodeAndKey) {
    EXPECT_EQ(target("/ietf-interfaces:interfaces"),
              "<target " + kIf + ">/ietf-interfaces:interfaces</target>");
    EXPECT_EQ(
        target("/ietf-interfaces:interfaces/interface[name='eth0']/enabled"),
        "<target " + kIf +
            ">/ietf-interfaces:interfaces/ietf-interfaces:interface[ietf-interfaces:name=&apos;eth0&apos;]"
            "/ietf-interfaces:enabled</target>");
    // A value with quotes, brackets and slashes stays one value, escaped for XML.
    EXPECT_EQ(
        target("/ietf-interfaces:interfaces/interface[name=\"a'b]/c<d\"]"),
        "<target " + kIf +
            ">/ietf-interfaces:interfaces/ietf-interfaces:interface[ietf-interfaces:name=&quot;a&apos;b]/"
            "c&lt;d&quot;]</target>");
    // Leaf-list values and positions are kept as they are.
    EXPECT_EQ(target("/ietf-interfaces:interfaces/interface[name='e']/higher-layer-if[.='x']"),
              "<target " + kIf +
                  ">/ietf-interfaces:interfaces/ietf-interfaces:interface[ietf-interfaces:name=&apos;e&apos;]"
                  "/ietf-interfaces:higher-layer-if[.=&apos;x&apos;]</target>");
}

TEST(Events, ModulesChangingAlongThePathAreAllDeclared) {
    const std::string t =
        target("/ietf-interfaces:interfaces/interface[name='g']/ietf-netconf-monitoring:x/y");
    EXPECT_NE(t.find(kIf), std::string::npos) << t;
    EXPECT_NE(t.find("xmlns:ietf-netconf-monitoring=\"urn:ietf:params:xml:ns:yang:ietf-netconf-monitoring\""),
              std::string::npos)
        << t;
    EXPECT_NE(t.find("/ietf-netconf-monitoring:x/ietf-netconf-monitoring:y<"), std::string::npos) << t;
}

TEST(Events, BadPathsAreRefused) {
    for (const char* bad : {"", "interfaces", "/interfaces", "/ietf-interfaces:interfaces/interface[name='e",
                            "/ietf-interfaces:interfaces/interface[name=e]", "/nosuch:module", "/a:b//c"}) {
        SCOPED_TRACE(bad);
        EXPECT_THROW(target(bad), PathError);
    }
}

TEST(Events, ConfigChangeListsEveryEditWithItsOperation) {
    ds::ChangeSet cs;
    cs.datastore = ds::Datastore::Running;
    cs.session = 4;
    cs.user = "alice<&>";
    for (auto [op, path] :
         {std::pair{ds::ChangeOp::Create, "/ietf-interfaces:interfaces/interface[name='a']"},
          std::pair{ds::ChangeOp::Update, "/ietf-interfaces:interfaces/interface[name='b']/description"},
          std::pair{ds::ChangeOp::Replace, "/ietf-interfaces:interfaces/interface[name='c']"},
          std::pair{ds::ChangeOp::Delete, "/ietf-interfaces:interfaces/interface[name='d']"},
          std::pair{ds::ChangeOp::Move, "/ietf-interfaces:interfaces/interface[name='e']"}}) {
        ds::Change c;
        c.op = op;
        c.path = path;
        cs.changes.push_back(std::move(c));
    }
    const std::string xml = configChange(cs, {4, "alice<&>", "192.0.2.7"}, context());
    EXPECT_EQ(
        xml.rfind("<netconf-config-change xmlns=\"urn:ietf:params:xml:ns:yang:ietf-netconf-notifications\">"
                  "<changed-by><username>alice&lt;&amp;&gt;</username><session-id>4</session-id>"
                  "<source-host>192.0.2.7</source-host></changed-by><datastore>running</datastore>",
                  0),
        0u)
        << xml;
    std::vector<std::string> ops;
    for (auto at = xml.find("<operation>"); at != std::string::npos; at = xml.find("<operation>", at + 1)) {
        ops.push_back(xml.substr(at + 11, xml.find('<', at + 11) - at - 11));
    }
    EXPECT_EQ(ops, (std::vector<std::string>{"create", "merge", "replace", "delete", "merge"}));
    // The server itself, and a host that is no address.
    const std::string byServer = configChange(cs, {0, "", ""}, context());
    EXPECT_NE(byServer.find("<changed-by><server/></changed-by>"), std::string::npos);
    EXPECT_EQ(configChange(cs, {4, "u", "?"}, context()).find("source-host"), std::string::npos);
    // The event parses as the RFC 6470 notification it claims to be.
    ly_in* in = nullptr;
    ASSERT_EQ(ly_in_new_memory(xml.c_str(), &in), LY_SUCCESS);
    lyd_node* tree = nullptr;
    EXPECT_EQ(lyd_parse_op(context(), nullptr, in, LYD_XML, LYD_TYPE_NOTIF_YANG, &tree, nullptr), LY_SUCCESS)
        << ly_errmsg(context());
    ly_in_free(in, 0);
    lyd_free_all(tree);
}

TEST(Events, SessionEventsCarryWhoAndWhy) {
    EXPECT_EQ(
        sessionEnd({5, "bob", "::1"}, "killed", 3),
        "<netconf-session-end xmlns=\"urn:ietf:params:xml:ns:yang:ietf-netconf-notifications\">"
        "<username>bob</username><session-id>5</session-id><source-host>::1</source-host>"
        "<killed-by>3</killed-by><termination-reason>killed</termination-reason></netconf-session-end>");
    EXPECT_EQ(sessionEnd({5, "bob", "::1"}, "closed", 0).find("killed-by"), std::string::npos);
    EXPECT_NE(sessionStart({5, "bob", "127.0.0.1"}).find("<session-id>5</session-id>"), std::string::npos);
}

TEST(Events, DateAndTimeWritesWhatGmtimeSays) {
    // Before 1970, leap days, the last microsecond of a day and of a year, the clock's ends.
    using std::chrono::microseconds;
    const long long day = 86400LL * 1000000;
    std::vector<long long> us = {0,
                                 -1,
                                 -day,
                                 951782400LL * 1000000 - 1,
                                 951782400LL * 1000000,
                                 4102444800LL * 1000000 - 1,
                                 1764577200123456};
    for (long long x = -9000000000000000LL; x < 9000000000000000LL; x += 123456789012345LL) {
        us.push_back(x);
    }
    for (const long long u : us) {
        SCOPED_TRACE(u);
        const auto t = std::chrono::system_clock::time_point(microseconds(u));
        const long long secs = u >= 0 ? u / 1000000 : -((-u + 999999) / 1000000);
        const std::time_t tt = static_cast<std::time_t>(secs);
        std::tm tm{};
        ASSERT_TRUE(gmtime_r(&tt, &tm));
        char want[48];
        std::snprintf(want, sizeof want, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm.tm_year + 1900,
                      tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, u - secs * 1000000);
        EXPECT_EQ(dateAndTime(t), want);
    }
}

TEST(Events, DateAndTimeRoundTrips) {
    const auto t = std::chrono::system_clock::time_point(std::chrono::microseconds(1764577200123456));
    const std::string text = dateAndTime(t);
    EXPECT_EQ(text, "2025-12-01T08:20:00.123456Z");
    EXPECT_EQ(parseDateAndTime(text), t);
    EXPECT_EQ(parseDateAndTime("2025-12-01T09:20:00.123456+01:00"), t);
    EXPECT_EQ(parseDateAndTime("2025-12-01T08:20:00Z"),
              std::chrono::system_clock::time_point(std::chrono::seconds(1764577200)));
    EXPECT_EQ(parseDateAndTime("2999-01-01T00:00:00Z"), std::chrono::system_clock::time_point::max());
    for (const char* bad : {"", "2025-12-01", "2025-12-01T08:20:00", "2025-13-01T08:20:00Z",
                            "2025-12-01T08:20:00.Z", "2025-12-01T08:20:00Zjunk", "2025-12-01 08:20:00Z"}) {
        SCOPED_TRACE(bad);
        EXPECT_FALSE(parseDateAndTime(bad));
    }
}

TEST(Events, NotificationEnvelope) {
    const auto t = std::chrono::system_clock::time_point(std::chrono::seconds(1764577200));
    EXPECT_EQ(notificationMessage(t, "<x/>"),
              "<notification xmlns=\"urn:ietf:params:xml:ns:netconf:notification:1.0\">"
              "<eventTime>2025-12-01T08:20:00.000000Z</eventTime><x/></notification>");
}

TEST(Events, EventTypeIsTheTopElementsNamespaceAndName) {
    const std::string content = sessionStart({5, "bob", "::1"});
    const auto start = eventType(content); // views into content
    ASSERT_TRUE(start);
    EXPECT_EQ(start->ns, kBaseNotificationsNs);
    EXPECT_EQ(start->name, "netconf-session-start");
    const auto prefixed = eventType("<p:e xmlns=\"urn:other\" xmlns:p='urn:p'><a/></p:e>");
    ASSERT_TRUE(prefixed);
    EXPECT_EQ(prefixed->ns, "urn:p");
    EXPECT_EQ(prefixed->name, "e");
    EXPECT_EQ(eventType(" <e xmlnsx=\"urn:no\" xmlns=\"urn:yes\"/>")->ns, "urn:yes");
    for (const char* bad : {"", "text", "<e>", "<e xmlns=\"urn:x>", "<p:e xmlns=\"urn:x\"/>",
                            "< xmlns=\"a\"/>", "<e xmlns=", "<e xmlns"}) {
        SCOPED_TRACE(bad);
        EXPECT_FALSE(eventType(bad));
    }
}
