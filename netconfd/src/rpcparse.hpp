// The rpc-errors for <rpc> messages that libnetconf2 2.0.24 rejects before our callbacks run.
//
// libnetconf2 2.0.24 (nc_server_recv_rpc_io) parses every message with
// lyd_parse_op(LYD_TYPE_RPC_NETCONF) against the server's context and answers EVERY failure
// whose <rpc> envelope was read with error-tag operation-failed (the libyang message as
// error-message), and it does not check message-id at all (RFC 6241 4.1). Its public API has
// no hook between parsing and replying, and no access to the transport to read messages
// ourselves. Newer libnetconf2 releases map libyang errors to RFC tags (nc_server_rpc_err,
// recv_rpc_check_msgid); until the server moves to one, ncstored interposes lyd_parse_op
// (the executable's definition precedes libyang's in the global symbol scope):
//   - a NETCONF <rpc> of the server context that libyang parses is checked for message-id;
//   - one that fails to parse after its envelope was read is answered by us: the parse returns
//     a stand-in operation and the error, mapped here to the RFC 6241 Appendix A tag, waits
//     for that operation in takeRpcParseError(), which dispatch() asks first;
//   - everything else (other contexts, other data types, messages without an <rpc> envelope)
//     goes to libyang untouched: libnetconf2 then answers malformed-message on base:1.1 and
//     nothing on base:1.0, as before.
//
// The interposition also spares the server a second parse of big edits: libyang parses the
// <config> anyxml of edit-config (and copy-config's inline one) into a tree the handler could
// only print and parse again, typed. For such a message the content is cut out of the text
// (inlineconfig.hpp) and parsed typed, once, exactly as parseEditContent() does; libyang parses
// the rest, whose <config> holds a placeholder, and the handler takes the typed tree with
// takeParsedConfig(). When either parse fails the whole message is parsed as it is and handled
// as before, so every error is the one the message got before.
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

/// From now on, NETCONF <rpc> parses of `ctx` are checked and mapped as described above
/// (nullptr: none).
void interceptRpcParsing(const ly_ctx* ctx);

/// The error found while parsing the RPC whose operation node is `op`, if any (taken: asked
/// twice, the second answer is empty). Only the last parse of the calling thread is kept:
/// libnetconf2 parses and calls back in the same thread, one message after the other.
std::optional<RpcError> takeRpcParseError(const lyd_node* op);

/// The content of an inline <config>, parsed by parseRpcMessage().
struct ParsedConfig {
    Tree tree;
    std::uint64_t parseUs = 0; ///< finding it in the message and parsing it
};

/// The content of `config` (the <config> anyxml node of the last parse of the calling thread),
/// if parseRpcMessage() parsed it; taken: asked twice, the second answer is empty.
std::optional<ParsedConfig> takeParsedConfig(const lyd_node* config);

/// Frees a parsed <config> content nobody took (the handler failed before it needed it).
void dropParsedConfig();

/// Whether `config` holds the placeholder of a content parsed by parseRpcMessage(): it cannot
/// be read from the tree, only taken with takeParsedConfig().
bool isParsedSeparately(const lyd_node* config);

/// What the interposed lyd_parse_op does for an intercepted context (exposed for tests):
/// libyang's parse (an edit's <config> content apart, as described above), then the checks; on
/// a mapped failure returns LY_SUCCESS with a stand-in `*op` and leaves the error for
/// takeRpcParseError(*op).
LY_ERR parseRpcMessage(const ly_ctx* ctx, ly_in* in, lyd_node** envelope, lyd_node** op);

} // namespace ncstore::netconfd
