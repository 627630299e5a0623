#include "inlineconfig.hpp"

#include <unordered_set>
#include <vector>

namespace ncstore::netconfd {

namespace {

constexpr auto npos = std::string_view::npos;

bool isSpace(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

bool allSpace(std::string_view s) {
    for (const char c : s) {
        if (!isSpace(c)) {
            return false;
        }
    }
    return true;
}

/// A namespace declaration as written: `raw` is the whole attribute, `xmlns:nc="urn:..."`.
struct NamespaceDecl {
    std::string_view prefix; ///< "" for the default namespace
    std::string_view value;  ///< between the quotes, entities not expanded
    std::string_view raw;
};

struct StartTag {
    std::string_view name; ///< as written, with its prefix
    std::vector<NamespaceDecl> namespaces;
    bool empty = false;  ///< <x/>
    std::size_t end = 0; ///< past its '>'
};

std::string_view prefixOf(std::string_view qname) {
    const auto colon = qname.find(':');
    return colon == npos ? std::string_view() : qname.substr(0, colon);
}

std::string_view localNameOf(std::string_view qname) {
    const auto colon = qname.find(':');
    return colon == npos ? qname : qname.substr(colon + 1);
}

/// The start tag whose '<' is at `pos`; std::nullopt for what is not one.
std::optional<StartTag> readStartTag(std::string_view s, std::size_t pos) {
    if (pos >= s.size() || s[pos] != '<') {
        return std::nullopt;
    }
    StartTag tag;
    std::size_t i = pos + 1;
    while (i < s.size() && !isSpace(s[i]) && s[i] != '/' && s[i] != '>') {
        ++i;
    }
    tag.name = s.substr(pos + 1, i - pos - 1);
    if (tag.name.empty() || tag.name.find_first_of("<!?\"'=") != npos) {
        return std::nullopt;
    }
    for (;;) {
        const std::size_t before = i;
        while (i < s.size() && isSpace(s[i])) {
            ++i;
        }
        if (i >= s.size()) {
            return std::nullopt;
        }
        if (s[i] == '>') {
            tag.end = i + 1;
            return tag;
        }
        if (s.compare(i, 2, "/>") == 0) {
            tag.empty = true;
            tag.end = i + 2;
            return tag;
        }
        if (i == before) {
            return std::nullopt; // attributes must be separated by white space
        }
        const std::size_t nameStart = i;
        while (i < s.size() && !isSpace(s[i]) && s[i] != '=' && s[i] != '>' && s[i] != '/') {
            ++i;
        }
        const std::string_view name = s.substr(nameStart, i - nameStart);
        while (i < s.size() && isSpace(s[i])) {
            ++i;
        }
        if (name.empty() || i >= s.size() || s[i] != '=') {
            return std::nullopt;
        }
        ++i;
        while (i < s.size() && isSpace(s[i])) {
            ++i;
        }
        if (i >= s.size() || (s[i] != '"' && s[i] != '\'')) {
            return std::nullopt;
        }
        const auto close = s.find(s[i], i + 1);
        if (close == npos) {
            return std::nullopt;
        }
        const std::string_view value = s.substr(i + 1, close - i - 1);
        if (value.find('<') != npos) {
            return std::nullopt;
        }
        i = close + 1;
        if (name == "xmlns" || name.substr(0, 6) == "xmlns:") {
            tag.namespaces.push_back({name.size() > 5 ? name.substr(6) : std::string_view(), value,
                                      s.substr(nameStart, i - nameStart)});
        }
    }
}

/// Offset past the '>' of the tag starting at `pos`, '>' in quoted attribute values skipped.
std::size_t tagEnd(std::string_view s, std::size_t pos) {
    for (std::size_t i = pos + 1; i < s.size(); ++i) {
        if (s[i] == '"' || s[i] == '\'') {
            i = s.find(s[i], i + 1);
            if (i == npos) {
                return npos;
            }
        } else if (s[i] == '>') {
            return i + 1;
        }
    }
    return npos;
}

/// Past the comment, CDATA section or processing instruction whose '<' is at `lt`; npos for an
/// unterminated one, or for other markup (a DOCTYPE: not ours to interpret).
std::size_t pastMarkup(std::string_view s, std::size_t lt) {
    const auto past = [s](std::string_view close, std::size_t from) {
        const auto end = s.find(close, from);
        return end == npos ? npos : end + close.size();
    };
    if (s.compare(lt, 4, "<!--") == 0) {
        return past("-->", lt + 4);
    }
    if (s.compare(lt, 9, "<![CDATA[") == 0) {
        return past("]]>", lt + 9);
    }
    if (s.compare(lt, 2, "<?") == 0) {
        return past("?>", lt + 2);
    }
    return npos;
}

/// Past white space, comments and processing instructions from `pos`: the next '<' of an
/// element or end tag, the first other character, or npos for an unterminated one.
std::size_t skipMisc(std::string_view s, std::size_t pos) {
    if (pos > s.size()) {
        return npos;
    }
    for (;;) {
        while (pos < s.size() && isSpace(s[pos])) {
            ++pos;
        }
        if (s.compare(pos, 4, "<!--") != 0 && s.compare(pos, 2, "<?") != 0) {
            return pos;
        }
        pos = pastMarkup(s, pos);
        if (pos == npos) {
            return npos;
        }
    }
}

/// The content of an element, from `pos` (past its start tag) to its end tag.
struct Content {
    std::size_t end = npos;            ///< the '<' of the end tag; npos when not understood
    std::vector<std::size_t> children; ///< the '<' of each child element
    bool onlyElements = true;          ///< nothing but white space, comments beside the children
};

Content scanContent(std::string_view s, std::size_t pos, bool wantChildren) {
    Content c;
    int depth = 0;
    for (;;) {
        const auto lt = s.find('<', pos);
        if (lt == npos || lt + 1 >= s.size()) {
            return {};
        }
        if (depth == 0 && !allSpace(s.substr(pos, lt - pos))) {
            c.onlyElements = false;
        }
        // Dispatched on the character after '<': most are tags, and this runs over megabytes.
        std::size_t next = npos;
        const char kind = s[lt + 1];
        if (kind == '/') {
            if (depth == 0) {
                c.end = lt;
                return c;
            }
            --depth;
            const auto gt = s.find('>', lt);
            next = gt == npos ? npos : gt + 1;
        } else if (kind == '!' || kind == '?') {
            if (kind == '?' || s.compare(lt, 9, "<![CDATA[") == 0) {
                c.onlyElements = c.onlyElements && depth > 0;
            }
            next = pastMarkup(s, lt);
        } else {
            if (depth == 0 && wantChildren) {
                c.children.push_back(lt);
            }
            next = tagEnd(s, lt);
            if (next != npos && s[next - 2] != '/') {
                ++depth;
            }
        }
        if (next == npos) {
            return {};
        }
        pos = next;
    }
}

/// Offset past the element whose start tag is `tag`.
std::size_t elementEnd(std::string_view s, const StartTag& tag) {
    if (tag.empty) {
        return tag.end;
    }
    const Content content = scanContent(s, tag.end, false);
    if (content.end == npos) {
        return npos;
    }
    const auto gt = s.find('>', content.end);
    return gt == npos ? npos : gt + 1;
}

/// The namespace declarations in scope, innermost last.
using Scope = std::vector<NamespaceDecl>;

void enter(Scope& scope, const StartTag& tag) {
    scope.insert(scope.end(), tag.namespaces.begin(), tag.namespaces.end());
}

std::optional<std::string_view> namespaceOf(const Scope& scope, std::string_view qname) {
    const auto prefix = prefixOf(qname);
    for (auto d = scope.rbegin(); d != scope.rend(); ++d) {
        if (d->prefix == prefix) {
            return d->value;
        }
    }
    return std::nullopt;
}

bool isBase(const Scope& scope, const StartTag& tag, std::string_view localName) {
    return localNameOf(tag.name) == localName && namespaceOf(scope, tag.name) == kNetconfBaseNs;
}

/// The only child element `localName` (base namespace) of the element whose content starts at
/// `pos`, with `scope` extended by its declarations; std::nullopt if there is none or several,
/// or the content is not understood.
std::optional<StartTag> onlyChild(std::string_view s, std::size_t pos, Scope& scope,
                                  std::string_view localName) {
    std::optional<StartTag> found;
    Scope foundScope;
    for (;;) {
        pos = skipMisc(s, pos);
        if (pos == npos || pos >= s.size() || s[pos] != '<') {
            return std::nullopt;
        }
        if (s.compare(pos, 2, "</") == 0) {
            break;
        }
        auto tag = readStartTag(s, pos);
        if (!tag) {
            return std::nullopt;
        }
        Scope inner = scope;
        enter(inner, *tag);
        if (isBase(inner, *tag, localName)) {
            if (found) {
                return std::nullopt;
            }
            found = tag;
            foundScope = std::move(inner);
        }
        pos = elementEnd(s, *tag);
        if (pos == npos) {
            return std::nullopt;
        }
    }
    if (found) {
        scope = std::move(foundScope);
    }
    return found;
}

} // namespace

std::optional<InlineConfig> findInlineConfig(std::string_view s) {
    std::size_t pos = skipMisc(s, 0);
    const auto rpc = pos == npos ? std::nullopt : readStartTag(s, pos);
    Scope scope;
    if (!rpc || rpc->empty) {
        return std::nullopt;
    }
    enter(scope, *rpc);
    if (!isBase(scope, *rpc, "rpc")) {
        return std::nullopt;
    }
    pos = skipMisc(s, rpc->end);
    const auto op = pos == npos ? std::nullopt : readStartTag(s, pos);
    if (!op || op->empty) {
        return std::nullopt;
    }
    enter(scope, *op);
    std::optional<StartTag> config;
    if (isBase(scope, *op, "edit-config")) {
        config = onlyChild(s, op->end, scope, "config");
    } else if (isBase(scope, *op, "copy-config")) {
        if (const auto source = onlyChild(s, op->end, scope, "source"); source && !source->empty) {
            config = onlyChild(s, source->end, scope, "config");
        }
    }
    if (!config || config->empty) {
        return std::nullopt;
    }
    const Content content = scanContent(s, config->end, true);
    if (content.end == npos || content.children.empty() || !content.onlyElements) {
        return std::nullopt;
    }

    InlineConfig out;
    out.begin = config->end;
    out.end = content.end;
    // The innermost declaration of each prefix is the one in scope.
    Scope inScope;
    for (auto d = scope.rbegin(); d != scope.rend(); ++d) {
        bool shadowed = false;
        for (const auto& seen : inScope) {
            shadowed = shadowed || seen.prefix == d->prefix;
        }
        if (!shadowed) {
            inScope.push_back(*d);
        }
    }
    std::size_t declared = 0;
    for (const auto& d : inScope) {
        declared += d.raw.size() + 1;
    }
    out.document.reserve(out.end - out.begin + content.children.size() * declared);
    std::size_t copied = out.begin;
    for (const std::size_t child : content.children) {
        const auto tag = readStartTag(s, child);
        if (!tag) {
            return std::nullopt;
        }
        const std::size_t afterName = child + 1 + tag->name.size();
        out.document.append(s.substr(copied, afterName - copied));
        for (const auto& d : inScope) {
            bool own = false;
            for (const auto& mine : tag->namespaces) {
                own = own || mine.prefix == d.prefix;
            }
            if (!own) {
                out.document += ' ';
                out.document.append(d.raw);
            }
        }
        copied = afterName;
    }
    out.document.append(s.substr(copied, out.end - copied));
    return out;
}

std::optional<std::string> libyangHazard(std::string_view s) {
    struct Open {
        std::size_t scopeSize;                     ///< the scope outside the element
        std::unordered_set<std::string_view> bare; ///< local names of its children without namespace
    };
    Scope scope;
    std::vector<Open> open{{0, {}}}; // the document itself first
    std::size_t pos = 0;
    for (;;) {
        const auto lt = s.find('<', pos);
        if (lt == npos || lt + 1 >= s.size()) {
            return std::nullopt;
        }
        std::size_t next = npos;
        const char kind = s[lt + 1];
        if (kind == '/') {
            if (open.size() > 1) {
                scope.resize(open.back().scopeSize);
                open.pop_back();
            }
            const auto gt = s.find('>', lt);
            next = gt == npos ? npos : gt + 1;
        } else if (kind == '!' || kind == '?') {
            next = pastMarkup(s, lt);
            if (next == npos && kind == '!' && s.compare(lt, 4, "<!--") != 0 &&
                s.compare(lt, 9, "<![CDATA[") != 0) {
                return "a DOCTYPE or other declaration at offset " + std::to_string(lt);
            }
        } else {
            const auto tag = readStartTag(s, lt);
            if (!tag) {
                return "a start tag that is not well-formed XML at offset " + std::to_string(lt);
            }
            const std::size_t outside = scope.size();
            enter(scope, *tag);
            // Any element after a same-named sibling without a namespace; a set: 100,000
            // differently named siblings must not cost 100,000 squared.
            const auto name = localNameOf(tag->name);
            auto& bare = open.back().bare;
            if (bare.count(name)) {
                return "a sibling <" + std::string(name) + "> after one without a namespace";
            }
            if (const auto ns = namespaceOf(scope, tag->name); !ns || ns->empty()) {
                bare.insert(name);
            }
            if (tag->empty) {
                scope.resize(outside);
            } else {
                open.push_back({outside, {}});
            }
            next = tag->end;
        }
        if (next == npos) {
            return std::nullopt;
        }
        pos = next;
    }
}

std::string replaceContent(std::string_view message, const InlineConfig& config,
                           std::string_view replacement) {
    std::string out;
    out.reserve(config.begin + replacement.size() + (message.size() - config.end));
    out.append(message.substr(0, config.begin));
    out.append(replacement);
    out.append(message.substr(config.end));
    return out;
}

} // namespace ncstore::netconfd
