#include "rules.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace ncstore::roadm {

namespace {

constexpr const char* kNmc = "networkMediaChannelConnectionTerminationPoint";
constexpr const char* kMc = "mediaChannelTrailTerminationPoint";

std::string thz(double v) {
    std::ostringstream s;
    s << v;
    return s.str();
}

void connectionRules(const Device& d, std::vector<Violation>& out) {
    for (const auto& [name, c] : d.connections) {
        const std::string base = connectionPath(name);
        if (!c.src.empty() && c.src == c.dst) {
            out.push_back({"roadm-connection " + name + " connects interface " + c.src + " to itself",
                           base + "/destination/dst-if", "roadm-connection-loop", "invalid-value", name});
            continue;
        }
        struct End {
            const std::string& ifName;
            const char* what;
            std::string path;
        };
        const End ends[] = {{c.src, "source", base + "/source/src-if"},
                            {c.dst, "destination", base + "/destination/dst-if"}};
        bool kinds = true;
        for (const End& e : ends) {
            if (e.ifName.empty()) {
                continue; // mandatory leaves: the models refuse their absence
            }
            const auto it = d.interfaces.find(e.ifName);
            if (it == d.interfaces.end()) {
                out.push_back({"roadm-connection " + name + ": its " + e.what + " interface " + e.ifName +
                                   " does not exist",
                               e.path, "roadm-connection-no-interface", "invalid-value", name});
                kinds = false;
            } else if (it->second.type != kNmc) {
                out.push_back({"roadm-connection " + name + ": its " + e.what + " interface " + e.ifName +
                                   " is of type " + it->second.type +
                                   ", a roadm-connection joins networkMediaChannelConnectionTerminationPoint "
                                   "interfaces",
                               e.path, "roadm-connection-interface-type", "invalid-value", name});
                kinds = false;
            }
        }
        if (!kinds) {
            continue;
        }
        const Interface& s = d.interfaces.at(c.src);
        const Interface& t = d.interfaces.at(c.dst);
        if ((s.frequency && t.frequency && std::abs(*s.frequency - *t.frequency) > 1e-9) ||
            (s.width && t.width && std::abs(*s.width - *t.width) > 1e-9)) {
            out.push_back({"roadm-connection " + name + ": interfaces " + c.src + " (" +
                               thz(s.frequency.value_or(0)) + " THz, " + thz(s.width.value_or(0)) +
                               " GHz) and " + c.dst + " (" + thz(t.frequency.value_or(0)) + " THz, " +
                               thz(t.width.value_or(0)) + " GHz) carry different wavelengths",
                           base + "/destination/dst-if", "roadm-connection-wavelength-mismatch",
                           "invalid-value", name});
        }
    }
}

/// A spectrum slice in THz.
struct Slice {
    double low, high;
    const Interface* itf;
};

void wavelengthRules(const Device& d, std::vector<Violation>& out) {
    // Per degree and kind, the slices in use; two that overlap by more than rounding collide.
    std::map<std::pair<std::uint16_t, std::string>, std::vector<Slice>> used;
    for (const auto& [name, i] : d.interfaces) {
        std::optional<Slice> slice;
        if (i.type == kNmc && i.frequency && i.width) {
            slice = Slice{*i.frequency - *i.width / 2000.0, *i.frequency + *i.width / 2000.0, &i};
        } else if (i.type == kMc && i.minFreq && i.maxFreq) {
            slice = Slice{*i.minFreq, *i.maxFreq, &i};
        }
        if (!slice) {
            continue;
        }
        const auto port = d.portOf(name);
        const auto degree = port ? d.degreeOf(port->circuitPack) : std::nullopt;
        if (degree) {
            used[{*degree, i.type}].push_back(*slice);
        }
    }
    constexpr double kEpsilon = 1e-6; // adjacent slices share an edge
    for (const auto& [where, slices] : used) {
        for (std::size_t a = 0; a < slices.size(); ++a) {
            for (std::size_t b = 0; b < slices.size(); ++b) {
                if (a == b || slices[a].low >= slices[b].high - kEpsilon ||
                    slices[b].low >= slices[a].high - kEpsilon) {
                    continue;
                }
                const Interface& mine = *slices[a].itf;
                const Interface& other = *slices[b].itf;
                const bool nmc = mine.type == kNmc;
                out.push_back({"the wavelength of interface " + mine.name + " (" + thz(slices[a].low) + "-" +
                                   thz(slices[a].high) + " THz) is already used on degree " +
                                   std::to_string(where.first) + " by interface " + other.name,
                               interfacePath(mine.name) +
                                   (nmc ? "/org-openroadm-network-media-channel-interfaces:nmc-ctp/frequency"
                                        : "/org-openroadm-media-channel-interfaces:mc-ttp/min-freq"),
                               "wavelength-in-use", "invalid-value", mine.name});
                break; // one collision per interface is enough to name
            }
        }
    }
}

void portRules(const Device& d, std::vector<Violation>& out) {
    for (const auto& [name, i] : d.interfaces) {
        if (i.supportingPort.empty()) {
            continue;
        }
        if (i.supportingCircuitPack.empty()) {
            out.push_back({"interface " + name + " names port " + i.supportingPort + " but no circuit-pack",
                           interfacePath(name) + "/supporting-port", "port-without-circuit-pack",
                           "invalid-value", name});
            continue;
        }
        const auto cp = d.circuitPacks.find(i.supportingCircuitPack);
        if (cp == d.circuitPacks.end()) {
            out.push_back(
                {"interface " + name + ": circuit-pack " + i.supportingCircuitPack + " does not exist",
                 interfacePath(name) + "/supporting-circuit-pack-name", "circuit-pack-not-found",
                 "invalid-value", name});
        } else if (!cp->second.ports.contains(i.supportingPort)) {
            out.push_back({"interface " + name + ": circuit-pack " + i.supportingCircuitPack +
                               " has no port " + i.supportingPort,
                           interfacePath(name) + "/supporting-port", "port-not-found", "invalid-value",
                           name});
        }
    }
}

/// Whether the change touched the item a violation is about.
bool touched(const Device& before, const Device& after, const std::string& subject) {
    auto sameIf = [](const Interface& a, const Interface& b) {
        return a.type == b.type && a.supportingInterface == b.supportingInterface &&
               a.supportingCircuitPack == b.supportingCircuitPack && a.supportingPort == b.supportingPort &&
               a.frequency == b.frequency && a.width == b.width && a.minFreq == b.minFreq &&
               a.maxFreq == b.maxFreq;
    };
    if (const auto a = after.interfaces.find(subject); a != after.interfaces.end()) {
        const auto b = before.interfaces.find(subject);
        return b == before.interfaces.end() || !sameIf(a->second, b->second);
    }
    if (const auto a = after.connections.find(subject); a != after.connections.end()) {
        const auto b = before.connections.find(subject);
        return b == before.connections.end() || a->second.src != b->second.src ||
               a->second.dst != b->second.dst;
    }
    return false;
}

} // namespace

