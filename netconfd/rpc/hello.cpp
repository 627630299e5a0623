#include "hello.hpp"

#include "ncstore/yang.hpp"

#include <algorithm>
#include <cstring>

namespace ncstore::netconfd {

namespace {

bool featureEnabled(const lys_module* mod, const char* feature) {
    return lys_feature_value(mod, feature) == LY_SUCCESS;
}

/// The enabled features of `mod`, comma separated.
std::string enabledFeatures(const lys_module* mod) {
    std::string out;
    if (!mod->parsed) {
        return out;
    }
    const lysp_feature* f = nullptr;
    std::uint32_t idx = 0;
    while ((f = lysp_feature_next(f, mod->parsed, &idx))) {
        if (f->flags & LYS_FENABLED) {
            out += out.empty() ? "" : ",";
            out += f->name;
        }
    }
    return out;
}

std::string deviations(const lys_module* mod) {
    std::string out;
    LY_ARRAY_COUNT_TYPE i;
    LY_ARRAY_FOR(mod->deviated_by, i) {
        out += out.empty() ? "" : ",";
        out += mod->deviated_by[i]->name;
    }
    return out;
}

/// The local name and namespace of an opaque XML element.
bool isElement(const lyd_node* node, const char* name) {
    if (!node || node->schema) {
        return false;
    }
    const auto* o = reinterpret_cast<const lyd_node_opaq*>(node);
    return o->format == LY_VALUE_XML && o->name.name && std::strcmp(o->name.name, name) == 0 &&
           o->name.module_ns && std::strcmp(o->name.module_ns, kNetconfNs) == 0;
}

std::string_view trimmed(std::string_view s) {
    const auto first = s.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos) {
        return {};
    }
    return s.substr(first, s.find_last_not_of(" \t\r\n") - first + 1);
}

} // namespace

std::vector<std::string> serverCapabilities(const ly_ctx* ctx) {
    std::vector<std::string> caps = {kBase10, kBase11};
    if (const lys_module* nc = ly_ctx_get_module_implemented(ctx, "ietf-netconf")) {
        static const std::pair<const char*, const char*> protocol[] = {
            {"writable-running", "urn:ietf:params:netconf:capability:writable-running:1.0"},
            {"candidate", "urn:ietf:params:netconf:capability:candidate:1.0"},
            {"confirmed-commit", "urn:ietf:params:netconf:capability:confirmed-commit:1.1"},
            {"rollback-on-error", "urn:ietf:params:netconf:capability:rollback-on-error:1.0"},
            {"validate", "urn:ietf:params:netconf:capability:validate:1.1"},
            {"startup", "urn:ietf:params:netconf:capability:startup:1.0"},
            {"xpath", "urn:ietf:params:netconf:capability:xpath:1.0"},
        };
        for (const auto& [feature, capability] : protocol) {
            if (featureEnabled(nc, feature)) {
                caps.emplace_back(capability);
            }
        }
    }
    if (ly_ctx_get_module_implemented(ctx, "notifications")) {
        // RFC 5277: the NETCONF stream, and RPCs accepted while a subscription is active.
        caps.emplace_back("urn:ietf:params:netconf:capability:notification:1.0");
        caps.emplace_back("urn:ietf:params:netconf:capability:interleave:1.0");
    }
    if (ly_ctx_get_module_implemented(ctx, "ietf-netconf-with-defaults")) {
        caps.emplace_back("urn:ietf:params:netconf:capability:with-defaults:1.0?basic-mode=explicit"
                          "&also-supported=report-all,report-all-tagged,trim");
    }
    if (const lys_module* yl = ly_ctx_get_module_implemented(ctx, "ietf-yang-library")) {
        caps.push_back(std::string("urn:ietf:params:netconf:capability:yang-library:1.1?revision=") +
                       (yl->revision ? yl->revision : "") +
                       "&content-id=" + std::to_string(ly_ctx_get_change_count(ctx)));
    }
    std::uint32_t idx = 0;
    while (const lys_module* mod = ly_ctx_get_module_iter(ctx, &idx)) {
        // YANG 1.1 modules are announced only in the YANG library (RFC 7950 section 5.6.4).
        if (!mod->parsed || mod->parsed->version == LYS_VERSION_1_1) {
            continue;
        }
        std::string cap = std::string(mod->ns) + "?module=" + mod->name;
        if (mod->revision) {
            cap += std::string("&revision=") + mod->revision;
        }
        if (mod->implemented) {
            if (auto features = enabledFeatures(mod); !features.empty()) {
                cap += "&features=" + features;
            }
            if (auto devs = deviations(mod); !devs.empty()) {
                cap += "&deviations=" + devs;
            }
        }
        caps.push_back(std::move(cap));
    }
    return caps;
}

std::string serverHello(const std::vector<std::string>& capabilities, std::uint32_t sessionId) {
    std::string out = std::string("<hello xmlns=\"") + kNetconfNs + "\"><capabilities>";
    for (const auto& c : capabilities) {
        out += "<capability>";
        appendXmlEscaped(out, c);
        out += "</capability>";
    }
    out += "</capabilities><session-id>" + std::to_string(sessionId) + "</session-id></hello>";
    return out;
}

ClientHello parseClientHello(const ly_ctx* ctx, std::string_view message) {
    // libyang's XML parser refuses DTDs, entities other than the predefined ones, invalid
    // UTF-8 and deep nesting: no extra guard is needed for a hostile <hello>.
    const std::string text(message);
    lyd_node* raw = nullptr;
    if (lyd_parse_data_mem(ctx, text.c_str(), LYD_XML, LYD_PARSE_ONLY | LYD_PARSE_OPAQ, 0, &raw) !=
        LY_SUCCESS) {
        const Tree partial{raw};
        throw HelloError("the <hello> is not well-formed XML: " + lastError(ctx));
    }
    const Tree tree{raw};
    if (!isElement(tree.get(), "hello") || tree->next) {
        throw HelloError("expected a <hello> in the NETCONF base namespace");
    }
    ClientHello hello;
    bool sawCapabilities = false;
    for (const lyd_node* child = lyd_child(tree.get()); child; child = child->next) {
        if (isElement(child, "session-id")) {
            throw HelloError("a client's <hello> must not carry a session-id (RFC 6241 8.1)");
        }
        if (!isElement(child, "capabilities")) {
            continue;
        }
        sawCapabilities = true;
        for (const lyd_node* c = lyd_child(child); c; c = c->next) {
            if (isElement(c, "capability")) {
                const auto* o = reinterpret_cast<const lyd_node_opaq*>(c);
                hello.capabilities.emplace_back(trimmed(o->value ? o->value : ""));
            }
        }
    }
    if (!sawCapabilities) {
        throw HelloError("the <hello> has no <capabilities>");
    }
    const auto has = [&](const char* cap) {
        return std::find(hello.capabilities.begin(), hello.capabilities.end(), cap) !=
               hello.capabilities.end();
    };
    hello.base11 = has(kBase11);
    if (!hello.base11 && !has(kBase10)) {
        throw HelloError("the client offers neither base:1.0 nor base:1.1");
    }
    return hello;
}

} // namespace ncstore::netconfd
