// rules.hpp on hand-built devices: each rule refuses what it should, with its path and app-tag,
// and only for what a change introduces.
#include "rules.hpp"

#include <gtest/gtest.h>

using namespace ncstore::roadm;

namespace {

Interface nmc(const std::string& name, const std::string& cp, const std::string& port, double thz,
              double ghz) {
    Interface i;
    i.name = name;
    i.type = "networkMediaChannelConnectionTerminationPoint";
    i.supportingCircuitPack = cp;
    i.supportingPort = port;
    i.frequency = thz;
    i.width = ghz;
    return i;
}

/// Degree 1 on circuit-pack 1/0 (port L1), SRG 1 on 3/0 (ports PP1, PP2, CP-DEG1), one
/// connection PP1 -> L1 at 193.1 THz.
Device roadm() {
    Device d;
    d.nodeId = "ROADM-A1";
    CircuitPack deg{"1/0", "ROADM-DEGREE", "inService", "1", "1", "", "", {}};
    deg.ports["L1"] = {"L1", "inService", "roadm-external", ""};
    deg.ports["CTP-SRG1"] = {"CTP-SRG1", "inService", "roadm-internal", ""};
    CircuitPack srg{"3/0", "ROADM-SRG", "inService", "1", "3", "", "", {}};
    for (const char* p : {"PP1", "PP2", "CP-DEG1"}) {
        srg.ports[p] = {p, "inService", "roadm-external", ""};
    }
    d.circuitPacks = {{"1/0", deg}, {"3/0", srg}};
    Interface ots;
    ots.name = "OTS-DEG1";
    ots.type = "opticalTransport";
    ots.supportingCircuitPack = "1/0";
    ots.supportingPort = "L1";
    d.interfaces["OTS-DEG1"] = ots;
    d.interfaces["DEG1-nmc"] = nmc("DEG1-nmc", "1/0", "L1", 193.1, 40);
    d.interfaces["SRG1-PP1-nmc"] = nmc("SRG1-PP1-nmc", "3/0", "PP1", 193.1, 40);
    d.connections["c1"] = {"c1", "SRG1-PP1-nmc", "DEG1-nmc"};
    d.degrees[1] = {1, {"1/0"}};
    d.srgs[1] = {1, {"3/0"}};
    d.physicalLinks.push_back({"phy", {"1/0", "CTP-SRG1"}, {"3/0", "CP-DEG1"}});
    return d;
}

} // namespace

TEST(Rules, TheExampleDeviceIsValid) {
    EXPECT_TRUE(violations(roadm()).empty());
}

TEST(Rules, ARoadmConnectionJoinsNmcInterfaces) {
    Device after = roadm();
    after.connections["bad"] = {"bad", "OTS-DEG1", "DEG1-nmc"};
    const auto v = check(roadm(), after);
    ASSERT_TRUE(v);
    EXPECT_EQ(v->appTag, "roadm-connection-interface-type");
    EXPECT_EQ(
        v->path,
        "/org-openroadm-device:org-openroadm-device/roadm-connections[connection-name='bad']/source/src-if");
    EXPECT_NE(v->message.find("opticalTransport"), std::string::npos);
}

TEST(Rules, ARoadmConnectionToItselfOrAcrossWavelengthsIsRefused) {
    Device loop = roadm();
    loop.connections["loop"] = {"loop", "DEG1-nmc", "DEG1-nmc"};
    ASSERT_TRUE(check(roadm(), loop));
    EXPECT_EQ(check(roadm(), loop)->appTag, "roadm-connection-loop");

    Device mismatch = roadm();
    mismatch.interfaces["SRG1-PP2-nmc"] = nmc("SRG1-PP2-nmc", "3/0", "PP2", 193.2, 40);
    mismatch.connections["x"] = {"x", "SRG1-PP2-nmc", "DEG1-nmc"};
    const auto v = check(roadm(), mismatch);
    ASSERT_TRUE(v);
    EXPECT_EQ(v->appTag, "roadm-connection-wavelength-mismatch");
}

TEST(Rules, AWavelengthIsUsedOnceOnADegree) {
    Device after = roadm();
    after.interfaces["DEG1-nmc-2"] = nmc("DEG1-nmc-2", "1/0", "L1", 193.11, 40); // overlaps 193.08-193.12
    const auto v = check(roadm(), after);
    ASSERT_TRUE(v);
    EXPECT_EQ(v->appTag, "wavelength-in-use");
    // The new interface is named, not the one that was there.
    EXPECT_EQ(v->path, "/org-openroadm-device:org-openroadm-device/interface[name='DEG1-nmc-2']/"
                       "org-openroadm-network-media-channel-interfaces:nmc-ctp/frequency");

    Device adjacent = roadm();
    adjacent.interfaces["DEG1-nmc-2"] = nmc("DEG1-nmc-2", "1/0", "L1", 193.14, 40); // shares an edge
    EXPECT_FALSE(check(roadm(), adjacent));
    Device onSrg = roadm(); // the same wavelength on an SRG port is no degree's
    onSrg.interfaces["SRG1-PP2-nmc"] = nmc("SRG1-PP2-nmc", "3/0", "PP2", 193.1, 40);
    EXPECT_FALSE(check(roadm(), onSrg));
}

TEST(Rules, AnInterfacesPortExistsInItsCircuitPack) {
    Device after = roadm();
    after.interfaces["OTS-DEG1"].supportingPort = "L9";
    auto v = check(roadm(), after);
    ASSERT_TRUE(v);
    EXPECT_EQ(v->appTag, "port-not-found");
    after = roadm();
    after.interfaces["OTS-DEG1"].supportingCircuitPack.clear();
    v = check(roadm(), after);
    ASSERT_TRUE(v);
    EXPECT_EQ(v->appTag, "port-without-circuit-pack");
}

TEST(Rules, ACircuitPackInUseIsNotDeletedUnlessOutOfService) {
    Device before = roadm();
    Device after = roadm();
    after.circuitPacks.erase("1/0");
    after.interfaces.clear();
    after.connections.clear();
    auto v = check(before, after);
    ASSERT_TRUE(v);
    EXPECT_EQ(v->appTag, "circuit-pack-in-use");
    EXPECT_EQ(v->tag, "in-use");
    before.circuitPacks["1/0"].admin = "outOfService";
    EXPECT_FALSE(check(before, after));
}

TEST(Rules, AViolationAlreadyThereDoesNotBlockAnotherChange) {
    Device before = roadm();
    before.connections["old-bad"] = {"old-bad", "OTS-DEG1", "DEG1-nmc"};
    Device after = before;
    after.circuitPacks["3/0"].ports["PP2"].admin = "outOfService";
    EXPECT_FALSE(check(before, after));
}

TEST(Device, PortOfFollowsSupportingInterfaces) {
    Device d = roadm();
    Interface oms;
    oms.name = "OMS";
    oms.supportingInterface = "OTS-DEG1";
    d.interfaces["OMS"] = oms;
    ASSERT_TRUE(d.portOf("OMS"));
    EXPECT_EQ(*d.portOf("OMS"), (PortRef{"1/0", "L1"}));
    d.interfaces["OMS"].supportingInterface = "OMS"; // a loop is no port
    EXPECT_FALSE(d.portOf("OMS"));
}

TEST(Device, OperationalStateFromAdministrativeState) {
    EXPECT_EQ(operFromAdmin(""), "inService");
    EXPECT_EQ(operFromAdmin("inService"), "inService");
    EXPECT_EQ(operFromAdmin("outOfService"), "outOfService");
    EXPECT_EQ(operFromAdmin("maintenance"), "degraded");
}
