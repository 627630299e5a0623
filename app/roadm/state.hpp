// The state an Open ROADM device shows, computed from a configuration snapshot (Device), the
// device profile and the agent's alarms, as the XML the application API takes (push, provide,
// notify, RPC output). No I/O: the agent decides when each is pushed, pulled or sent.
//
// Promises:
//  - Operational state follows administrative state (operFromAdmin), and a node is never
//    better than what carries it: a port is as bad as its circuit-pack, an interface as bad as
//    its port and its supporting interface (outOfService > degraded > inService).
//  - Every list entry that exists in the configuration gets the state leaves the model makes
//    mandatory (vendor, model, serial-id, port-direction, ...), so the operational datastore
//    is complete for a controller.
//  - Every text is XML-escaped; every path in an instance-identifier value declares its prefix.
#pragma once

#include "device.hpp"
#include "profile.hpp"

#include <chrono>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace ncstore::roadm {

/// A resource an alarm or PM names: kind is the org-openroadm-resource-types resource-type-enum
/// ("port", "circuit-pack", "interface", "connection", "degree", "shared-risk-group", "device").
struct Resource {
    std::string kind;
    std::string name; ///< circuit-pack, interface, connection name, degree or SRG number
    std::string port; ///< kind "port": the port of circuit-pack `name`
    bool operator<(const Resource& o) const {
        return std::tie(kind, name, port) < std::tie(o.kind, o.name, o.port);
    }
};

struct Alarm {
    std::string id;
    Resource resource;
    std::string cause;    ///< probable-cause-enum
    std::string severity; ///< critical, major, minor, warning, indeterminate
    std::string raiseTime;
    std::string detail;
    std::string direction = "bidirectional";
    std::string location = "nearEnd";
};

/// RFC 3339 in UTC with seconds, as date-and-time takes it.
std::string dateTime(std::chrono::system_clock::time_point t);

/// Effective operational state of a port, an interface (after the rule above).
std::string portOperState(const Device& d, const std::string& circuitPack, const std::string& port);
std::string interfaceOperState(const Device& d, const std::string& interface);

/// org-openroadm-device's state for push: info from the profile, shelves, circuit-packs, ports,
/// interfaces, degrees and SRGs of `d`.
std::string deviceStateXml(const Device& d, const Profile& profile);
/// The pulled part of info: current-datetime, the device clock `now` (set-current-datetime moves it).
std::string datetimeXml(std::chrono::system_clock::time_point now);

std::string alarmListXml(const std::string& nodeId, const std::map<std::string, Alarm>& alarms);
/// alarm-notification of `a` (severity "clear" when it is cleared).
std::string alarmNotificationXml(const std::string& nodeId, const Alarm& a, bool cleared,
                                 const std::string& eventTime);

/// current-pm-list at `now`: per port, optical power in and out (a gauge that moves with time
/// around a level; no light when the port is not in service) and unavailableSeconds of the
/// current 15-minute bin. `unavailableSince`: per port "cp/port" when it went out of service.
std::string pmXml(const Device& d, std::chrono::system_clock::time_point now,
                  const std::map<std::string, std::chrono::system_clock::time_point>& unavailableSince);

/// get-connection-port-trail: the ports from the source interface's port, over the physical
/// links between circuit-packs, to the destination interface's port (the output's content,
/// status Failed with a message when it cannot be computed).
std::string portTrailXml(const Device& d, const std::string& connection);
/// The same trail as port refs (empty when there is none), and why not in `why`.
std::vector<PortRef> portTrail(const Device& d, const std::string& connection, std::string& why);

/// <resource>...</resource><resourceType>...</resourceType> of the Open ROADM resource grouping.
std::string resourceXml(const Resource& r);

} // namespace ncstore::roadm