std::vector<Violation> violations(const Device& device) {
    std::vector<Violation> out;
    connectionRules(device, out);
    wavelengthRules(device, out);
    portRules(device, out);
    return out;
}

std::optional<Violation> check(const Device& before, const Device& after) {
    // Rule 4: deleting a circuit-pack that interfaces sit on while it is not out of service.
    for (const auto& [name, cp] : before.circuitPacks) {
        if (after.circuitPacks.contains(name) || cp.admin == "outOfService") {
            continue;
        }
        std::vector<std::string> users;
        for (const auto& [ifName, i] : before.interfaces) {
            if (i.supportingCircuitPack == name) {
                users.push_back(ifName);
            }
        }
        if (!users.empty()) {
            std::string list;
            for (const auto& u : users) {
                list += (list.empty() ? "" : ", ") + u;
            }
            return Violation{"circuit-pack " + name + " is in use (interface" +
                                 (users.size() > 1 ? "s " : " ") + list + ") and " +
                                 (cp.admin.empty() ? "not out of service" : cp.admin) +
                                 ": set it outOfService first",
                             circuitPackPath(name), "circuit-pack-in-use", "in-use", name};
        }
    }
    const std::vector<Violation> old = violations(before);
    std::optional<Violation> first;
    for (auto& v : violations(after)) {
        if (std::find(old.begin(), old.end(), v) != old.end()) {
            continue;
        }
        if (touched(before, after, v.subject)) {
            return v;
        }
        if (!first) {
            first = v;
        }
    }
    return first;
}

} // namespace ncstore::roadm
