// XML text escaping for what ncstored prints itself (NETCONF envelopes, errors, notifications).
//
// Promises: the five characters XML reserves (& < > " ') are replaced by their entities, every
// other byte is copied as is; the output is safe as element content and as a quoted attribute
// value. The input must already be valid UTF-8 (libyang's values are).
#pragma once

#include <string>
#include <string_view>

namespace ncstore {

void appendXmlEscaped(std::string& out, std::string_view text);
std::string xmlEscape(std::string_view text);
/// Appends `<name>text</name>`, `text` escaped.
void appendElement(std::string& out, std::string_view name, std::string_view text);

} // namespace ncstore
