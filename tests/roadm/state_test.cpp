// state.hpp and profile.hpp: the port trail, state that follows what carries it, the profile's
// format and its refusals.
#include "profile.hpp"
#include "state.hpp"

#include <gtest/gtest.h>

using namespace ncstore::roadm;

namespace {

Device small() {
    Device d;
    d.shelves["1"] = {"1", "R1", "inService"};
    CircuitPack deg{"1/0", "DEG", "inService", "1", "1", "", "", {}};
    deg.ports["L1"] = {"L1", "", "", ""};
    deg.ports["CTP"] = {"CTP", "", "", ""};
    CircuitPack amp{"2/0", "AMP", "inService", "1", "2", "", "", {}};
    amp.ports["IN"] = {"IN", "", "", ""};
    amp.ports["OUT"] = {"OUT", "", "", ""};
    CircuitPack srg{"3/0", "SRG", "", "1", "3", "", "", {}};
    srg.ports["PP1"] = {"PP1", "", "", ""};
    srg.ports["CP"] = {"CP", "", "", ""};
    d.circuitPacks = {{"1/0", deg}, {"2/0", amp}, {"3/0", srg}};
    Interface a;
    a.name = "a";
    a.type = "networkMediaChannelConnectionTerminationPoint";
    a.supportingCircuitPack = "3/0";
    a.supportingPort = "PP1";
    Interface b = a;
    b.name = "b";
    b.supportingCircuitPack = "1/0";
    b.supportingPort = "L1";
    d.interfaces = {{"a", a}, {"b", b}};
    d.connections["c"] = {"c", "a", "b"};
    // SRG -> amplifier -> degree, the links written in both directions.
    d.physicalLinks.push_back({"l1", {"3/0", "CP"}, {"2/0", "IN"}});
    d.physicalLinks.push_back({"l2", {"1/0", "CTP"}, {"2/0", "OUT"}});
    return d;
}

} // namespace

TEST(PortTrail, FollowsThePhysicalLinksBetweenCircuitPacks) {
    std::string why;
    const auto trail = portTrail(small(), "c", why);
    const std::vector<PortRef> expected{{"3/0", "PP1"}, {"3/0", "CP"},  {"2/0", "IN"},
                                        {"2/0", "OUT"}, {"1/0", "CTP"}, {"1/0", "L1"}};
    EXPECT_EQ(trail, expected) << why;
    const std::string xml = portTrailXml(small(), "c");
    EXPECT_NE(xml.find("<status>Successful</status>"), std::string::npos);
    EXPECT_NE(xml.find("<rack>R1</rack><shelf>1</shelf><slot>3</slot>"), std::string::npos);
}

TEST(PortTrail, SaysWhyThereIsNone) {
    std::string why;
    EXPECT_TRUE(portTrail(small(), "nope", why).empty());
    EXPECT_EQ(why, "no roadm-connection named nope");
    Device cut = small();
    cut.physicalLinks.pop_back();
    EXPECT_TRUE(portTrail(cut, "c", why).empty());
    EXPECT_EQ(why, "no physical link joins circuit-pack 3/0 to 1/0");
    EXPECT_NE(portTrailXml(cut, "c").find("<status>Failed</status>"), std::string::npos);
}

TEST(State, NothingIsBetterThanWhatCarriesIt) {
    Device d = small();
    EXPECT_EQ(interfaceOperState(d, "b"), "inService");
    d.circuitPacks["1/0"].admin = "maintenance";
    EXPECT_EQ(portOperState(d, "1/0", "L1"), "degraded");
    EXPECT_EQ(interfaceOperState(d, "b"), "degraded");
    d.shelves["1"].admin = "outOfService";
    EXPECT_EQ(portOperState(d, "3/0", "PP1"), "outOfService");
    EXPECT_EQ(interfaceOperState(d, "a"), "outOfService");
}

TEST(State, PmMovesAndCountsUnavailableSeconds) {
    Device d = small();
    d.circuitPacks["3/0"].ports["PP1"].admin = "outOfService";
    const auto t0 = std::chrono::system_clock::time_point(std::chrono::seconds(1'800'000'000)); // a bin start
    const std::map<std::string, std::chrono::system_clock::time_point> since{{"3/0/PP1", t0}};
    const std::string at10 = pmXml(d, t0 + std::chrono::seconds(10), since);
    EXPECT_NE(at10.find("<type>unavailableSeconds</type><extension></extension><location>nearEnd</location>"
                        "<direction>bidirectional</direction><measurement><granularity>15min</granularity>"
                        "<pmParameterValue>10</pmParameterValue>"),
              std::string::npos);
    EXPECT_NE(at10, pmXml(d, t0 + std::chrono::seconds(11), since));
}

TEST(Profile, ReadsSectionsAndRefusesWhatItCannot) {
    const Profile p = Profile::parse("[info]\nserial-id = S1 # the label\nvendor = V\nmodel = M\n"
                                     "[degree]\nmax-wavelengths = 48\n",
                                     "test");
    ASSERT_EQ(p.info.size(), 3u);
    EXPECT_EQ(p.info[0].first, "vendor"); // the model's order
    EXPECT_EQ(p.infoValue("serial-id"), "S1");
    EXPECT_EQ(p.get("degree.max-wavelengths", "96"), "48");
    EXPECT_THROW(Profile::parse("[info]\nnode-id = X\n", "t"), std::runtime_error);
    EXPECT_THROW(Profile::parse("[info]\nvendor = V\n", "t"), std::runtime_error); // model, serial-id
    EXPECT_THROW(Profile::parse("[nope]\n", "t"), std::runtime_error);
    EXPECT_THROW(Profile::parse("vendor = V\n", "t"), std::runtime_error);
    try {
        Profile::parse("[info]\nvendor\n", "file.profile");
        FAIL();
    } catch (const std::runtime_error& e) {
        EXPECT_STREQ(e.what(), "file.profile:2: expected key = value");
    }
}

TEST(State, DeviceStateHasTheMandatoryLeaves) {
    const Profile p = Profile::parse("[info]\nvendor = V\nmodel = M\nserial-id = S\n", "t");
    const std::string x = deviceStateXml(small(), p);
    EXPECT_NE(x.find("<info><vendor>V</vendor><model>M</model><serial-id>S</serial-id></info>"),
              std::string::npos);
    EXPECT_NE(x.find("<circuit-pack-name>1/0</circuit-pack-name><vendor>V</vendor><model>DEG</model>"
                     "<serial-id>S-1/0</serial-id>"),
              std::string::npos);
    EXPECT_NE(x.find("<port-name>L1</port-name><port-direction>bidirectional</port-direction>"
                     "<operational-state>inService</operational-state>"),
              std::string::npos);
}
