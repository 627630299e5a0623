#include "ncstore/xml.hpp"

namespace ncstore {

void appendXmlEscaped(std::string& out, std::string_view text) {
    std::size_t plain = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char* entity = nullptr;
        switch (text[i]) {
        case '&':
            entity = "&amp;";
            break;
        case '<':
            entity = "&lt;";
            break;
        case '>':
            entity = "&gt;";
            break;
        case '"':
            entity = "&quot;";
            break;
        case '\'':
            entity = "&apos;";
            break;
        default:
            continue;
        }
        out.append(text, plain, i - plain);
        out += entity;
        plain = i + 1;
    }
    out.append(text, plain, text.size() - plain);
}

void appendElement(std::string& out, std::string_view name, std::string_view text) {
    out += '<';
    out += name;
    out += '>';
    appendXmlEscaped(out, text);
    out += "</";
    out += name;
    out += '>';
}

std::string xmlEscape(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    appendXmlEscaped(out, text);
    return out;
}

} // namespace ncstore
