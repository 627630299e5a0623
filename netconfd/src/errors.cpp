#include "errors.hpp"

#include <nc_server.h>

#include <map>
#include <regex>

namespace ncstore::netconfd {

namespace {

const std::map<std::string, NC_ERR>& tagTable() {
    static const std::map<std::string, NC_ERR> table{
        {"in-use", NC_ERR_IN_USE},
        {"invalid-value", NC_ERR_INVALID_VALUE},
        {"too-big", NC_ERR_TOO_BIG},
        {"missing-attribute", NC_ERR_MISSING_ATTR},
        {"bad-attribute", NC_ERR_BAD_ATTR},
        {"unknown-attribute", NC_ERR_UNKNOWN_ATTR},
        {"missing-element", NC_ERR_MISSING_ELEM},
        {"bad-element", NC_ERR_BAD_ELEM},
        {"unknown-element", NC_ERR_UNKNOWN_ELEM},
        {"unknown-namespace", NC_ERR_UNKNOWN_NS},
        {"access-denied", NC_ERR_ACCESS_DENIED},
        {"lock-denied", NC_ERR_LOCK_DENIED},
        {"resource-denied", NC_ERR_RES_DENIED},
        {"rollback-failed", NC_ERR_ROLLBACK_FAILED},
        {"data-exists", NC_ERR_DATA_EXISTS},
        {"data-missing", NC_ERR_DATA_MISSING},
        {"operation-not-supported", NC_ERR_OP_NOT_SUPPORTED},
        {"operation-failed", NC_ERR_OP_FAILED},
        {"malformed-message", NC_ERR_MALFORMED_MSG},
    };
    return table;
}

NC_ERR_TYPE ncType(ErrorType t) {
    switch (t) {
    case ErrorType::Transport:
        return NC_ERR_TYPE_TRAN;
    case ErrorType::Rpc:
        return NC_ERR_TYPE_RPC;
    case ErrorType::Protocol:
        return NC_ERR_TYPE_PROT;
    case ErrorType::Application:
        break;
    }
    return NC_ERR_TYPE_APP;
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
    RpcError out(ds::toString(e.tag()), ErrorType::Application, e.what());
    out.path = dataPathOf(e.path());
    out.appTag = e.appTag();
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

RpcError fromLibyangItem(const ly_err_item& item, const std::string& fallbackTag) {
    const std::string msg = item.msg ? item.msg : "invalid input";
    const std::string path = dataPathOf(item.path ? item.path : "");
    std::smatch m;
    auto make = [&](const std::string& tag) {
        RpcError e(tag, ErrorType::Application, msg);
        e.path = path;
        if (item.apptag) {
            e.appTag = item.apptag;
        }
        return e;
    };

    static const std::regex unknownNs(R"(No module with namespace \"([^\"]*)\")");
    static const std::regex unknownPrefix(R"(Unknown XML prefix \"([^\"]*)\")");
    static const std::regex notFound(R"(Node \"([^\"]*)\" not found)");
    static const std::regex missingKey(R"(missing its key \"([^\"]*)\")");
    static const std::regex anyNode(R"(\"([A-Za-z_][A-Za-z0-9_.-]*)\")");

    if (std::regex_search(msg, m, unknownNs)) {
        auto e = make("unknown-namespace");
        e.badNamespace = m[1];
        e.badElement = path.empty() ? std::string("config") : lastNodeName(path);
        return e;
    }
    if (std::regex_search(msg, m, unknownPrefix)) {
        auto e = make("unknown-namespace");
        e.badNamespace = m[1];
        e.badElement = path.empty() ? std::string("config") : lastNodeName(path);
        return e;
    }
    if (std::regex_search(msg, m, notFound)) {
        auto e = make("unknown-element");
        e.badElement = m[1];
        return e;
    }
    if (std::regex_search(msg, m, missingKey)) {
        auto e = make("missing-element");
        e.badElement = m[1];
        return e;
    }
    if (msg.find("Mandatory node") != std::string::npos) {
        auto e = make("missing-element");
        if (std::regex_search(msg, m, anyNode)) {
            e.badElement = m[1];
        }
        return e;
    }
    if (msg.find("Duplicate instance") != std::string::npos) {
        auto e = make("bad-element");
        e.badElement = lastNodeName(path);
        return e;
    }
    if (msg.find("Invalid") != std::string::npos || msg.find("does not satisfy") != std::string::npos ||
        msg.find("Unsatisfied") != std::string::npos || item.vecode == LYVE_DATA) {
        auto e = make("invalid-value");
        if (!path.empty()) {
            e.badElement = lastNodeName(path);
        }
        return e;
    }
    if (item.vecode == LYVE_SYNTAX || item.vecode == LYVE_SYNTAX_XML || item.vecode == LYVE_SYNTAX_JSON) {
        return make("malformed-message");
    }
    auto e = make(fallbackTag);
    if (!path.empty()) {
        e.badElement = lastNodeName(path);
    }
    return e;
}

RpcError fromLibyang(const ly_ctx* ctx, const std::string& fallbackTag) {
    const ly_err_item* item = ly_err_last(ctx);
    if (!item) {
        return RpcError(fallbackTag, ErrorType::Application, "invalid input");
    }
    return fromLibyangItem(*item, fallbackTag);
}

lyd_node* toNcErr(const ly_ctx* ctx, const RpcError& e) {
    const auto& table = tagTable();
    const auto it = table.find(e.tag);
    const NC_ERR tag = it == table.end() ? NC_ERR_OP_FAILED : it->second;
    const NC_ERR_TYPE type = ncType(e.type);
    const char* elem = e.badElement.empty() ? nullptr : e.badElement.c_str();
    lyd_node* err = nullptr;
    switch (tag) {
    case NC_ERR_MISSING_ATTR:
    case NC_ERR_BAD_ATTR:
    case NC_ERR_UNKNOWN_ATTR:
        err = nc_err(ctx, tag, type, e.badAttribute.c_str(), elem ? elem : "");
        break;
    case NC_ERR_MISSING_ELEM:
    case NC_ERR_BAD_ELEM:
    case NC_ERR_UNKNOWN_ELEM:
        err = nc_err(ctx, tag, type, elem ? elem : "");
        break;
    case NC_ERR_UNKNOWN_NS:
        err = nc_err(ctx, tag, type, elem ? elem : "", e.badNamespace.c_str());
        break;
    case NC_ERR_LOCK_DENIED:
        err = nc_err(ctx, tag, e.sessionId);
        break;
    case NC_ERR_DATA_EXISTS:
    case NC_ERR_DATA_MISSING:
    case NC_ERR_MALFORMED_MSG:
        err = nc_err(ctx, tag);
        break;
    default:
        err = nc_err(ctx, tag, type);
        if (e.sessionId != 0 && tag == NC_ERR_IN_USE) {
            nc_err_set_sid(err, e.sessionId);
        }
        break;
    }
    if (!err) {
        err = nc_err(ctx, NC_ERR_OP_FAILED, NC_ERR_TYPE_APP);
    }
    if (err && e.what()[0] != '\0') {
        nc_err_set_msg(err, e.what(), "en");
    }
    if (err && !e.path.empty()) {
        nc_err_set_path(err, e.path.c_str());
    }
    if (err && !e.appTag.empty()) {
        nc_err_set_app_tag(err, e.appTag.c_str());
    }
    if (err && elem && tag != NC_ERR_MISSING_ELEM && tag != NC_ERR_BAD_ELEM && tag != NC_ERR_UNKNOWN_ELEM &&
        tag != NC_ERR_UNKNOWN_NS && tag != NC_ERR_MISSING_ATTR && tag != NC_ERR_BAD_ATTR &&
        tag != NC_ERR_UNKNOWN_ATTR) {
        nc_err_add_bad_elem(err, elem);
    }
    return err;
}

} // namespace ncstore::netconfd
