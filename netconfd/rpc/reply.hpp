// What an operation answers, and the <rpc-reply> message that carries it (RFC 6241 4.2).
//
// Promises: a Reply is a value (no libyang or session state); renderReply() prints the whole
// <rpc-reply> with every attribute of the <rpc> repeated (RFC 6241 4.2) and the namespace
// declarations their prefixes need, straight into the caller's output buffer.
#pragma once

#include "errors.hpp"

#include "ncstore/datastore.hpp"

#include <libyang/libyang.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ncstore::netconfd {

struct Reply {
    /// Output: an RPC's output parameters (RFC 7950 7.14.4), straight in <rpc-reply>.
    enum class Kind { Ok, Data, Error, Output };
    Kind kind = Kind::Ok;
    /// Kind::Data: the content of <data>, XML (or escaped text, see text()); Kind::Output: the
    /// output parameters, XML, each element with its namespace.
    std::string data;
    /// Kind::Data: the namespace of <data> when it is not NETCONF's (get-schema's output).
    std::string dataNamespace;
    /// Kind::Error: the rpc-errors, in order.
    std::vector<RpcError> errors;

    /// The session ends once this reply is sent (close-session).
    bool endSession = false;
    /// For writes: parsing of the carried data and the datastore's split of the time.
    std::uint64_t parseUs = 0;
    std::optional<ds::WriteTiming> write;

    static Reply ok() { return {}; }
    static Reply xml(std::string content) {
        Reply r;
        r.kind = Kind::Data;
        r.data = std::move(content);
        return r;
    }
    static Reply output(std::string content) {
        Reply r;
        r.kind = Kind::Output;
        r.data = std::move(content);
        return r;
    }
    /// Text content (escaped here) of a <data> element in namespace `ns`.
    static Reply text(const std::string& content, std::string ns);
    static Reply error(RpcError e) {
        Reply r;
        r.kind = Kind::Error;
        r.errors.push_back(std::move(e));
        return r;
    }
};

/// Appends the <rpc-reply> for `reply` to the request whose <rpc> element is `envelope` (opaque
/// libyang node; nullptr when the message was no <rpc>: the reply then has no attributes).
void renderReply(std::string& out, const lyd_node* envelope, const Reply& reply, const ly_ctx* ctx);

} // namespace ncstore::netconfd
