#include "rulepath.hpp"

#include "ncstore/yang.hpp"

#include <algorithm>
#include <cctype>

namespace ncstore::nacm::detail {

namespace {

bool isNameStart(char c) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}

bool isNameChar(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
}

/// A cursor over the path text.
class Lexer {
public:
    explicit Lexer(std::string_view text) : text_(text) {}

    void skipSpace() {
        while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) {
            ++pos_;
        }
    }
    bool atEnd() {
        skipSpace();
        return pos_ == text_.size();
    }
    char peek() {
        skipSpace();
        return pos_ < text_.size() ? text_[pos_] : '\0';
    }
    bool accept(char c) {
        if (peek() != c) {
            return false;
        }
        ++pos_;
        return true;
    }
    void expect(char c, const char* what) {
        if (!accept(c)) {
            fail(std::string("expected ") + what);
        }
    }
    std::string_view name() {
        skipSpace();
        const size_t start = pos_;
        if (pos_ < text_.size() && isNameStart(text_[pos_])) {
            ++pos_;
            while (pos_ < text_.size() && isNameChar(text_[pos_])) {
                ++pos_;
            }
        }
        if (pos_ == start) {
            fail("expected a node name");
        }
        return text_.substr(start, pos_ - start);
    }
    /// [prefix:]name; prefix empty when absent.
    std::pair<std::string_view, std::string_view> qname() {
        std::string_view first = name();
        if (pos_ < text_.size() && text_[pos_] == ':') {
            ++pos_;
            return {first, name()};
        }
        return {{}, first};
    }
    std::string literal() {
        const char quote = peek();
        if (quote != '\'' && quote != '"') {
            if (quote == '$') {
                fail("variables are not supported in rule paths");
            }
            fail("expected a quoted value");
        }
        ++pos_;
        const size_t end = text_.find(quote, pos_);
        if (end == std::string_view::npos) {
            fail("unterminated quoted value");
        }
        std::string value(text_.substr(pos_, end - pos_));
        pos_ = end + 1;
        return value;
    }
    [[noreturn]] void fail(const std::string& why) const {
        throw PathError(why + " at offset " + std::to_string(pos_));
    }

private:
    std::string_view text_;
    size_t pos_ = 0;
};

std::string canonicalKeyValue(const ly_ctx* ctx, const lysc_node* key, const std::string& value) {
    const char* canonical = nullptr;
    const LY_ERR rc = lyd_value_validate(ctx, key, value.c_str(), value.size(), nullptr, nullptr, &canonical);
    if (rc != LY_SUCCESS && rc != LY_EINCOMPLETE) {
        throw PathError("'" + value + "' is not a valid value of " + key->name + ": " + lastError(ctx));
    }
    if (!canonical) {
        return value; // incomplete (leafref, instance-identifier key): compare as given
    }
    std::string out(canonical);
    lydict_remove(key->module->ctx, canonical);
    return out;
}

/// The key leaf `name` of `list`, or throws.
const lysc_node* keyOf(const lysc_node* list, std::string_view prefix, std::string_view name) {
    if (!prefix.empty() && prefix != list->module->name) {
        throw PathError(std::string("key '") + std::string(name) + "' of " + list->name + " is in module '" +
                        list->module->name + "', not '" + std::string(prefix) + "'");
    }
    const lysc_node* key = lys_find_child(list, list->module, std::string(name).c_str(), 0, LYS_LEAF, 0);
    if (!key || !lysc_is_key(key)) {
        throw PathError("'" + std::string(name) + "' is not a key of list " + list->name +
                        " (rule paths may only predicate list keys)");
    }
    return key;
}

} // namespace

RulePath parseRulePath(const ly_ctx* ctx, std::string_view text) {
    RulePath out;
    Lexer lex(text);
    if (lex.atEnd()) {
        throw PathError("empty path");
    }
    lex.expect('/', "'/' at the start of the path");
    if (lex.atEnd()) {
        out.all = true;
        return out;
    }
    const lys_module* module = nullptr;
    const lysc_node* node = nullptr;
    for (bool first = true; first || !lex.atEnd(); first = false) {
        if (!first) {
            lex.expect('/', "'/' or the end of the path");
        }
        const auto [prefix, name] = lex.qname();
        if (!prefix.empty()) {
            const std::string modName(prefix);
            module = ly_ctx_get_module_implemented(ctx, modName.c_str());
            if (!module) {
                throw PathError("module '" + modName + "' is not implemented by the server");
            }
        } else if (!module) {
            throw PathError("the first node must name its module (module:node)");
        }
        const std::string nodeName(name);
        const lysc_node* child = lys_find_child(node, module, nodeName.c_str(), 0, 0, 0);
        if (!child) {
            throw PathError("no node '" + nodeName + "' of module '" + module->name + "' " +
                            (node ? "under " + std::string(node->name) : std::string("at the top level")));
        }
        node = child;
        PredStep step{node, {}};
        while (lex.accept('[')) {
            const char c = lex.peek();
            KeyMatch match{nullptr, {}};
            if (c == '.') {
                lex.expect('.', "'.'");
                if (node->nodetype != LYS_LEAFLIST) {
                    throw PathError(std::string("[.=...] on ") + node->name + ", which is not a leaf-list");
                }
                match.key = node;
            } else if (std::isdigit(static_cast<unsigned char>(c))) {
                throw PathError("positional predicates are not supported in rule paths");
            } else {
                if (node->nodetype != LYS_LIST) {
                    throw PathError(std::string("predicate on ") + node->name + ", which is not a list");
                }
                const auto [keyPrefix, keyName] = lex.qname();
                match.key = keyOf(node, keyPrefix, keyName);
            }
            lex.expect('=', "'='");
            match.value = canonicalKeyValue(ctx, match.key, lex.literal());
            lex.expect(']', "']'");
            const bool repeated = std::any_of(step.keys.begin(), step.keys.end(),
                                              [&](const KeyMatch& k) { return k.key == match.key; });
            if (repeated) {
                throw PathError(std::string("key ") + match.key->name + " is predicated twice");
            }
            step.keys.push_back(std::move(match));
        }
        if (!step.keys.empty()) {
            std::sort(step.keys.begin(), step.keys.end(),
                      [](const KeyMatch& a, const KeyMatch& b) { return a.key < b.key; });
            out.preds.push_back(std::move(step));
        }
    }
    out.target = node;
    return out;
}

} // namespace ncstore::nacm::detail
