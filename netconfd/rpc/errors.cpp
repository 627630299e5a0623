#include "errors.hpp"

#include "hello.hpp"

#include <algorithm>
#include <map>
#include <regex>
#include <vector>

namespace ncstore::netconfd {

namespace {

const char* typeName(ErrorType t) {
    switch (t) {
    case ErrorType::Transport:
        return "transport";
    case ErrorType::Rpc:
        return "rpc";
    case ErrorType::Protocol:
        return "protocol";
    case ErrorType::Application:
        break;
    }
    return "application";
}

/// RFC 6241 Appendix A fixes the error-type of some tags whatever the source.
ErrorType fixedType(ErrorTag tag, ErrorType given) {
    if (tag == ErrorTag::LockDenied) {
        return ErrorType::Protocol;
    }
    if (tag == ErrorTag::DataExists || tag == ErrorTag::DataMissing) {
        return ErrorType::Application;
    }
    if (tag == ErrorTag::MalformedMessage) {
        return ErrorType::Rpc;
    }
    return given;
}

/// xmlns declarations for the module-name prefixes of an error-path ("/ietf-interfaces:a/b"),
/// which RFC 6241 4.3 interprets with the namespaces in scope on the rpc-error.
std::string pathNamespaces(const std::string& path, const ly_ctx* ctx) {
    std::string out;
    std::vector<std::string> seen;
    static const std::regex prefix(R"(([A-Za-z_][A-Za-z0-9_.-]*):)");
    for (auto it = std::sregex_iterator(path.begin(), path.end(), prefix); it != std::sregex_iterator();
         ++it) {
        const std::string name = (*it)[1];
        if (std::find(seen.begin(), seen.end(), name) != seen.end()) {
            continue;
        }
        seen.push_back(name);
        if (const lys_module* mod = ctx ? ly_ctx_get_module_implemented(ctx, name.c_str()) : nullptr) {
            out += " xmlns:" + name + "=\"";
            appendXmlEscaped(out, mod->ns);
            out += '"';
        }
    }
    return out;
}

/// The last segment's node name of a data path, without prefix and predicates.
std::string lastNodeName(const std::string& path) {
    std::string seg = path;
    // Strip predicates first: keys may contain '/'.
    std::string noPred;
    int depth = 0;
    char quote = 0;
    for (char c : seg) {
        if (quote) {
            if (c == quote) {
                quote = 0;
            }
            continue;
        }
        if (depth > 0 && (c == '\'' || c == '"')) {
            quote = c;
            continue;
        }
        if (c == '[') {
            ++depth;
            continue;
        }
        if (c == ']') {
            --depth;
            continue;
        }
        if (depth == 0) {
            noPred.push_back(c);
        }
    }
    const auto slash = noPred.rfind('/');
    std::string last = slash == std::string::npos ? noPred : noPred.substr(slash + 1);
    const auto colon = last.find(':');
    return colon == std::string::npos ? last : last.substr(colon + 1);
}

} // namespace

std::string dataPathOf(const std::string& location) {
    // libyang 2.1 reports `Data location "/a:b/c", line number 5.` or `Line number 1.`
    static const std::regex located(R"((?:Data|Schema) location \"([^\"]*)\")");
    std::smatch m;
    if (std::regex_search(location, m, located)) {
        return m[1];
    }
    return location.empty() || location[0] != '/' ? std::string() : location;
}

std::string elementDeclaring(const std::string& xml, const std::string& ns) {
    for (const char quote : {'"', '\''}) {
        const std::string decl = std::string("=") + quote + ns + quote;
        for (auto at = xml.find(decl); at != std::string::npos; at = xml.find(decl, at + 1)) {
            // The attribute must be a namespace declaration: xmlns or xmlns:prefix.
            const auto nameStart = xml.find_last_of(" \t\r\n", at);
            if (nameStart == std::string::npos || xml.compare(nameStart + 1, 5, "xmlns") != 0) {
                continue;
            }
            const auto open = xml.rfind('<', at);
            if (open == std::string::npos) {
                continue;
            }
            const auto end = xml.find_first_of(" \t\r\n/>", open);
            std::string name =
                xml.substr(open + 1, end == std::string::npos ? std::string::npos : end - open - 1);
            const auto colon = name.find(':');
            return colon == std::string::npos ? name : name.substr(colon + 1);
        }
    }
    return {};
}

RpcError fromDatastore(const ds::Error& e) {
    RpcError out(e.tag(), ErrorType::Application, e.what());
    out.path = dataPathOf(e.path());
    out.appTag = e.appTag();
    out.info = e.info();
    switch (e.tag()) {
    case ds::ErrorTag::MissingElement:
    case ds::ErrorTag::BadElement:
    case ds::ErrorTag::UnknownElement:
    case ds::ErrorTag::UnknownNamespace:
        if (!e.path().empty()) {
            out.badElement = lastNodeName(e.path());
        }
        break;
    default:
        break;
    }
    return out;
}

RpcError fromLibyangItem(const ly_err_item& item, ErrorTag fallbackTag) {
    const std::string msg = item.msg ? item.msg : "invalid input";
    const std::string path = dataPathOf(item.path ? item.path : "");
    std::smatch m;
    auto make = [&](ErrorTag tag) {
        RpcError e(tag, ErrorType::Application, msg);
        e.path = path;
        if (item.apptag) {
            e.appTag = item.apptag;
        }
        return e;
    };

    if (msg.find("maximum number of open elements") != std::string::npos) {
        // libyang's nesting limit: the document is refused as a whole, like broken XML.
        RpcError e = RpcError::malformedMessage("the XML is nested too deeply: " + msg);
        e.path = path;
        return e;
    }
    static const std::regex unknownNs(R"(No module with namespace \"([^\"]*)\")");
    static const std::regex unknownPrefix(R"(Unknown XML prefix \"([^\"]*)\")");
    static const std::regex notFound(R"(Node \"([^\"]*)\" not found)");
    static const std::regex missingKey(R"(missing its key \"([^\"]*)\")");
    static const std::regex anyNode(R"(\"([A-Za-z_][A-Za-z0-9_.-]*)\")");

    if (std::regex_search(msg, m, unknownNs) && m[1] == "(null)") {
        // libyang's words for an element whose prefix no xmlns declares: not namespace-well-formed.
        auto e = RpcError::malformedMessage("an element uses a namespace prefix that is not declared");
        e.path = path;
        return e;
    }
    if (std::regex_search(msg, m, unknownNs)) {
        auto e = make(ErrorTag::UnknownNamespace);
        e.badNamespace = m[1];
        e.badElement = path.empty() ? std::string("config") : lastNodeName(path);
        return e;
    }
    if (std::regex_search(msg, m, unknownPrefix)) {
        auto e =
            RpcError::malformedMessage("the namespace prefix \"" + std::string(m[1]) + "\" is not declared");
        e.path = path;
        return e;
    }
    if (std::regex_search(msg, m, notFound)) {
        auto e = make(ErrorTag::UnknownElement);
        e.badElement = m[1];
        return e;
    }
    if (std::regex_search(msg, m, missingKey)) {
        auto e = make(ErrorTag::MissingElement);
        e.badElement = m[1];
        return e;
    }
    if (msg.find("Mandatory node") != std::string::npos) {
        auto e = make(ErrorTag::MissingElement);
        if (std::regex_search(msg, m, anyNode)) {
            e.badElement = m[1];
        }
        return e;
    }
    if (msg.find("Duplicate instance") != std::string::npos) {
        auto e = make(ErrorTag::BadElement);
        e.badElement = lastNodeName(path);
        return e;
    }
    if (msg.find("Invalid") != std::string::npos || msg.find("does not satisfy") != std::string::npos ||
        msg.find("Storing value failed") != std::string::npos ||
        msg.find("Unsatisfied") != std::string::npos || item.vecode == LYVE_DATA) {
        auto e = make(ErrorTag::InvalidValue);
        if (!path.empty()) {
            e.badElement = lastNodeName(path);
        }
        return e;
    }
    if (item.vecode == LYVE_SYNTAX || item.vecode == LYVE_SYNTAX_XML || item.vecode == LYVE_SYNTAX_JSON) {
        return make(ErrorTag::MalformedMessage);
    }
    auto e = make(fallbackTag);
    if (!path.empty()) {
        e.badElement = lastNodeName(path);
    }
    return e;
}

RpcError fromLibyang(const ly_ctx* ctx, ErrorTag fallbackTag) {
    const ly_err_item* item = ly_err_last(ctx);
    if (!item) {
        return RpcError(fallbackTag, ErrorType::Application, "invalid input");
    }
    return fromLibyangItem(*item, fallbackTag);
}

void appendRpcError(std::string& out, const RpcError& e, const ly_ctx* ctx) {
    const ErrorTag tag = e.tag;
    out += "<rpc-error>";
    appendElement(out, "error-type", typeName(fixedType(tag, e.type)));
    appendElement(out, "error-tag", toString(tag));
    appendElement(out, "error-severity", "error");
    if (!e.appTag.empty()) {
        appendElement(out, "error-app-tag", e.appTag);
    }
    if (!e.path.empty()) {
        out += "<error-path" + pathNamespaces(e.path, ctx) + ">";
        appendXmlEscaped(out, e.path);
        out += "</error-path>";
    }
    if (e.what()[0] != '\0') {
        out += "<error-message xml:lang=\"en\">";
        appendXmlEscaped(out, e.what());
        out += "</error-message>";
    }
    std::string info;
    const bool attributeTag = tag == ErrorTag::MissingAttribute || tag == ErrorTag::BadAttribute ||
                              tag == ErrorTag::UnknownAttribute;
    if (attributeTag) {
        appendElement(info, "bad-attribute", e.badAttribute);
    }
    if (!e.badElement.empty() || attributeTag || tag == ErrorTag::MissingElement ||
        tag == ErrorTag::BadElement || tag == ErrorTag::UnknownElement || tag == ErrorTag::UnknownNamespace) {
        appendElement(info, "bad-element", e.badElement);
    }
    if (tag == ErrorTag::UnknownNamespace) {
        appendElement(info, "bad-namespace", e.badNamespace);
    }
    if (tag == ErrorTag::LockDenied || (tag == ErrorTag::InUse && e.sessionId != 0)) {
        appendElement(info, "session-id", std::to_string(e.sessionId));
    }
    info += e.info; // an application's error-info, checked as XML where it came in
    if (!info.empty()) {
        out += "<error-info>" + info + "</error-info>";
    }
    out += "</rpc-error>";
}

} // namespace ncstore::netconfd
