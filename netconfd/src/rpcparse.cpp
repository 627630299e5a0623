#include "rpcparse.hpp"

#include "editcontent.hpp"
#include "inlineconfig.hpp"

#include "ncstore/log.hpp"

#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <regex>
#include <string_view>
#include <utility>

namespace ncstore::netconfd {

namespace {

using ParseOpFn = LY_ERR (*)(const ly_ctx*, lyd_node*, ly_in*, LYD_FORMAT, enum lyd_type, lyd_node**,
                             lyd_node**);

/// libyang's own lyd_parse_op, past our definition in the symbol lookup order.
ParseOpFn realParseOp() {
    static const ParseOpFn fn = [] {
        void* sym = dlsym(RTLD_NEXT, "lyd_parse_op");
        if (!sym) {
            // Cannot happen while libyang is linked in; there is nothing to fall back to.
            NCS_LOG(fatal) << "lyd_parse_op not found in libyang: " << dlerror();
            std::abort();
        }
        return reinterpret_cast<ParseOpFn>(sym);
    }();
    return fn;
}

std::atomic<const ly_ctx*> intercepted{nullptr};

struct PendingError {
    const lyd_node* op = nullptr;
    std::optional<RpcError> error;
};
thread_local PendingError pending;

struct PendingConfig {
    const lyd_node* config = nullptr; ///< the anyxml node holding the placeholder
    ParsedConfig parsed;
};
thread_local PendingConfig pendingConfig;

/// Stands in the message for a <config> content parsed apart. An element of a namespace no
/// module has: libyang keeps it opaque, and a handler that reads it by mistake fails loudly
/// instead of seeing an empty <config> (which, with default-operation replace, empties a
/// datastore).
constexpr std::string_view kPlaceholderNs = "urn:ncstore:internal:config-parsed-separately";

const std::string& placeholder() {
    static const std::string element = "<parsed-separately xmlns=\"" + std::string(kPlaceholderNs) + "\"/>";
    return element;
}

struct InputDeleter {
    void operator()(ly_in* in) const noexcept { ly_in_free(in, 0); }
};

const lyd_node* schemaChild(const lyd_node* parent, const char* name) {
    for (const lyd_node* c = lyd_child(parent); c; c = c->next) {
        if (c->schema && std::strcmp(c->schema->name, name) == 0) {
            return c;
        }
    }
    return nullptr;
}

/// The inline <config> anyxml of an edit-config or copy-config operation, or nullptr.
const lyd_node* inlineConfigNode(const lyd_node* op) {
    if (const lyd_node* config = schemaChild(op, "config")) {
        return config;
    }
    return schemaChild(schemaChild(op, "source"), "config");
}

std::uint64_t microsSince(std::chrono::steady_clock::time_point start) {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start)
            .count());
}

/// Parses `text` with its inline <config> content apart (rpcparse.hpp), leaving the content in
/// pendingConfig. False, with nothing set, when the message is to be parsed as it is: it has
/// no such content, or either parse fails (the whole message's parse then reports the error
/// it always did).
bool parseWithConfigApart(const ly_ctx* ctx, std::string_view text, lyd_node** envelope, lyd_node** op) {
    const auto start = std::chrono::steady_clock::now();
    const auto found = findInlineConfig(text);
    if (!found) {
        return false;
    }
    const std::string rest = replaceContent(text, *found, placeholder());
    ly_in* rawIn = nullptr;
    if (ly_in_new_memory(rest.c_str(), &rawIn) != LY_SUCCESS) {
        return false;
    }
    const std::unique_ptr<ly_in, InputDeleter> in{rawIn};
    lyd_node* rawEnvelope = nullptr;
    lyd_node* rawOp = nullptr;
    const LY_ERR rc =
        realParseOp()(ctx, nullptr, in.get(), LYD_XML, LYD_TYPE_RPC_NETCONF, &rawEnvelope, &rawOp);
    Tree parsedEnvelope{rawEnvelope};
    Tree parsedOp{rawOp};
    const lyd_node* config = rc == LY_SUCCESS ? inlineConfigNode(rawOp) : nullptr;
    if (!config || !isParsedSeparately(config)) {
        ly_err_clean(const_cast<ly_ctx*>(ctx), nullptr);
        return false;
    }
    Tree content;
    try {
        content = parseEditContent(ctx, found->document);
    } catch (const RpcError& e) {
        NCS_LOG(debug) << "inline <config> content rejected (" << e.tag << "), parsing the whole message";
        ly_err_clean(const_cast<ly_ctx*>(ctx), nullptr);
        return false;
    }
    if (!content) {
        return false;
    }
    pendingConfig = {config, {std::move(content), microsSince(start)}};
    *envelope = parsedEnvelope.release();
    *op = parsedOp.release();
    return true;
}

