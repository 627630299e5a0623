// The content of an edit-config / copy-config / validate <config>: XML text to a data tree for
// the datastore's edit engine, or the RFC 6241 rpc-error the client's mistake deserves.
#pragma once

#include "ncstore/yang.hpp"

#include <string>

namespace ncstore::netconfd {

/// Parses `text` (top-level data elements, possibly with nc:operation and insert attributes)
/// strictly, without validation. A leaf written without a value of its type in order to delete
/// or remove it (`<enabled nc:operation="delete"/>`) is kept as an opaque node, which the edit
/// engine deletes; every other mistake throws RpcError (unknown-element, unknown-namespace with
/// the element that declares it, missing-element for a missing key, invalid-value with the
/// leaf's error-path, ...). An empty text or forest gives an empty Tree.
Tree parseEditContent(const ly_ctx* ctx, const std::string& text);

} // namespace ncstore::netconfd
