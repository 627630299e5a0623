// Parsing one NETCONF <rpc> message against the server's context, with the rpc-errors RFC 6241
// prescribes for what does not parse.
//
// Promises:
//  - parseRpc() never throws for anything a client sends: the result is either an operation
//    to run or the rpc-error to answer with (RFC 6241 Appendix A tags: unknown-element,
//    unknown-namespace, invalid-value, bad-attribute, missing-attribute for a missing
//    message-id, malformed-message for broken XML).
//  - The <config> content of edit-config and copy-config is parsed once, typed, with the
//    namespaces in scope: it is cut out of the text (inlineconfig.hpp) and parsed like
//    parseEditContent() does, while libyang parses the rest, whose <config> holds a
//    placeholder; the handler takes the typed tree from the ParsedRpc. When either parse fails
//    the whole message is parsed as it is, so every error is the one the whole parse gives.
//  - libyang's XML parser refuses DTDs, entities other than the predefined five, invalid
//    UTF-8 and nesting deeper than its limit: a hostile message costs its parse, nothing more.
//    What libyang 2.1.30 would crash on is refused before libyang sees it (libyangHazard() in
//    inlineconfig.hpp), and so is content with an undeclared namespace prefix.
#pragma once

#include "errors.hpp"

#include "ncstore/yang.hpp"

#include <cstdint>
#include <optional>

namespace ncstore::netconfd {

/// The rpc-error for a whole <rpc> message libyang failed to parse (error `item`), whose
/// envelope was read. Unknown elements, namespaces and bad values of RPC parameters are
/// protocol errors; inside <config> application errors; broken XML is malformed-message.
/// `message` (the XML text, may be empty) serves to name the element of an unknown namespace and
/// to tell a bad attribute value from a bad leaf value; `inData`: the error lies in data the RPC
/// carries (<config> content), not in its parameters.
RpcError fromRpcParseError(const ly_err_item& item, const std::string& message = {}, bool inData = false);

/// Whether the <rpc> envelope (opaque node) carries a message-id attribute.
bool hasMessageId(const lyd_node* envelope);

/// The rpc-error RFC 6241 4.1 prescribes for an <rpc> without message-id.
RpcError missingMessageId();

/// The content of an inline <config>, parsed apart from the message.
struct ParsedConfig {
    Tree tree;
    std::uint64_t parseUs = 0; ///< finding it in the message and parsing it
};

/// Whether `config` (an inline <config> anyxml node) holds the placeholder of a content parsed
/// apart: it cannot be read from the tree, only taken from the ParsedRpc.
bool isParsedSeparately(const lyd_node* config);

/// One <rpc> message, parsed.
struct ParsedRpc {
    /// The opaque <rpc> element, whose attributes the reply repeats; null when the message is
    /// not an <rpc> at all.
    Tree envelope;
    /// The operation; null when `error` is set.
    Tree op;
    /// The rpc-error to answer with instead of running the operation.
    std::optional<RpcError> error;
    /// The <config> node that stands for a content parsed apart, and that content.
    const lyd_node* configNode = nullptr;
    std::optional<ParsedConfig> config;

    /// The content parsed apart for `node`, if it is that node; taken once.
    std::optional<ParsedConfig> takeConfig(const lyd_node* node);
};

/// Parses `message` (the text of one NETCONF message) as described above.
ParsedRpc parseRpc(const ly_ctx* ctx, const std::string& message);

} // namespace ncstore::netconfd
