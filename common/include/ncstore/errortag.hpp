// The error-tags of RFC 6241 Appendix A: the one classification of failures that the datastore
// raises (ds::Error) and the NETCONF layer sends (rpc-error), with their one spelling.
#pragma once

#include <optional>
#include <ostream>
#include <string_view>

namespace ncstore {

enum class ErrorTag {
    InUse,
    InvalidValue,
    TooBig,
    MissingAttribute,
    BadAttribute,
    UnknownAttribute,
    MissingElement,
    BadElement,
    UnknownElement,
    UnknownNamespace,
    AccessDenied,
    LockDenied,
    ResourceDenied,
    RollbackFailed,
    DataExists,
    DataMissing,
    OperationNotSupported,
    OperationFailed,
    MalformedMessage,
};
/// The RFC spelling: "in-use", "invalid-value", ...
const char* toString(ErrorTag tag);
/// The tag RFC 6241 spells `text`, or nullopt.
std::optional<ErrorTag> parseErrorTag(std::string_view text);
inline std::ostream& operator<<(std::ostream& out, ErrorTag tag) {
    return out << toString(tag);
}

} // namespace ncstore
