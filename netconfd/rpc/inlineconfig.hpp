// The inline <config> of an edit-config or copy-config <rpc>, found in the raw message text, so
// that its content is parsed once, typed, rather than first opaque with the whole message and
// then again from a print of that (rpcparse.hpp).
//
// This is a scanner, not an XML parser: it trusts libyang to reject what is not well-formed. It
// promises only that what it finds is the <config> a libyang parse of the message would see, or
// nothing: whatever it does not understand (a DOCTYPE, text or CDATA beside the top-level
// elements, two <config>s, an empty one) gives std::nullopt and the message is parsed as it is.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace ncstore::netconfd {

/// The NETCONF base namespace, of <rpc>, its operations and their parameters.
inline constexpr std::string_view kNetconfBaseNs = "urn:ietf:params:xml:ns:netconf:base:1.0";

/// Where the content of the <config> lies, and the same content as a document of its own.
struct InlineConfig {
    std::size_t begin = 0; ///< offset of the first byte after the <config ...> start tag
    std::size_t end = 0;   ///< offset of the '<' of </config>
    /// The content with the namespace declarations in scope at <config> (made on <rpc>, the
    /// operation, <source>, <config>) that a top-level element does not make itself added to
    /// its start tag: `nc:operation` with xmlns:nc declared on <rpc> means the same here.
    std::string document;
};

/// The <config> child of `<rpc><edit-config>` or of `<rpc><copy-config><source>` (base
/// namespace, any prefixes) in `message`, when it holds at least one element.
std::optional<InlineConfig> findInlineConfig(std::string_view message);

/// Why libyang 2.1.30 must not be given `message`, or std::nullopt. Its XML parser dies (a NULL
/// strcmp) on an element that follows a same-named sibling in no namespace (`xmlns=""`, no
/// default namespace in scope, an undeclared prefix, or the prefixes `xml` and `xmlns`):
/// `<filter><x xmlns=""/><x/></filter>` in any message stopped the server. It creates an element before it
/// checks the rest of its start tag, and reads some tags that are not XML (`<a x="1"y="2">`), so a start tag
/// this scanner cannot read, or a DOCTYPE, is a reason too (such a message is malformed anyway). One pass,
/// linear in the size of the message.
std::optional<std::string> libyangHazard(std::string_view message);

/// `message` with the content of `config` replaced by `replacement`.
std::string replaceContent(std::string_view message, const InlineConfig& config,
                           std::string_view replacement);

} // namespace ncstore::netconfd
