#include "state.hpp"

#include "ncstore/xml.hpp"

#include <cmath>
#include <cstdio>
#include <ctime>
#include <deque>
#include <functional>
#include <set>

namespace ncstore::roadm {

namespace {

constexpr const char* kAlarmNs = "http://org/openroadm/alarm";
constexpr const char* kPmNs = "http://org/openroadm/pm";

int badness(const std::string& oper) {
    return oper == "outOfService" ? 2 : oper == "degraded" ? 1 : 0;
}

std::string worst(const std::string& a, const std::string& b) {
    return badness(a) >= badness(b) ? a : b;
}

void element(std::string& out, const char* name, const std::string& value) {
    if (!value.empty()) {
        appendElement(out, name, value);
    }
}

std::string circuitPackOperState(const Device& d, const std::string& name, int depth = 0) {
    const auto it = d.circuitPacks.find(name);
    if (it == d.circuitPacks.end()) {
        return "outOfService";
    }
    std::string oper = operFromAdmin(it->second.admin);
    if (const auto shelf = d.shelves.find(it->second.shelf); shelf != d.shelves.end()) {
        oper = worst(oper, operFromAdmin(shelf->second.admin));
    }
    if (!it->second.parent.empty() && depth < 16) {
        oper = worst(oper, circuitPackOperState(d, it->second.parent, depth + 1));
    }
    return oper;
}

/// The pseudo-random part of a gauge: the same for a port within one second, another the next.
double jitter(const std::string& key, long long second) {
    const std::size_t h = std::hash<std::string>{}(key + "#" + std::to_string(second));
    return static_cast<double>(h % 1000) / 1000.0 - 0.5; // -0.5 .. 0.5
}

std::string decimal2(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", v);
    return buf;
}

} // namespace

std::string dateTime(std::chrono::system_clock::time_point t) {
    const std::time_t secs = std::chrono::system_clock::to_time_t(t);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

std::string portOperState(const Device& d, const std::string& circuitPack, const std::string& port) {
    std::string oper = circuitPackOperState(d, circuitPack);
    const auto cp = d.circuitPacks.find(circuitPack);
    if (cp != d.circuitPacks.end()) {
        const auto p = cp->second.ports.find(port);
        oper = worst(oper, p == cp->second.ports.end() ? "outOfService" : operFromAdmin(p->second.admin));
    }
    return oper;
}

std::string interfaceOperState(const Device& d, const std::string& interface) {
    std::string oper = "inService";
    std::string name = interface;
    for (int depth = 0; depth < 16; ++depth) {
        const auto it = d.interfaces.find(name);
        if (it == d.interfaces.end()) {
            return "outOfService";
        }
        oper = worst(oper, operFromAdmin(it->second.admin));
        if (!it->second.supportingCircuitPack.empty() && !it->second.supportingPort.empty()) {
            oper = worst(oper, portOperState(d, it->second.supportingCircuitPack, it->second.supportingPort));
        }
        if (it->second.supportingInterface.empty()) {
            break;
        }
        name = it->second.supportingInterface;
    }
    return oper;
}

std::string deviceStateXml(const Device& d, const Profile& profile) {
    std::string x = "<org-openroadm-device xmlns=\"" + std::string(kDeviceNs) + "\"><info>";
    for (const auto& [leaf, value] : profile.info) {
        element(x, leaf.c_str(), value);
    }
    x += "</info>";
    const std::string vendor = profile.get("equipment.vendor", profile.infoValue("vendor"));
    const std::string hw = profile.get("equipment.hardware-version", "");
    const std::string serial = profile.infoValue("serial-id");
    for (const auto& [name, shelf] : d.shelves) {
        x += "<shelves>";
        element(x, "shelf-name", name);
        element(x, "vendor", vendor);
        element(x, "model", profile.infoValue("model"));
        element(x, "serial-id", serial + "-shelf-" + name);
        element(x, "hardware-version", hw);
        element(x, "operational-state", operFromAdmin(shelf.admin));
        x += "</shelves>";
    }
    for (const auto& [name, cp] : d.circuitPacks) {
        x += "<circuit-packs>";
        element(x, "circuit-pack-name", name);
        element(x, "vendor", vendor);
        element(x, "model", cp.type.empty() ? "circuit-pack" : cp.type);
        element(x, "serial-id", serial + "-" + name);
        element(x, "hardware-version", hw);
        element(x, "operational-state", circuitPackOperState(d, name));
        x += "<circuit-pack-category><type>circuitPack</type></circuit-pack-category>"
             "<is-pluggable-optics>false</is-pluggable-optics>";
        for (const auto& [portName, port] : cp.ports) {
            x += "<ports>";
            element(x, "port-name", portName);
            element(x, "port-direction", "bidirectional");
            element(x, "operational-state", portOperState(d, name, portName));
            // Not ports/interfaces: a keyless list, which a merging push would repeat.
            x += "</ports>";
        }
        x += "</circuit-packs>";
    }
    for (const auto& [name, itf] : d.interfaces) {
        x += "<interface>";
        element(x, "name", name);
        element(x, "operational-state", interfaceOperState(d, name));
        x += "</interface>";
    }
    for (const auto& [number, degree] : d.degrees) {
        x += "<degree><degree-number>" + std::to_string(number) + "</degree-number>";
        element(x, "max-wavelengths", profile.get("degree.max-wavelengths", "96"));
        x += "</degree>";
    }
    for (const auto& [number, srg] : d.srgs) {
        int addDrop = 0;
        for (const auto& cp : srg.circuitPacks) {
            if (const auto it = d.circuitPacks.find(cp); it != d.circuitPacks.end()) {
                for (const auto& [portName, port] : it->second.ports) {
                    addDrop += port.portQual == "roadm-external" ? 1 : 0;
                }
            }
        }
        x += "<shared-risk-group><srg-number>" + std::to_string(number) + "</srg-number>";
        element(x, "max-add-drop-ports", profile.get("srg.max-add-drop-ports", "16"));
        element(x, "current-provisioned-add-drop-ports", std::to_string(addDrop));
        element(x, "wavelength-duplication", profile.get("srg.wavelength-duplication", "one-per-srg"));
        x += "</shared-risk-group>";
    }
    return x + "</org-openroadm-device>";
}

std::string datetimeXml(std::chrono::system_clock::time_point now) {
    return "<org-openroadm-device xmlns=\"" + std::string(kDeviceNs) + "\"><info><current-datetime>" +
           dateTime(now) + "</current-datetime></info></org-openroadm-device>";
}

std::string resourceXml(const Resource& r) {
    std::string x = "<resource>";
    if (r.kind == "port") {
        x += "<port>";
        element(x, "circuit-pack-name", r.name);
        element(x, "port-name", r.port);
        x += "</port>";
    } else if (r.kind == "circuit-pack") {
        element(x, "circuit-pack-name", r.name);
    } else if (r.kind == "interface") {
        element(x, "interface-name", r.name);
    } else if (r.kind == "connection") {
        element(x, "connection-name", r.name);
    } else if (r.kind == "degree") {
        element(x, "degree-number", r.name);
    } else if (r.kind == "shared-risk-group") {
        element(x, "srg-number", r.name);
    } else if (r.kind == "shelf") {
        element(x, "shelf-name", r.name);
    } else if (r.kind == "device") {
        element(x, "node-id", r.name);
    } else {
        element(x, "other-resource-id", r.name);
    }
    x += "</resource><resourceType><type>" + xmlEscape(r.kind) + "</type></resourceType>";
    return x;
}

namespace {

std::string alarmBody(const std::string& nodeId, const Alarm& a, const std::string& severity) {
    std::string x;
    element(x, "id", a.id);
    x += "<resource><device>";
    element(x, "node-id", nodeId);
    x += "</device>" + resourceXml(a.resource) + "</resource><probableCause>";
    element(x, "cause", a.cause);
    element(x, "direction", a.direction);
    element(x, "location", a.location);
    x += "</probableCause>";
    element(x, "raiseTime", a.raiseTime);
    element(x, "severity", severity);
    element(x, "additional-detail", a.detail);
    return x;
}

} // namespace

std::string alarmListXml(const std::string& nodeId, const std::map<std::string, Alarm>& alarms) {
    std::string x = "<active-alarm-list xmlns=\"" + std::string(kAlarmNs) + "\">";
    for (const auto& [id, a] : alarms) {
        x += "<activeAlarms>" + alarmBody(nodeId, a, a.severity) + "</activeAlarms>";
    }
    return x + "</active-alarm-list>";
}

std::string alarmNotificationXml(const std::string& nodeId, const Alarm& a, bool cleared,
                                 const std::string& eventTime) {
    Alarm shown = a;
    if (cleared) {
        shown.raiseTime = eventTime;
    }
    return "<alarm-notification xmlns=\"" + std::string(kAlarmNs) + "\">" +
           alarmBody(nodeId, shown, cleared ? "clear" : a.severity) + "</alarm-notification>";
}

std::string pmXml(const Device& d, std::chrono::system_clock::time_point now,
                  const std::map<std::string, std::chrono::system_clock::time_point>& unavailableSince) {
    using namespace std::chrono;
    const long long second = duration_cast<seconds>(now.time_since_epoch()).count();
    const auto binStart = system_clock::time_point(seconds(second - second % 900));
    std::string x = "<current-pm-list xmlns=\"" + std::string(kPmNs) + "\">";
    auto pm = [&](const char* type, const std::string& value, const char* unit) {
        x += "<current-pm><type>";
        x += type;
        x += "</type><extension></extension><location>nearEnd</location><direction>";
        x += std::string(type).find("Input") != std::string::npos    ? "rx"
             : std::string(type).find("Output") != std::string::npos ? "tx"
                                                                     : "bidirectional";
        x += "</direction><measurement><granularity>15min</granularity><pmParameterValue>" + value +
             "</pmParameterValue><pmParameterUnit>";
        x += unit;
        x += "</pmParameterUnit><validity>partial</validity></measurement></current-pm>";
    };
    for (const auto& [cpName, cp] : d.circuitPacks) {
        for (const auto& [portName, port] : cp.ports) {
            const std::string key = cpName + "/" + portName;
            const bool up = portOperState(d, cpName, portName) != "outOfService";
            x += "<current-pm-entry><pm-resource-type>port</pm-resource-type>"
                 "<pm-resource-type-extension></pm-resource-type-extension>"
                 "<pm-resource-instance xmlns:d=\"" +
                 std::string(kDeviceNs) + "\">/d:org-openroadm-device/d:circuit-packs[d:circuit-pack-name=" +
                 xmlEscape(quoted(cpName)) + "]/d:ports[d:port-name=" + xmlEscape(quoted(portName)) +
                 "]</pm-resource-instance><retrieval-time>" + dateTime(now) + "</retrieval-time>";
            pm("opticalPowerInput", up ? decimal2(-3.0 + jitter(key + "in", second)) : "-40.00", "dBm");
            pm("opticalPowerOutput", up ? decimal2(1.0 + jitter(key + "out", second)) : "-40.00", "dBm");
            long long unavailable = 0;
            if (const auto it = unavailableSince.find(key); it != unavailableSince.end() && !up) {
                unavailable = duration_cast<seconds>(now - std::max(it->second, binStart)).count();
            }
            pm("unavailableSeconds", std::to_string(std::max(0LL, unavailable)), "seconds");
            x += "</current-pm-entry>";
        }
    }
    return x + "</current-pm-list>";
}

std::vector<PortRef> portTrail(const Device& d, const std::string& connection, std::string& why) {
    const auto c = d.connections.find(connection);
    if (c == d.connections.end()) {
        why = "no roadm-connection named " + connection;
        return {};
    }
    const auto from = d.portOf(c->second.src);
    const auto to = d.portOf(c->second.dst);
    if (!from || !to) {
        why = "interface " + (from ? c->second.dst : c->second.src) + " of roadm-connection " + connection +
              " sits on no port";
        return {};
    }
    std::vector<PortRef> trail{*from};
    if (from->circuitPack != to->circuitPack) {
        // Breadth first over the physical links: the fewest circuit-packs between the two.
        struct Hop {
            std::string circuitPack;
            int link = -1; ///< the physical link that reached it
            std::string previous;
        };
        std::map<std::string, Hop> seen{{from->circuitPack, {from->circuitPack, -1, {}}}};
        std::deque<std::string> queue{from->circuitPack};
        while (!queue.empty() && !seen.contains(to->circuitPack)) {
            const std::string at = queue.front();
            queue.pop_front();
            for (std::size_t i = 0; i < d.physicalLinks.size(); ++i) {
                const auto& l = d.physicalLinks[i];
                const std::string next = l.source.circuitPack == at        ? l.destination.circuitPack
                                         : l.destination.circuitPack == at ? l.source.circuitPack
                                                                           : std::string();
                if (!next.empty() && !seen.contains(next)) {
                    seen[next] = Hop{next, static_cast<int>(i), at};
                    queue.push_back(next);
                }
            }
        }
        if (!seen.contains(to->circuitPack)) {
            why = "no physical link joins circuit-pack " + from->circuitPack + " to " + to->circuitPack;
            return {};
        }
        std::vector<PortRef> middle;
        for (std::string at = to->circuitPack; at != from->circuitPack; at = seen[at].previous) {
            const auto& l = d.physicalLinks[seen[at].link];
            const bool forward = l.destination.circuitPack == at;
            middle.insert(middle.begin(), forward ? l.destination : l.source);
            middle.insert(middle.begin(), forward ? l.source : l.destination);
        }
        for (const auto& p : middle) {
            if (!(p == trail.back())) {
                trail.push_back(p);
            }
        }
    }
    if (!(*to == trail.back())) {
        trail.push_back(*to);
    }
    return trail;
}

std::string portTrailXml(const Device& d, const std::string& connection) {
    std::string why;
    const auto trail = portTrail(d, connection, why);
    if (trail.empty()) {
        std::string x = "<status>Failed</status>";
        element(x, "status-message", why);
        return x;
    }
    std::string x = "<status>Successful</status>";
    for (const auto& p : trail) {
        x += "<ports>";
        const auto cp = d.circuitPacks.find(p.circuitPack);
        if (cp != d.circuitPacks.end()) {
            if (const auto shelf = d.shelves.find(cp->second.shelf); shelf != d.shelves.end()) {
                element(x, "rack", shelf->second.rack);
            }
            element(x, "shelf", cp->second.shelf);
            element(x, "slot", cp->second.slot);
            element(x, "subSlot", cp->second.subSlot);
        }
        element(x, "circuit-pack-name", p.circuitPack);
        element(x, "port-name", p.port);
        x += "</ports>";
    }
    return x;
}

} // namespace ncstore::roadm
