#include "device.hpp"

#include <cstdlib>
#include <cstring>

namespace ncstore::roadm {

namespace {

bool named(const lyd_node* n, const char* name) {
    return std::strcmp(LYD_NAME(n), name) == 0;
}

const lyd_node* child(const lyd_node* parent, const char* name) {
    for (const lyd_node* c = lyd_child(parent); c; c = c->next) {
        if (named(c, name)) {
            return c;
        }
    }
    return nullptr;
}

std::string text(const lyd_node* parent, const char* name) {
    const lyd_node* c = child(parent, name);
    const char* v = c ? lyd_get_value(c) : nullptr;
    return v ? v : "";
}

/// An identityref's canonical value is "module:identity": rules compare identities by name.
std::string identity(const std::string& value) {
    const auto colon = value.find(':');
    return colon == std::string::npos ? value : value.substr(colon + 1);
}

std::optional<double> number(const lyd_node* parent, const char* name) {
    const std::string v = text(parent, name);
    if (v.empty()) {
        return std::nullopt;
    }
    return std::strtod(v.c_str(), nullptr);
}

template <typename F> void each(const lyd_node* parent, const char* name, F f) {
    for (const lyd_node* c = lyd_child(parent); c; c = c->next) {
        if (named(c, name)) {
            f(c);
        }
    }
}

std::vector<std::string> packsOf(const lyd_node* n) {
    std::vector<std::string> out;
    each(n, "circuit-packs", [&](const lyd_node* c) { out.push_back(text(c, "circuit-pack-name")); });
    return out;
}

PortRef portRef(const lyd_node* n) {
    return {text(n, "circuit-pack-name"), text(n, "port-name")};
}

} // namespace

Device deviceFrom(const lyd_node* forest) {
    Device d;
    const lyd_node* top = forest;
    while (top && top->prev->next) {
        top = top->prev; // the first sibling
    }
    for (; top; top = top->next) {
        if (named(top, "org-openroadm-device")) {
            break;
        }
    }
    if (!top) {
        return d;
    }
    if (const lyd_node* info = child(top, "info")) {
        d.nodeId = text(info, "node-id");
        d.nodeType = text(info, "node-type");
    }
    each(top, "shelves", [&](const lyd_node* n) {
        Shelf s{text(n, "shelf-name"), text(n, "rack"), text(n, "administrative-state")};
        d.shelves[s.name] = s;
    });
    each(top, "circuit-packs", [&](const lyd_node* n) {
        CircuitPack cp;
        cp.name = text(n, "circuit-pack-name");
        cp.type = text(n, "circuit-pack-type");
        cp.admin = text(n, "administrative-state");
        cp.shelf = text(n, "shelf");
        cp.slot = text(n, "slot");
        cp.subSlot = text(n, "subSlot");
        if (const lyd_node* parent = child(n, "parent-circuit-pack")) {
            cp.parent = text(parent, "circuit-pack-name");
        }
        each(n, "ports", [&](const lyd_node* p) {
            Port port{text(p, "port-name"), text(p, "administrative-state"), text(p, "port-qual"),
                      text(p, "logical-connection-point")};
            cp.ports[port.name] = port;
        });
        d.circuitPacks[cp.name] = std::move(cp);
    });
    each(top, "interface", [&](const lyd_node* n) {
        Interface i;
        i.name = text(n, "name");
        i.type = identity(text(n, "type"));
        i.admin = text(n, "administrative-state");
        i.supportingInterface = text(n, "supporting-interface");
        i.supportingCircuitPack = text(n, "supporting-circuit-pack-name");
        i.supportingPort = text(n, "supporting-port");
        if (const lyd_node* nmc = child(n, "nmc-ctp")) {
            i.frequency = number(nmc, "frequency");
            i.width = number(nmc, "width");
        }
        if (const lyd_node* mc = child(n, "mc-ttp")) {
            i.minFreq = number(mc, "min-freq");
            i.maxFreq = number(mc, "max-freq");
        }
        d.interfaces[i.name] = std::move(i);
    });
    each(top, "roadm-connections", [&](const lyd_node* n) {
        RoadmConnection c;
        c.name = text(n, "connection-name");
        if (const lyd_node* s = child(n, "source")) {
            c.src = text(s, "src-if");
        }
        if (const lyd_node* t = child(n, "destination")) {
            c.dst = text(t, "dst-if");
        }
        d.connections[c.name] = std::move(c);
    });
    each(top, "degree", [&](const lyd_node* n) {
        Degree g{static_cast<std::uint16_t>(std::atoi(text(n, "degree-number").c_str())), packsOf(n)};
        d.degrees[g.number] = std::move(g);
    });
    each(top, "shared-risk-group", [&](const lyd_node* n) {
        Srg s{static_cast<std::uint16_t>(std::atoi(text(n, "srg-number").c_str())), packsOf(n)};
        d.srgs[s.number] = std::move(s);
    });
    each(top, "physical-link", [&](const lyd_node* n) {
        PhysicalLink l;
        l.name = text(n, "physical-link-name");
        if (const lyd_node* s = child(n, "source")) {
            l.source = portRef(s);
        }
        if (const lyd_node* t = child(n, "destination")) {
            l.destination = portRef(t);
        }
        d.physicalLinks.push_back(std::move(l));
    });
    return d;
}

std::optional<std::uint16_t> Device::degreeOf(const std::string& circuitPack) const {
    for (const auto& [number, degree] : degrees) {
        for (const auto& cp : degree.circuitPacks) {
            if (cp == circuitPack) {
                return number;
            }
        }
    }
    return std::nullopt;
}

std::optional<PortRef> Device::portOf(const std::string& interface) const {
    std::string name = interface;
    for (int depth = 0; depth < 16; ++depth) {
        const auto it = interfaces.find(name);
        if (it == interfaces.end()) {
            return std::nullopt;
        }
        if (!it->second.supportingCircuitPack.empty() && !it->second.supportingPort.empty()) {
            return PortRef{it->second.supportingCircuitPack, it->second.supportingPort};
        }
        if (it->second.supportingInterface.empty()) {
            return std::nullopt;
        }
        name = it->second.supportingInterface;
    }
    return std::nullopt;
}

std::string quoted(const std::string& value) {
    return value.find('\'') == std::string::npos ? "'" + value + "'" : "\"" + value + "\"";
}

std::string circuitPackPath(const std::string& name) {
    return std::string(kDevice) + "/circuit-packs[circuit-pack-name=" + quoted(name) + "]";
}

std::string portPath(const std::string& circuitPack, const std::string& port) {
    return circuitPackPath(circuitPack) + "/ports[port-name=" + quoted(port) + "]";
}

std::string interfacePath(const std::string& name) {
    return std::string(kDevice) + "/interface[name=" + quoted(name) + "]";
}

std::string connectionPath(const std::string& name) {
    return std::string(kDevice) + "/roadm-connections[connection-name=" + quoted(name) + "]";
}

std::string operFromAdmin(const std::string& admin) {
    if (admin == "outOfService") {
        return "outOfService";
    }
    if (admin == "maintenance") {
        return "degraded";
    }
    return "inService";
}

} // namespace ncstore::roadm
