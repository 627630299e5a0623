// NETCONF rpc-errors (RFC 6241 4.3, Appendix A) as C++ values, and their sources.
//
// Promises: every failure an operation handler can meet (datastore errors, libyang parse or
// validation errors, our own protocol checks) becomes one RpcError with an RFC error-tag;
// toNcErr turns it into the libnetconf2 error tree. Nothing here depends on a live session.
#pragma once

#include "ncstore/datastore.hpp"

#include <libyang/libyang.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace ncstore::netconfd {

enum class ErrorType { Transport, Rpc, Protocol, Application };

class RpcError : public std::runtime_error {
public:
    /// `tag` is the RFC 6241 error-tag spelling, e.g. "invalid-value".
    RpcError(std::string errorTag, ErrorType errorType, const std::string& message)
        : std::runtime_error(message), tag(std::move(errorTag)), type(errorType) {}

    std::string tag;
    ErrorType type;
    std::string path;            ///< error-path
    std::string appTag;          ///< error-app-tag
    std::string badElement;      ///< error-info/bad-element
    std::string badAttribute;    ///< error-info/bad-attribute
    std::string badNamespace;    ///< error-info/bad-namespace
    std::uint32_t sessionId = 0; ///< error-info/session-id (lock-denied, in-use)

    RpcError& withPath(std::string p) {
        path = std::move(p);
        return *this;
    }
    RpcError& withAppTag(std::string t) {
        appTag = std::move(t);
        return *this;
    }
    RpcError& withBadElement(std::string e) {
        badElement = std::move(e);
        return *this;
    }
    RpcError& withSessionId(std::uint32_t s) {
        sessionId = s;
        return *this;
    }
};

/// A datastore failure: tag 1:1, error-type application, path and app-tag kept.
RpcError fromDatastore(const ds::Error& e);
/// The last error libyang recorded in `ctx` while parsing or validating client input.
/// `fallbackTag` is used when the error kind cannot be recognized.
RpcError fromLibyang(const ly_ctx* ctx, const std::string& fallbackTag = "invalid-value");
/// Same, from one error item (exposed for tests).
RpcError fromLibyangItem(const ly_err_item& item, const std::string& fallbackTag = "invalid-value");

/// The data path in a libyang error location ("Data location \"/a:b\", line number 5."), or "".
std::string dataPathOf(const std::string& location);

/// The local name of the first element of `xml` that declares namespace `ns` (xmlns="ns" or
/// xmlns:p="ns"), or "": libyang names only the namespace it does not know.
std::string elementDeclaring(const std::string& xml, const std::string& ns);

/// The libnetconf2 error tree (opaque <rpc-error> node) for `e`; never nullptr.
lyd_node* toNcErr(const ly_ctx* ctx, const RpcError& e);

} // namespace ncstore::netconfd
