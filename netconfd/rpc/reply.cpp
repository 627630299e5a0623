#include "reply.hpp"

#include "hello.hpp"

#include <algorithm>
#include <cstring>

namespace ncstore::netconfd {

namespace {

/// The attributes of the <rpc> element, each with the declaration of its prefix.
void appendEnvelopeAttributes(std::string& out, const lyd_node* envelope) {
    if (!envelope || envelope->schema) {
        return;
    }
    std::vector<std::string_view> declared;
    for (const lyd_attr* a = reinterpret_cast<const lyd_node_opaq*>(envelope)->attr; a; a = a->next) {
        if (!a->name.name) {
            continue;
        }
        out += ' ';
        const char* prefix = a->name.prefix;
        if (prefix && *prefix) {
            if (std::strcmp(prefix, "xml") != 0 && a->name.module_ns &&
                std::find(declared.begin(), declared.end(), prefix) == declared.end()) {
                declared.emplace_back(prefix);
                out += "xmlns:";
                out += prefix;
                out += "=\"";
                appendXmlEscaped(out, a->name.module_ns);
                out += "\" ";
            }
            out += prefix;
            out += ':';
        }
        out += a->name.name;
        out += "=\"";
        appendXmlEscaped(out, a->value ? a->value : "");
        out += '"';
    }
}

} // namespace

Reply Reply::text(const std::string& content, std::string ns) {
    Reply r;
    r.kind = Kind::Data;
    r.data = xmlEscape(content);
    r.dataNamespace = std::move(ns);
    return r;
}

void renderReply(std::string& out, const lyd_node* envelope, const Reply& reply, const ly_ctx* ctx) {
    out += "<rpc-reply xmlns=\"";
    out += kNetconfNs;
    out += '"';
    appendEnvelopeAttributes(out, envelope);
    out += '>';
    switch (reply.kind) {
    case Reply::Kind::Ok:
        out += "<ok/>";
        break;
    case Reply::Kind::Output:
        out += reply.data.empty() ? "<ok/>" : reply.data; // RFC 7950 7.14.4: no output, <ok/>
        break;
    case Reply::Kind::Data:
        if (reply.dataNamespace.empty()) {
            out += reply.data.empty() ? "<data/>" : "<data>";
        } else {
            out += "<data xmlns=\"";
            appendXmlEscaped(out, reply.dataNamespace);
            out += reply.data.empty() ? "\"/>" : "\">";
        }
        if (!reply.data.empty()) {
            out += reply.data;
            out += "</data>";
        }
        break;
    case Reply::Kind::Error:
        for (const auto& e : reply.errors) {
            appendRpcError(out, e, ctx);
        }
        break;
    }
    out += "</rpc-reply>";
}

} // namespace ncstore::netconfd
