// NETCONF rpc-errors (RFC 6241 4.3, Appendix A) as C++ values, and their sources.
//
// Promises: every failure an operation handler can meet (datastore errors, libyang parse or
// validation errors, our own protocol checks) becomes one RpcError with an RFC error-tag;
// appendRpcError prints it as the <rpc-error> element. Nothing here depends on a live session.
#pragma once

#include "ncstore/datastore.hpp"
#include "ncstore/errortag.hpp"

#include <libyang/libyang.h>

#include <cstdint>
#include <ostream>
#include <stdexcept>
#include <string>

namespace ncstore::netconfd {

enum class ErrorType { Transport, Rpc, Protocol, Application };

/// The error-tags of RFC 6241 Appendix A (the datastore's too: common/include/ncstore/errortag.hpp).
using ncstore::ErrorTag;

class RpcError : public std::runtime_error {
public:
    RpcError(ErrorTag errorTag, ErrorType errorType, const std::string& message)
        : std::runtime_error(message), tag(errorTag), type(errorType) {}

    // The usual cases, with the error-type RFC 6241 gives them.
    static RpcError invalidValue(const std::string& message, std::string element = {},
                                 ErrorType type = ErrorType::Protocol) {
        return RpcError(ErrorTag::InvalidValue, type, message).withBadElement(std::move(element));
    }
    static RpcError missingElement(std::string element, const std::string& message) {
        return RpcError(ErrorTag::MissingElement, ErrorType::Protocol, message)
            .withBadElement(std::move(element));
    }
    static RpcError operationNotSupported(const std::string& message) {
        return RpcError(ErrorTag::OperationNotSupported, ErrorType::Protocol, message);
    }
    static RpcError operationFailed(const std::string& message, ErrorType type = ErrorType::Application) {
        return RpcError(ErrorTag::OperationFailed, type, message);
    }
    /// The datastore is locked by session `holder` (RFC 6241 7.5, 7.6).
    static RpcError inUse(const std::string& message, std::uint32_t holder) {
        return RpcError(ErrorTag::InUse, ErrorType::Protocol, message).withSessionId(holder);
    }
    /// A lock cannot be granted; `holder` goes to error-info (0: nobody in particular).
    static RpcError lockDenied(const std::string& message, std::uint32_t holder) {
        return RpcError(ErrorTag::LockDenied, ErrorType::Protocol, message).withSessionId(holder);
    }
    /// NACM refused (RFC 8341 3.4): error-path names the first denied node, if any.
    static RpcError accessDenied(const std::string& message, std::string path = {},
                                 ErrorType type = ErrorType::Application) {
        return RpcError(ErrorTag::AccessDenied, type, message).withPath(std::move(path));
    }
    static RpcError malformedMessage(const std::string& message) {
        return RpcError(ErrorTag::MalformedMessage, ErrorType::Rpc, message);
    }

    ErrorTag tag;
    ErrorType type;
    std::string path;            ///< error-path
    std::string appTag;          ///< error-app-tag
    std::string badElement;      ///< error-info/bad-element
    std::string badAttribute;    ///< error-info/bad-attribute
    std::string badNamespace;    ///< error-info/bad-namespace
    std::uint32_t sessionId = 0; ///< error-info/session-id (lock-denied, in-use)
    /// More error-info content, XML elements with their namespaces (what an application refusing
    /// a change gave: app/appserver.hpp), checked to be well-formed before it is set.
    std::string info;

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
RpcError fromLibyang(const ly_ctx* ctx, ErrorTag fallbackTag = ErrorTag::InvalidValue);
/// Same, from one error item (exposed for tests).
RpcError fromLibyangItem(const ly_err_item& item, ErrorTag fallbackTag = ErrorTag::InvalidValue);

/// The data path in a libyang error location ("Data location \"/a:b\", line number 5."), or "".
std::string dataPathOf(const std::string& location);

/// The local name of the first element of `xml` that declares namespace `ns` (xmlns="ns" or
/// xmlns:p="ns"), or "": libyang names only the namespace it does not know.
std::string elementDeclaring(const std::string& xml, const std::string& ns);

/// Appends the <rpc-error> element (RFC 6241 section 4.3, in the base namespace of the
/// enclosing <rpc-reply>) for `e`. The module-name prefixes of its error-path are declared on
/// the error-path element (`ctx` names their namespaces).
void appendRpcError(std::string& out, const RpcError& e, const ly_ctx* ctx);

} // namespace ncstore::netconfd