/// Whether the error `path` (a data path) lies in data carried by the RPC (<config> content,
/// whose paths start at a data node) rather than in the RPC's own parameters.
bool inCarriedData(const ly_ctx* ctx, const std::string& path) {
    if (path.size() < 2 || path[0] != '/') {
        return false;
    }
    const auto end = path.find_first_of("/[", 1);
    const std::string top = path.substr(0, end);
    const lysc_node* node = lys_find_path(ctx, nullptr, top.c_str(), 0);
    return node && !(node->nodetype & (LYS_RPC | LYS_ACTION));
}

/// The attribute (local name) of element `element` (local name) in `xml` whose value is `value`
/// while no element of `xml` has `value` as its text; {"", ""} otherwise.
std::pair<std::string, std::string> attributeWithValue(const std::string& xml, const std::string& value) {
    if (value.empty() || xml.find(">" + value + "<") != std::string::npos) {
        return {};
    }
    for (const char quote : {'"', '\''}) {
        const std::string needle = std::string("=") + quote + value + quote;
        for (auto at = xml.find(needle); at != std::string::npos; at = xml.find(needle, at + 1)) {
            const auto nameStart = xml.find_last_of(" \t\r\n", at);
            const auto open = xml.rfind('<', at);
            if (nameStart == std::string::npos || open == std::string::npos || nameStart < open) {
                continue;
            }
            std::string attr = xml.substr(nameStart + 1, at - nameStart - 1);
            if (attr.rfind("xmlns", 0) == 0) {
                continue;
            }
            const auto end = xml.find_first_of(" \t\r\n/>", open);
            std::string element = xml.substr(open + 1, end - open - 1);
            const auto strip = [](std::string n) {
                const auto colon = n.find(':');
                return colon == std::string::npos ? n : n.substr(colon + 1);
            };
            return {strip(attr), strip(element)};
        }
    }
    return {};
}

bool endsWith(const std::string& s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// A stand-in operation for a message answered with an error: any RPC the server knows does,
/// since dispatch() asks takeRpcParseError() before looking at it.
lyd_node* standInOperation(const ly_ctx* ctx) {
    const lys_module* mod = ly_ctx_get_module_implemented(ctx, "ietf-netconf");
    lyd_node* node = nullptr;
    if (!mod || lyd_new_inner(nullptr, mod, "get", 0, &node) != LY_SUCCESS) {
        return nullptr;
    }
    return node;
}

} // namespace

RpcError fromRpcParseError(const ly_err_item& item, const std::string& message, bool inData) {
    const std::string msg = item.msg ? item.msg : "invalid message";
    if (item.vecode == LYVE_SYNTAX || item.vecode == LYVE_SYNTAX_XML) {
        RpcError e("malformed-message", ErrorType::Rpc, msg);
        return e;
    }
    RpcError e = fromLibyangItem(item, "operation-failed");
    e.type = inData ? ErrorType::Application : ErrorType::Protocol;
    if (e.tag == "unknown-namespace") {
        // libyang names only the namespace: find the element that declares it, or else blame
        // the element libyang was in (the <rpc> itself when it has no location).
        if (auto name = elementDeclaring(message, e.badNamespace); !name.empty()) {
            e.badElement = std::move(name);
        } else if (e.path.empty()) {
            e.badElement = "rpc";
        }
    }
    if (e.tag == "unknown-element" && e.badElement == "running" &&
        endsWith(dataPathOf(item.path ? item.path : ""), "delete-config/target")) {
        // ietf-netconf has no <running/> case in delete-config's target: RFC 6241 7.4.
        RpcError refused("operation-not-supported", ErrorType::Protocol,
                         "the running datastore cannot be deleted");
        refused.path = e.path;
        refused.badElement = "running";
        return refused;
    }
    static const std::regex invalidValue(R"(^Invalid [^\"]*value \"([^\"]*)\")");
    std::smatch m;
    if (e.tag == "invalid-value" && std::regex_search(msg, m, invalidValue)) {
        // libyang reports a bad attribute value (nc:operation="frobnicate") like a bad leaf value,
        // located at the parent element: tell them apart by where the value is in the message.
        if (auto [attr, element] = attributeWithValue(message, m[1]); !attr.empty()) {
            e.tag = "bad-attribute";
            e.badAttribute = attr;
            e.badElement = element;
        }
    }
    return e;
}

bool hasMessageId(const lyd_node* envelope) {
    if (!envelope || envelope->schema) {
        return false;
    }
    for (const lyd_attr* a = reinterpret_cast<const lyd_node_opaq*>(envelope)->attr; a; a = a->next) {
        if (a->name.name && std::strcmp(a->name.name, "message-id") == 0) {
            return true;
        }
    }
    return false;
}

RpcError missingMessageId() {
    RpcError e("missing-attribute", ErrorType::Rpc, "the <rpc> has no message-id attribute");
    e.badAttribute = "message-id";
    e.badElement = "rpc";
    return e;
}

