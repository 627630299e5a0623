#include "rpcparse.hpp"

#include "editcontent.hpp"
#include "inlineconfig.hpp"

#include "ncstore/log.hpp"

#include <chrono>
#include <cstring>
#include <memory>
#include <regex>
#include <string_view>
#include <utility>

namespace ncstore::netconfd {

namespace {

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

/// lyd_parse_op on a message in memory (NUL-terminated).
LY_ERR parseMessage(const ly_ctx* ctx, const char* text, Tree& envelope, Tree& op) {
    ly_in* rawIn = nullptr;
    if (ly_in_new_memory(text, &rawIn) != LY_SUCCESS) {
        return LY_EMEM;
    }
    const std::unique_ptr<ly_in, InputDeleter> in{rawIn};
    lyd_node* rawEnvelope = nullptr;
    lyd_node* rawOp = nullptr;
    const LY_ERR rc =
        lyd_parse_op(ctx, nullptr, in.get(), LYD_XML, LYD_TYPE_RPC_NETCONF, &rawEnvelope, &rawOp);
    envelope.reset(rawEnvelope);
    op.reset(rawOp);
    return rc;
}

/// Parses `text` with its inline <config> content apart (rpcparse.hpp) into `out`. False, with
/// nothing set, when the message is to be parsed as it is: it has no such content, or either
/// parse fails (the whole message's parse then reports the error it always did).
bool parseWithConfigApart(const ly_ctx* ctx, std::string_view text, ParsedRpc& out) {
    const auto start = std::chrono::steady_clock::now();
    const auto found = findInlineConfig(text);
    if (!found) {
        return false;
    }
    const std::string rest = replaceContent(text, *found, placeholder());
    Tree envelope;
    Tree op;
    const LY_ERR rc = parseMessage(ctx, rest.c_str(), envelope, op);
    const lyd_node* config = rc == LY_SUCCESS ? inlineConfigNode(op.get()) : nullptr;
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
    out.envelope = std::move(envelope);
    out.op = std::move(op);
    out.configNode = config;
    out.config = ParsedConfig{std::move(content), microsSince(start)};
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

/// Whether an opaque node under `op` (the content of an anyxml or anydata parameter: <config>,
/// <filter>) has a prefix no xmlns declares. libyang 2.1.30 keeps such a node with a null
/// namespace, and printing or reading it later dereferences that null: one message from any client
/// would end the server.
bool hasUndeclaredPrefix(const lyd_node* op) {
    const lyd_node* elem = nullptr;
    LYD_TREE_DFS_BEGIN(op, elem) {
        if (elem->schema && (elem->schema->nodetype & LYD_NODE_ANY)) {
            const auto* any = reinterpret_cast<const lyd_node_any*>(elem);
            if (any->value_type == LYD_ANYDATA_DATATREE) {
                for (const lyd_node* top = any->value.tree; top; top = top->next) {
                    const lyd_node* inner = nullptr;
                    LYD_TREE_DFS_BEGIN(top, inner) {
                        if (!inner->schema) {
                            const auto* o = reinterpret_cast<const lyd_node_opaq*>(inner);
                            if (o->format == LY_VALUE_XML && o->name.prefix && !o->name.module_ns) {
                                return true;
                            }
                            for (const lyd_attr* a = o->attr; a; a = a->next) {
                                if (a->format == LY_VALUE_XML && a->name.prefix && !a->name.module_ns) {
                                    return true;
                                }
                            }
                        }
                        LYD_TREE_DFS_END(top, inner);
                    }
                }
            }
        }
        LYD_TREE_DFS_END(op, elem);
    }
    return false;
}

constexpr const char* kBaseNs = "urn:ietf:params:xml:ns:netconf:base:1.0";
constexpr const char* kNotificationNs = "urn:ietf:params:xml:ns:netconf:notification:1.0";

bool isOpaque(const lyd_node* node, const char* name, const char* ns) {
    if (!node || node->schema) {
        return false;
    }
    const auto* o = reinterpret_cast<const lyd_node_opaq*>(node);
    return o->format == LY_VALUE_XML && o->name.name && std::strcmp(o->name.name, name) == 0 &&
           o->name.module_ns && std::strcmp(o->name.module_ns, ns) == 0;
}

/// RFC 5277 puts create-subscription's <filter> in the notification namespace; clients that build
/// it like <get>'s (ncclient) put it in the NETCONF base namespace. The message with that element
/// moved into the notification namespace, nothing else changed; nullopt when it has no such
/// element.
std::optional<std::string> withNotificationFilter(const std::string& message) {
    // Read as plain XML: in a context without modules every element is opaque.
    static const Context plain = [] {
        ly_ctx* raw = nullptr;
        if (ly_ctx_new(nullptr, LY_CTX_NO_YANGLIBRARY | LY_CTX_DISABLE_SEARCHDIRS, &raw) != LY_SUCCESS) {
            throw YangError("cannot create an empty libyang context");
        }
        return Context{raw};
    }();
    lyd_node* raw = nullptr;
    if (lyd_parse_data_mem(plain.get(), message.c_str(), LYD_XML, LYD_PARSE_ONLY | LYD_PARSE_OPAQ, 0, &raw) !=
        LY_SUCCESS) {
        ly_err_clean(plain.get(), nullptr);
        const Tree partial{raw};
        return std::nullopt;
    }
    const Tree tree{raw};
    if (!isOpaque(tree.get(), "rpc", kBaseNs)) {
        return std::nullopt;
    }
    for (lyd_node* op = lyd_child(tree.get()); op; op = op->next) {
        if (!isOpaque(op, "create-subscription", kNotificationNs)) {
            continue;
        }
        for (lyd_node* c = lyd_child(op); c; c = c->next) {
            if (isOpaque(c, "filter", kBaseNs)) {
                auto* o = reinterpret_cast<lyd_node_opaq*>(c);
                const char* ns = nullptr;
                if (lydict_insert(LYD_CTX(c), kNotificationNs, 0, &ns) != LY_SUCCESS) {
                    return std::nullopt;
                }
                lydict_remove(LYD_CTX(c), o->name.module_ns);
                o->name.module_ns = ns;
                lydict_remove(LYD_CTX(c), o->name.prefix);
                o->name.prefix = nullptr;
                return print(tree.get(), LYD_XML, LYD_PRINT_SHRINK);
            }
        }
    }
    return std::nullopt;
}

} // namespace

RpcError fromRpcParseError(const ly_err_item& item, const std::string& message, bool inData) {
    const std::string msg = item.msg ? item.msg : "invalid message";
    if (item.vecode == LYVE_SYNTAX || item.vecode == LYVE_SYNTAX_XML) {
        return RpcError::malformedMessage(msg);
    }
    RpcError e = fromLibyangItem(item, ErrorTag::OperationFailed);
    if (e.tag == ErrorTag::MalformedMessage) {
        return e;
    }
    e.type = inData ? ErrorType::Application : ErrorType::Protocol;
    if (e.tag == ErrorTag::UnknownNamespace) {
        // libyang names only the namespace: find the element that declares it, or else blame
        // the element libyang was in (the <rpc> itself when it has no location).
        if (auto name = elementDeclaring(message, e.badNamespace); !name.empty()) {
            e.badElement = std::move(name);
        } else if (e.path.empty()) {
            e.badElement = "rpc";
        }
    }
    if (e.tag == ErrorTag::UnknownElement && e.badElement == "running" &&
        endsWith(dataPathOf(item.path ? item.path : ""), "delete-config/target")) {
        // ietf-netconf has no <running/> case in delete-config's target: RFC 6241 7.4.
        RpcError refused(ErrorTag::OperationNotSupported, ErrorType::Protocol,
                         "the running datastore cannot be deleted");
        refused.path = e.path;
        refused.badElement = "running";
        return refused;
    }
    static const std::regex invalidValue(R"(^Invalid [^\"]*value \"([^\"]*)\")");
    std::smatch m;
    if (e.tag == ErrorTag::InvalidValue && std::regex_search(msg, m, invalidValue)) {
        // libyang reports a bad attribute value (nc:operation="frobnicate") like a bad leaf value,
        // located at the parent element: tell them apart by where the value is in the message.
        if (auto [attr, element] = attributeWithValue(message, m[1]); !attr.empty()) {
            e.tag = ErrorTag::BadAttribute;
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
    RpcError e(ErrorTag::MissingAttribute, ErrorType::Rpc, "the <rpc> has no message-id attribute");
    e.badAttribute = "message-id";
    e.badElement = "rpc";
    return e;
}

std::optional<ParsedConfig> ParsedRpc::takeConfig(const lyd_node* node) {
    if (!node || node != configNode || !config) {
        return std::nullopt;
    }
    configNode = nullptr;
    return std::exchange(config, std::nullopt);
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

ParsedRpc parseRpc(const ly_ctx* ctx, const std::string& message) {
    ParsedRpc out;
    // libyang 2.1.30 would crash on it (inlineconfig.hpp): refused before libyang sees it.
    if (const auto hazard = libyangHazard(message)) {
        NCS_LOG(warning) << "refusing a message libyang cannot parse safely: " << *hazard;
        out.error = RpcError::malformedMessage("the message cannot be parsed safely: " + *hazard);
        return out;
    }
    bool parsedApart = false;
    try {
        parsedApart = parseWithConfigApart(ctx, message, out);
    } catch (const std::exception& e) {
        NCS_LOG(error) << "parsing an <rpc> with its <config> apart failed, parsing it whole: " << e.what();
        out = ParsedRpc{};
    }
    LY_ERR rc = parsedApart ? LY_SUCCESS : parseMessage(ctx, message.c_str(), out.envelope, out.op);
    if (rc != LY_SUCCESS && out.envelope && message.find("create-subscription") != std::string::npos) {
        if (const auto moved = withNotificationFilter(message)) {
            ParsedRpc again;
            if (parseMessage(ctx, moved->c_str(), again.envelope, again.op) == LY_SUCCESS) {
                out = std::move(again);
                rc = LY_SUCCESS;
            }
        }
    }
    if (rc == LY_SUCCESS && out.envelope && out.op) {
        if (!hasMessageId(out.envelope.get())) {
            out.error = missingMessageId();
        } else if (hasUndeclaredPrefix(out.op.get())) {
            out.error = RpcError::malformedMessage(
                "an element or attribute uses a namespace prefix that is not declared");
            out.op.reset();
            out.configNode = nullptr;
            out.config.reset();
        } else if (message.find(kPlaceholderNs) != std::string::npos) {
            // The namespace of the server's own stand-in for a <config> parsed apart: a client's
            // element in it would pass for one (isParsedSeparately()).
            RpcError e(ErrorTag::UnknownNamespace, ErrorType::Protocol,
                       "namespace " + std::string(kPlaceholderNs) + " is reserved");
            e.badNamespace = kPlaceholderNs;
            out.error = std::move(e);
            out.op.reset();
            out.configNode = nullptr;
            out.config.reset();
        }
        return out;
    }
    const ly_err_item* item = rc == LY_SUCCESS ? nullptr : ly_err_last(ctx);
    if (!out.envelope) {
        // Not even an <rpc>: nothing to answer to but the message as a whole.
        out.error = RpcError(ErrorTag::MalformedMessage, ErrorType::Rpc,
                             item && item->msg ? std::string("not a NETCONF <rpc>: ") + item->msg
                                               : std::string("not a NETCONF <rpc>"));
    } else if (!hasMessageId(out.envelope.get())) {
        out.error = missingMessageId();
    } else {
        out.error =
            item ? fromRpcParseError(*item, message,
                                     inCarriedData(ctx, dataPathOf(item->path ? item->path : "")))
                 : RpcError(ErrorTag::OperationFailed, ErrorType::Application, "cannot parse the <rpc>");
    }
    NCS_LOG(debug) << "rpc parse error: " << out.error->what() << " -> " << out.error->tag;
    out.op.reset(); // whatever libyang built of the operation
    out.configNode = nullptr;
    out.config.reset();
    ly_err_clean(const_cast<ly_ctx*>(ctx), nullptr);
    return out;
}

} // namespace ncstore::netconfd
