// The configuration of an Open ROADM 2.2.1 device (org-openroadm-device) as the agent reasons
// about it: plain values, no libyang, so that the rules, the port trail and the state can be
// computed (and unit-tested) on a snapshot.
//
// Promises:
//  - deviceFrom() reads every item the agent uses from a parsed data forest (config of running,
//    or the datastore as a change would leave it) and nothing else; absent leaves stay empty
//    (administrative-state: empty means the model's "not set", treated as inService).
//  - Paths built here are instance identifiers as the server names nodes (module-qualified
//    first node, every key in a predicate), so they can be an rpc-error's error-path.
#pragma once

#include <libyang/libyang.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ncstore::roadm {

inline constexpr const char* kDeviceNs = "http://org/openroadm/device";
inline constexpr const char* kDevice = "/org-openroadm-device:org-openroadm-device";

struct Port {
    std::string name;
    std::string admin; ///< administrative-state ("" when not set)
    std::string portQual;
    std::string logicalConnectionPoint;
};

struct CircuitPack {
    std::string name, type, admin, shelf, slot, subSlot;
    std::string parent; ///< parent-circuit-pack/circuit-pack-name
    std::map<std::string, Port> ports;
};

struct Interface {
    std::string name;
    std::string type; ///< the identity's name, without its module
    std::string admin;
    std::string supportingInterface, supportingCircuitPack, supportingPort;
    std::optional<double> frequency, width; ///< nmc-ctp: THz, GHz
    std::optional<double> minFreq, maxFreq; ///< mc-ttp: THz
};

struct RoadmConnection {
    std::string name, src, dst;
};

struct Degree {
    std::uint16_t number = 0;
    std::vector<std::string> circuitPacks;
};

struct Srg {
    std::uint16_t number = 0;
    std::vector<std::string> circuitPacks;
};

struct PortRef {
    std::string circuitPack, port;
    bool operator==(const PortRef&) const = default;
};

struct PhysicalLink {
    std::string name;
    PortRef source, destination;
};

struct Shelf {
    std::string name, rack, admin;
};

struct Device {
    std::string nodeId, nodeType;
    std::map<std::string, Shelf> shelves;
    std::map<std::string, CircuitPack> circuitPacks;
    std::map<std::string, Interface> interfaces;
    std::map<std::string, RoadmConnection> connections;
    std::map<std::uint16_t, Degree> degrees;
    std::map<std::uint16_t, Srg> srgs;
    std::vector<PhysicalLink> physicalLinks;

    /// The degree whose circuit-packs hold `circuitPack`, if any.
    std::optional<std::uint16_t> degreeOf(const std::string& circuitPack) const;
    /// The circuit pack and port an interface sits on, following supporting-interface when the
    /// interface names no port itself (at most 16 levels: a loop is no port).
    std::optional<PortRef> portOf(const std::string& interface) const;
};

/// The device in `forest` (any sibling; no org-openroadm-device in it: an empty Device).
Device deviceFrom(const lyd_node* forest);

// Paths of the nodes the agent names in errors and state.
std::string circuitPackPath(const std::string& name);
std::string portPath(const std::string& circuitPack, const std::string& port);
std::string interfacePath(const std::string& name);
std::string connectionPath(const std::string& name);
/// A value as an XPath literal inside a predicate: single quotes unless it holds one.
std::string quoted(const std::string& value);

/// Operational state from administrative state, the documented mapping (docs/roadm-device.md):
/// inService (or not set) -> inService, outOfService -> outOfService, maintenance -> degraded.
std::string operFromAdmin(const std::string& admin);

} // namespace ncstore::roadm