void interceptRpcParsing(const ly_ctx* ctx) {
    intercepted = ctx;
}

std::optional<RpcError> takeRpcParseError(const lyd_node* op) {
    if (!op || pending.op != op) {
        return std::nullopt;
    }
    pending.op = nullptr;
    return std::exchange(pending.error, std::nullopt);
}

std::optional<ParsedConfig> takeParsedConfig(const lyd_node* config) {
    if (!config || pendingConfig.config != config) {
        return std::nullopt;
    }
    pendingConfig.config = nullptr;
    return std::move(pendingConfig.parsed);
}

void dropParsedConfig() {
    pendingConfig = {};
}

bool isParsedSeparately(const lyd_node* config) {
    if (!config || !config->schema || !(config->schema->nodetype & LYD_NODE_ANY)) {
        return false;
    }
    const auto* any = reinterpret_cast<const lyd_node_any*>(config);
    if (any->value_type != LYD_ANYDATA_DATATREE || !any->value.tree || any->value.tree->schema ||
        any->value.tree->next) {
        return false;
    }
    const auto* placeholder = reinterpret_cast<const lyd_node_opaq*>(any->value.tree);
    return placeholder->format == LY_VALUE_XML && placeholder->name.module_ns &&
           placeholder->name.module_ns == kPlaceholderNs;
}

LY_ERR parseRpcMessage(const ly_ctx* ctx, ly_in* in, lyd_node** envelope, lyd_node** op) {
    pending = {};
    pendingConfig = {};
    // libnetconf2 hands the message over in memory: its text names the element of an unknown
    // namespace and tells attribute values from leaf values (read before parsing moves on).
    const char* text = ly_in_type(in) == LY_IN_MEMORY ? ly_in_memory(in, nullptr) : nullptr;
    bool parsedApart = false;
    if (text) {
        try {
            parsedApart = parseWithConfigApart(ctx, text, envelope, op);
        } catch (const std::exception& e) {
            NCS_LOG(error) << "parsing an <rpc> with its <config> apart failed, parsing it whole: "
                           << e.what();
            pendingConfig = {};
        }
    }
    const LY_ERR rc = parsedApart
                          ? LY_SUCCESS
                          : realParseOp()(ctx, nullptr, in, LYD_XML, LYD_TYPE_RPC_NETCONF, envelope, op);
    if (rc == LY_SUCCESS) {
        if (!hasMessageId(*envelope)) {
            try {
                pending = {*op, missingMessageId()};
            } catch (const std::exception& e) {
                NCS_LOG(error) << "an <rpc> without message-id: " << e.what();
            }
        }
        return rc;
    }
    if (!*envelope) {
        // Not even an <rpc>: libnetconf2 answers (base:1.1) or drops (base:1.0) it.
        return rc;
    }
    // Called from libnetconf2 (C): nothing may escape. On any failure here libnetconf2 answers
    // the message itself, as it would without us.
    try {
        const ly_err_item* item = ly_err_last(ctx);
        RpcError error = item
                             ? fromRpcParseError(*item, text ? text : "",
                                                 inCarriedData(ctx, dataPathOf(item->path ? item->path : "")))
                             : RpcError("operation-failed", ErrorType::Application, "cannot parse the <rpc>");
        if (!hasMessageId(*envelope)) {
            error = missingMessageId();
        }
        lyd_node* standIn = standInOperation(ctx);
        if (!standIn) {
            return rc;
        }
        NCS_LOG(debug) << "rpc parse error: " << error.what() << " -> " << error.tag;
        const Tree partial{*op}; // whatever libyang built of the operation
        *op = standIn;
        pending = {standIn, std::move(error)};
    } catch (const std::exception& e) {
        NCS_LOG(error) << "mapping an rpc parse error failed: " << e.what();
        return rc;
    }
    ly_err_clean(const_cast<ly_ctx*>(ctx), nullptr);
    return LY_SUCCESS;
}

} // namespace ncstore::netconfd

// Interposes libyang's lyd_parse_op (see rpcparse.hpp): libnetconf2 calls it through the PLT,
// and the executable's definition comes first in the global scope (CMakeLists.txt exports it).
extern "C" LIBYANG_API_DEF LY_ERR lyd_parse_op(const struct ly_ctx* ctx, struct lyd_node* parent,
                                               struct ly_in* in, LYD_FORMAT format, enum lyd_type data_type,
                                               struct lyd_node** tree, struct lyd_node** op) {
    using namespace ncstore::netconfd;
    if (ctx && ctx == intercepted.load() && data_type == LYD_TYPE_RPC_NETCONF && !parent &&
        format == LYD_XML && tree && op) {
        return parseRpcMessage(ctx, in, tree, op);
    }
    return realParseOp()(ctx, parent, in, format, data_type, tree, op);
}
