#include "ncstore/errortag.hpp"

namespace ncstore {

const char* toString(ErrorTag tag) {
    switch (tag) {
    case ErrorTag::InUse:
        return "in-use";
    case ErrorTag::InvalidValue:
        return "invalid-value";
    case ErrorTag::TooBig:
        return "too-big";
    case ErrorTag::MissingAttribute:
        return "missing-attribute";
    case ErrorTag::BadAttribute:
        return "bad-attribute";
    case ErrorTag::UnknownAttribute:
        return "unknown-attribute";
    case ErrorTag::MissingElement:
        return "missing-element";
    case ErrorTag::BadElement:
        return "bad-element";
    case ErrorTag::UnknownElement:
        return "unknown-element";
    case ErrorTag::UnknownNamespace:
        return "unknown-namespace";
    case ErrorTag::AccessDenied:
        return "access-denied";
    case ErrorTag::LockDenied:
        return "lock-denied";
    case ErrorTag::ResourceDenied:
        return "resource-denied";
    case ErrorTag::RollbackFailed:
        return "rollback-failed";
    case ErrorTag::DataExists:
        return "data-exists";
    case ErrorTag::DataMissing:
        return "data-missing";
    case ErrorTag::OperationNotSupported:
        return "operation-not-supported";
    case ErrorTag::OperationFailed:
        return "operation-failed";
    case ErrorTag::MalformedMessage:
        return "malformed-message";
    }
    return "operation-failed";
}

std::optional<ErrorTag> parseErrorTag(std::string_view text) {
    for (int i = 0; i <= static_cast<int>(ErrorTag::MalformedMessage); ++i) {
        const auto tag = static_cast<ErrorTag>(i);
        if (text == toString(tag)) {
            return tag;
        }
    }
    return std::nullopt;
}

} // namespace ncstore
