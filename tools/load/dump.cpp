#include "dump.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <unordered_map>
#include <utility>

namespace ncstore::load {

namespace {

constexpr std::string_view kNetconfBase = "urn:ietf:params:xml:ns:netconf:base:1.0";

// --- XML: just enough of a scanner to find the wrapper and the elements it holds -------------

struct Tag {
    std::size_t begin = 0;   // '<'
    std::size_t nameEnd = 0; // one past the qualified name
    std::size_t end = 0;     // one past '>'
    std::string name;        // qualified
    bool selfClosing = false;
    bool closing = false;
};

[[noreturn]] void notXml(const char* what) {
    throw std::invalid_argument(std::string("the dump is not well-formed XML: ") + what);
}

std::size_t skipPast(std::string_view text, std::size_t pos, std::string_view terminator, const char* what) {
    const std::size_t at = text.find(terminator, pos);
    if (at == std::string_view::npos) {
        notXml(what);
    }
    return at + terminator.size();
}

// The next tag at or after `pos`, skipping text, comments, CDATA, processing instructions and
// declarations; nullopt at the end of the text.
std::optional<Tag> nextTag(std::string_view text, std::size_t pos) {
    while (true) {
        pos = text.find('<', pos);
        if (pos == std::string_view::npos) {
            return std::nullopt;
        }
        const std::string_view rest = text.substr(pos);
        if (rest.starts_with("<!--")) {
            pos = skipPast(text, pos + 4, "-->", "an unterminated comment");
        } else if (rest.starts_with("<![CDATA[")) {
            pos = skipPast(text, pos + 9, "]]>", "an unterminated CDATA section");
        } else if (rest.starts_with("<?")) {
            pos = skipPast(text, pos + 2, "?>", "an unterminated processing instruction");
        } else if (rest.starts_with("<!")) {
            pos = skipPast(text, pos + 2, ">", "an unterminated declaration");
        } else {
            break;
        }
    }
    Tag tag;
    tag.begin = pos;
    std::size_t i = pos + 1;
    if (i < text.size() && text[i] == '/') {
        tag.closing = true;
        ++i;
    }
    const std::size_t nameBegin = i;
    while (i < text.size() && !std::strchr(" \t\r\n/>", text[i])) {
        ++i;
    }
    if (i == nameBegin || i >= text.size()) {
        notXml("a tag without a name");
    }
    tag.name = std::string(text.substr(nameBegin, i - nameBegin));
    tag.nameEnd = i;
    char quote = 0;
    for (; i < text.size(); ++i) {
        const char c = text[i];
        if (quote) {
            quote = c == quote ? 0 : quote;
        } else if (c == '"' || c == '\'') {
            quote = c;
        } else if (c == '>') {
            tag.selfClosing = text[i - 1] == '/';
            tag.end = i + 1;
            return tag;
        }
    }
    notXml("an unterminated tag");
}

std::string_view localName(std::string_view qname) {
    const std::size_t colon = qname.find(':');
    return colon == std::string_view::npos ? qname : qname.substr(colon + 1);
}

// The namespace declarations (xmlns="..." and xmlns:p="...") written in a start tag.
std::vector<std::pair<std::string, std::string>> declarations(std::string_view tagText) {
    std::vector<std::pair<std::string, std::string>> out; // attribute name, whole attribute
    std::size_t pos = 0;
    while ((pos = tagText.find("xmlns", pos)) != std::string_view::npos) {
        const bool attrStart = pos > 0 && std::strchr(" \t\r\n", tagText[pos - 1]);
        std::size_t eq = tagText.find('=', pos);
        if (!attrStart || eq == std::string_view::npos) {
            pos += 5;
            continue;
        }
        const std::string name(tagText.substr(pos, tagText.find_first_of(" \t\r\n=", pos) - pos));
        std::size_t v = tagText.find_first_of("\"'", eq);
        if (v == std::string_view::npos) {
            notXml("an attribute without a quoted value");
        }
        const std::size_t close = tagText.find(tagText[v], v + 1);
        if (close == std::string_view::npos) {
            notXml("an unterminated attribute value");
        }
        out.emplace_back(name, std::string(tagText.substr(pos, close + 1 - pos)));
        pos = close + 1;
    }
    return out;
}

// The namespace a wrapper element is in: its prefix's declaration, or the default one.
std::string namespaceOf(const Tag& tag, std::string_view tagText) {
    const std::size_t colon = tag.name.find(':');
    const std::string attr = colon == std::string::npos ? "xmlns" : "xmlns:" + tag.name.substr(0, colon);
    for (const auto& [name, whole] : declarations(tagText)) {
        if (name == attr) {
            const std::size_t v = whole.find_first_of("\"'");
            return whole.substr(v + 1, whole.size() - v - 2);
        }
    }
    return {};
}

bool isWrapper(const Tag& tag, std::string_view text, std::initializer_list<std::string_view> names) {
    const std::string_view local = localName(tag.name);
    bool named = false;
    for (const std::string_view n : names) {
        named = named || local == n;
    }
    if (!named || tag.selfClosing) {
        return false;
    }
    const std::string ns = namespaceOf(tag, text.substr(tag.begin, tag.end - tag.begin));
    return ns.empty() || ns == kNetconfBase;
}

std::string unwrapXml(std::string_view text) {
    std::optional<Tag> top = nextTag(text, 0);
    if (!top || top->closing) {
        notXml("no element");
    }
    // Declarations of every wrapper passed, outermost first: inner ones override.
    std::vector<std::pair<std::string, std::string>> inherited;
    std::size_t contentBegin = 0;
    bool wrapped = false;
    auto enter = [&](const Tag& t) {
        for (auto& d : declarations(text.substr(t.begin, t.end - t.begin))) {
            std::erase_if(inherited, [&](const auto& i) { return i.first == d.first; });
            inherited.push_back(std::move(d));
        }
        contentBegin = t.end;
        wrapped = true;
    };
    if (isWrapper(*top, text, {"rpc-reply"})) {
        enter(*top);
        std::optional<Tag> inner = nextTag(text, top->end);
        if (!inner || inner->closing || !isWrapper(*inner, text, {"data"})) {
            throw std::invalid_argument("the dump is an <rpc-reply> without <data>");
        }
        enter(*inner);
    } else if (isWrapper(*top, text, {"data", "config"})) {
        enter(*top);
    }
    if (!wrapped) {
        return std::string(text);
    }
    // The elements directly inside the wrapper, each with the declarations it inherited.
    std::string out;
    out.reserve(text.size());
    int depth = 0;
    std::size_t pos = contentBegin;
    std::size_t childBegin = 0;
    while (true) {
        std::optional<Tag> tag = nextTag(text, pos);
        if (!tag) {
            notXml("the wrapper is not closed");
        }
        if (tag->closing) {
            if (depth == 0) {
                break; // the wrapper's end tag
            }
            if (--depth == 0) {
                out.append(text.substr(childBegin, tag->end - childBegin));
            }
        } else if (depth == 0) {
            childBegin = tag->begin;
            const std::string_view tagText = text.substr(tag->begin, tag->end - tag->begin);
            const auto own = declarations(tagText);
            out.append(text.substr(tag->begin, tag->nameEnd - tag->begin));
            for (const auto& declaration : inherited) {
                const bool redeclared = std::any_of(
                    own.begin(), own.end(), [&](const auto& o) { return o.first == declaration.first; });
                if (!redeclared) {
                    out += ' ';
                    out += declaration.second;
                }
            }
            if (tag->selfClosing) {
                out.append(text.substr(tag->nameEnd, tag->end - tag->nameEnd));
            } else {
                out.append(text.substr(tag->nameEnd, tag->end - tag->nameEnd));
                childBegin = tag->end;
                depth = 1;
            }
        } else if (!tag->selfClosing) {
            ++depth;
        }
        pos = tag->end;
    }
    return out;
}

// --- JSON: find the extent of one value --------------------------------------------------------

std::size_t skipSpace(std::string_view t, std::size_t i) {
    while (i < t.size() && std::strchr(" \t\r\n", t[i])) {
        ++i;
    }
    return i;
}

[[noreturn]] void notJson(const char* what) {
    throw std::invalid_argument(std::string("the dump is not well-formed JSON: ") + what);
}

std::size_t skipString(std::string_view t, std::size_t i) { // at '"'
    for (++i; i < t.size(); ++i) {
        if (t[i] == '\\') {
            ++i;
        } else if (t[i] == '"') {
            return i + 1;
        }
    }
    notJson("an unterminated string");
}

std::size_t skipValue(std::string_view t, std::size_t i) {
    i = skipSpace(t, i);
    if (i >= t.size()) {
        notJson("a missing value");
    }
    if (t[i] == '"') {
        return skipString(t, i);
    }
    if (t[i] != '{' && t[i] != '[') {
        while (i < t.size() && !std::strchr(",}] \t\r\n", t[i])) {
            ++i;
        }
        return i;
    }
    int depth = 0;
    for (; i < t.size(); ++i) {
        if (t[i] == '"') {
            i = skipString(t, i) - 1;
        } else if (t[i] == '{' || t[i] == '[') {
            ++depth;
        } else if ((t[i] == '}' || t[i] == ']') && --depth == 0) {
            return i + 1;
        }
    }
    notJson("an unterminated object or array");
}

std::string unwrapJson(std::string_view text) {
    std::size_t i = skipSpace(text, 0);
    if (i >= text.size() || text[i] != '{') {
        notJson("the document is not an object");
    }
    const std::size_t keyBegin = skipSpace(text, i + 1);
    if (keyBegin >= text.size() || text[keyBegin] != '"') {
        return std::string(text); // {} or not ours to judge: libyang will say
    }
    const std::size_t keyEnd = skipString(text, keyBegin);
    const std::string_view key = text.substr(keyBegin + 1, keyEnd - keyBegin - 2);
    if (key != "data" && key != "ietf-netconf:data" && key != "ietf-restconf:data") {
        return std::string(text);
    }
    const std::size_t colon = skipSpace(text, keyEnd);
    if (colon >= text.size() || text[colon] != ':') {
        notJson("a member without ':'");
    }
    const std::size_t valueBegin = skipSpace(text, colon + 1);
    const std::size_t valueEnd = skipValue(text, valueBegin);
    const std::size_t after = skipSpace(text, valueEnd);
    if (after >= text.size() || text[after] != '}' || text[valueBegin] != '{') {
        return std::string(text); // "data" beside other members: a node of some module
    }
    return std::string(text.substr(valueBegin, valueEnd - valueBegin));
}

// --- cleaning -----------------------------------------------------------------------------------

std::size_t countSubtree(const lyd_node* root) {
    std::size_t count = 0;
    const lyd_node* n = nullptr;
    LYD_TREE_DFS_BEGIN(root, n) {
        count += (n->flags & LYD_DEFAULT) ? 0 : 1; // what validation added is not the dump's
        LYD_TREE_DFS_END(root, n);
    }
    return count;
}

// Unlinks and frees `node`, keeping `forest` pointing at the first top-level sibling.
void removeNode(Tree& forest, lyd_node* node) {
    if (node == forest.get()) {
        lyd_node* next = node->next;
        forest.release();
        lyd_free_tree(node);
        forest.reset(next);
        return;
    }
    lyd_free_tree(node);
}

std::string moduleNameOf(const lyd_node* node) {
    if (node->schema) {
        return node->schema->module->name;
    }
    const auto* opaq = reinterpret_cast<const lyd_node_opaq*>(node);
    if (opaq->format == LY_VALUE_JSON) {
        return opaq->name.module_name ? opaq->name.module_name : "";
    }
    const lys_module* mod = opaq->name.module_ns
                                ? ly_ctx_get_module_implemented_ns(LYD_CTX(node), opaq->name.module_ns)
                                : nullptr;
    return mod ? mod->name : "";
}

// Why an opaque node (one libyang could not give a schema node) is not data of the models.
Dropped explainOpaque(const lyd_node* node) {
    const auto* opaq = reinterpret_cast<const lyd_node_opaq*>(node);
    const ly_ctx* ctx = LYD_CTX(node);
    Dropped d;
    d.path = pathOf(node);
    d.nodes = countSubtree(node);
    const std::string name = opaq->name.name ? opaq->name.name : "";
    const lys_module* mod = nullptr;
    if (opaq->format == LY_VALUE_JSON) {
        mod = opaq->name.module_name ? ly_ctx_get_module_implemented(ctx, opaq->name.module_name) : nullptr;
    } else if (opaq->name.module_ns) {
        mod = ly_ctx_get_module_implemented_ns(ctx, opaq->name.module_ns);
    }
    const char* nsText = opaq->format == LY_VALUE_JSON ? opaq->name.module_name : opaq->name.module_ns;
    if (!mod) {
        d.reason = "unknown-node";
        d.message = "no module of the models has the namespace \"" + std::string(nsText ? nsText : "") + "\"";
        return d;
    }
    const lysc_node* parentSchema = node->parent ? node->parent->schema : nullptr;
    const lysc_node* schema = lys_find_child(parentSchema, mod, name.c_str(), name.size(), 0, 0);
    if (!schema) {
        d.reason = "unknown-node";
        d.message = "module " + std::string(mod->name) + " has no node \"" + name + "\" here";
        return d;
    }
    if (schema->nodetype & LYD_NODE_TERM) {
        const char* value = opaq->value ? opaq->value : "";
        d.reason = "invalid-value";
        ly_err_clean(const_cast<ly_ctx*>(ctx), nullptr);
        // The value's prefixes are those of the dump, which lyd_value_validate cannot see: its
        // message names the type's complaint where there is one, else ours stands.
        const LY_ERR rc =
            lyd_value_validate(ctx, schema, value, std::strlen(value), nullptr, nullptr, nullptr);
        const std::string why = rc == LY_SUCCESS ? std::string() : lastError(ctx);
        d.message =
            "value \"" + std::string(value) + "\" is not valid for " + name + (why.empty() ? "" : ": " + why);
        ly_err_clean(const_cast<ly_ctx*>(ctx), nullptr);
        return d;
    }
    if (schema->nodetype == LYS_LIST) {
        d.reason = "invalid-key";
        d.message = "an entry of list " + name + " without valid keys";
        return d;
    }
    d.reason = "invalid-node";
    d.message = "\"" + name + "\" could not be parsed as the models define it";
    return d;
}

std::string reasonOf(std::string_view message) {
    static const std::pair<std::string_view, std::string_view> kReasons[] = {
        {"Mandatory", "missing-mandatory"},
        {"Invalid leafref value", "dangling-leafref"},
        {"required instance not found", "missing-instance"},
        {"When condition", "when-false"},
        {"Must condition", "must-false"},
        {"Unique data leaf", "not-unique"},
        {"Too few", "too-few-elements"},
        {"Too many", "too-many-elements"},
        {"Duplicate instance", "duplicate"},
    };
    for (const auto& [needle, reason] : kReasons) {
        if (message.find(needle) != std::string_view::npos) {
            return std::string(reason);
        }
    }
    return "invalid";
}

// The node an error path names, or its nearest ancestor in the tree (a missing node's path names
// the node that is not there).
lyd_node* findNearest(const lyd_node* forest, std::string path, bool& exact) {
    exact = true;
    while (!path.empty()) {
        lyd_node* found = nullptr;
        if (lyd_find_path(forest, path.c_str(), 0, &found) == LY_SUCCESS && found) {
            return found;
        }
        exact = false;
        // One step up: cut the last segment, outside of predicates.
        int depth = 0;
        char quote = 0;
        std::size_t cut = std::string::npos;
        for (std::size_t i = 0; i < path.size(); ++i) {
            const char c = path[i];
            if (quote) {
                quote = c == quote ? 0 : quote;
            } else if (c == '\'' || c == '"') {
                quote = c;
            } else if (c == '[') {
                ++depth;
            } else if (c == ']') {
                --depth;
            } else if (c == '/' && depth == 0) {
                cut = i;
            }
        }
        if (cut == std::string::npos || cut == 0) {
            return nullptr;
        }
        path.resize(cut);
    }
    return nullptr;
}

// What goes when `node` cannot stay: a list key takes its entry along; a node that is missing
// something takes the nearest list entry or presence container (or top-level node) holding it.
lyd_node* dropTarget(lyd_node* node, bool holderOfMissing) {
    if (node->schema && lysc_is_key(node->schema) && node->parent) {
        return lyd_parent(node);
    }
    if (!holderOfMissing) {
        return node;
    }
    lyd_node* n = node;
    while (n->parent && n->schema && n->schema->nodetype == LYS_CONTAINER &&
           !(n->schema->flags & LYS_PRESENCE)) {
        n = lyd_parent(n);
    }
    return n;
}

using CopyMap = std::unordered_map<const lyd_node*, lyd_node*>;

// The state forest's copy of the configuration node `node` (its keys only), made when first needed.
lyd_node* stateCopyOf(const lyd_node* node, Tree& state, CopyMap& copies) {
    if (const auto it = copies.find(node); it != copies.end()) {
        return it->second;
    }
    lyd_node* parentCopy = node->parent ? stateCopyOf(lyd_parent(node), state, copies) : nullptr;
    lyd_node* copy = nullptr;
    if (lyd_dup_single(node, reinterpret_cast<lyd_node_inner*>(parentCopy), LYD_DUP_WITH_FLAGS, &copy) !=
        LY_SUCCESS) {
        throw YangError("copying " + pathOf(node) + " for its state failed", LYD_CTX(node));
    }
    if (!parentCopy && insertSiblings(state, copy) != LY_SUCCESS) {
        lyd_free_tree(copy);
        throw YangError("collecting the state failed", LYD_CTX(node));
    }
    copies.emplace(node, copy);
    return copy;
}

// Moves every config false subtree of `config` into `state`.
void splitState(Tree& config, Tree& state) {
    std::vector<lyd_node*> stateRoots;
    for (lyd_node* top = config.get(); top; top = top->next) {
        lyd_node* n = nullptr;
        LYD_TREE_DFS_BEGIN(top, n) {
            if (n->schema && (n->schema->flags & LYS_CONFIG_R)) {
                stateRoots.push_back(n);
                LYD_TREE_DFS_continue = 1; // the whole subtree goes with it
            }
            LYD_TREE_DFS_END(top, n);
        }
    }
    CopyMap copies;
    for (lyd_node* root : stateRoots) {
        lyd_node* parentCopy = root->parent ? stateCopyOf(lyd_parent(root), state, copies) : nullptr;
        lyd_node* copy = nullptr;
        if (lyd_dup_single(root, reinterpret_cast<lyd_node_inner*>(parentCopy),
                           LYD_DUP_RECURSIVE | LYD_DUP_WITH_FLAGS, &copy) != LY_SUCCESS) {
            throw YangError("copying the state " + pathOf(root) + " failed", LYD_CTX(root));
        }
        if (!parentCopy && insertSiblings(state, copy) != LY_SUCCESS) {
            lyd_free_tree(copy);
            throw YangError("collecting the state failed", LYD_CTX(root));
        }
    }
    for (lyd_node* root : stateRoots) {
        removeNode(config, root);
    }
}

// libyang validates incrementally: a `when` that held is not evaluated again once what it
// depends on was dropped. Every node counts as new, so each round validates all of it.
void markUnvalidated(lyd_node* forest) {
    for (lyd_node* top = forest; top; top = top->next) {
        lyd_node* n = nullptr;
        LYD_TREE_DFS_BEGIN(top, n) {
            n->flags = (n->flags | LYD_NEW) & ~LYD_WHEN_TRUE;
            LYD_TREE_DFS_END(top, n);
        }
    }
}

// The instances of the parent of the schema node `schemaPath` that lack it (a missing mandatory
// node, a too-short list: libyang 2.1 names only the schema node).
std::vector<lyd_node*> lackingInstances(const ly_ctx* ctx, const lyd_node* config,
                                        const std::string& schemaPath) {
    const lysc_node* missing = lys_find_path(ctx, nullptr, schemaPath.c_str(), 0);
    const lysc_node* holder = missing ? lysc_data_parent(missing) : nullptr;
    if (!holder) {
        return {};
    }
    CString holderPath{lysc_path(holder, LYSC_PATH_DATA, nullptr, 0)};
    const std::string xpath =
        std::string(holderPath.get()) + "[not(" + missing->module->name + ":" + missing->name + ")]";
    ly_set* raw = nullptr;
    if (lyd_find_xpath(config, xpath.c_str(), &raw) != LY_SUCCESS) {
        return {};
    }
    const Set found{raw};
    std::vector<lyd_node*> out;
    for (uint32_t i = 0; i < found->count; ++i) {
        out.push_back(found->dnodes[i]);
    }
    return out;
}

// Drops `target` from the configuration, and its state with it, recording why.
void dropConfig(Result& r, lyd_node* target, const std::string& reason, const std::string& message) {
    Dropped d{pathOf(target), reason, message, countSubtree(target)};
    lyd_node* stateTwin = nullptr;
    if (r.state && lyd_find_path(r.state.get(), d.path.c_str(), 0, &stateTwin) == LY_SUCCESS && stateTwin) {
        std::size_t keys = 0; // the copy's keys were counted with the configuration
        for (const lyd_node* c = lyd_child(stateTwin); c; c = c->next) {
            keys += c->schema && lysc_is_key(c->schema) ? 1 : 0;
        }
        d.nodes += countSubtree(stateTwin) - 1 - keys;
        removeNode(r.state, stateTwin);
    }
    r.dropped.push_back(std::move(d));
    removeNode(r.config, target);
}

} // namespace

std::map<std::string, std::size_t> Result::countsByReason() const {
    std::map<std::string, std::size_t> counts;
    for (const Dropped& d : dropped) {
        ++counts[d.reason];
    }
    return counts;
}

std::size_t countNodes(const lyd_node* forest) {
    std::size_t count = 0;
    for (const lyd_node* top = forest; top; top = top->next) {
        count += countSubtree(top);
    }
    return count;
}

std::string unwrap(std::string_view text, LYD_FORMAT format) {
    return format == LYD_JSON ? unwrapJson(text) : unwrapXml(text);
}

Result clean(const ly_ctx* ctx, const std::string& forest, LYD_FORMAT format,
             const std::set<std::string>& dataModules) {
    Result r;
    lyd_node* raw = nullptr;
    ly_err_clean(const_cast<ly_ctx*>(ctx), nullptr);
    if (lyd_parse_data_mem(ctx, forest.c_str(), format, LYD_PARSE_ONLY | LYD_PARSE_OPAQ, 0, &raw) !=
        LY_SUCCESS) {
        Tree owned{raw};
        throw YangError("the dump cannot be parsed", ctx);
    }
    Tree tree{raw};
    r.nodesRead = countNodes(tree.get());

    // 1. What has no schema node (unknown, invalid values, entries without keys) and what is
    //    not a data model's: whole subtrees, outermost first.
    std::vector<lyd_node*> gone;
    for (lyd_node* top = tree.get(); top; top = top->next) {
        const std::string module = moduleNameOf(top);
        if (top->schema && !dataModules.contains(module)) {
            r.dropped.push_back({pathOf(top), "server-module",
                                 "module " + module + " is the server's own, not a data model it serves",
                                 countSubtree(top)});
            gone.push_back(top);
            continue;
        }
        lyd_node* n = nullptr;
        LYD_TREE_DFS_BEGIN(top, n) {
            if (!n->schema) {
                r.dropped.push_back(explainOpaque(n));
                gone.push_back(n);
                LYD_TREE_DFS_continue = 1;
            }
            LYD_TREE_DFS_END(top, n);
        }
    }
    for (lyd_node* n : gone) {
        removeNode(tree, n);
    }

    // 2. State apart: running gets configuration only.
    splitState(tree, r.state);
    r.config = std::move(tree);

    // 3. Validation of running, one complaint at a time.
    for (std::size_t round = 0; r.config; ++round) {
        ly_err_clean(const_cast<ly_ctx*>(ctx), nullptr);
        markUnvalidated(r.config.get());
        lyd_node* head = r.config.release();
        const LY_ERR rc = lyd_validate_all(&head, ctx, LYD_VALIDATE_NO_STATE | LYD_VALIDATE_PRESENT, nullptr);
        r.config.reset(head);
        if (rc == LY_SUCCESS) {
            break;
        }
        const std::string message = lastError(ctx);
        const ErrorLocation where = lastErrorLocation(ctx);
        const std::string reason = reasonOf(message);
        std::vector<std::pair<lyd_node*, bool>> blamed; // node, whether it holds what is missing
        if (!where.data.empty()) {
            bool exact = false;
            if (lyd_node* found = findNearest(r.config.get(), where.data, exact)) {
                blamed.emplace_back(found,
                                    reason == "missing-mandatory" || reason == "too-few-elements" || !exact);
            }
        } else if (!where.schema.empty() && (reason == "missing-mandatory" || reason == "too-few-elements")) {
            // libyang names only the schema node that is missing: every entry lacking it is blamed.
            for (lyd_node* holder : lackingInstances(ctx, r.config.get(), where.schema)) {
                blamed.emplace_back(holder, true);
            }
        }
        if (blamed.empty() || round > r.nodesRead) {
            throw YangError("the configuration does not validate and no node of it can be blamed: " +
                            message + " (" + lastErrorPath(ctx) + ")");
        }
        std::vector<lyd_node*> targets;
        for (const auto& [node, holder] : blamed) {
            lyd_node* target = dropTarget(node, holder);
            if (std::find(targets.begin(), targets.end(), target) == targets.end()) {
                targets.push_back(target);
            }
        }
        for (lyd_node* target : targets) {
            dropConfig(r, target, reason, message);
        }
    }
    ly_err_clean(const_cast<ly_ctx*>(ctx), nullptr);
    r.configNodes = countNodes(r.config.get());
    r.stateNodes = countNodes(r.state.get());
    return r;
}

void setLeaf(Result& result, const ly_ctx* ctx, const std::string& path, const std::string& value) {
    const lysc_node* schema = lys_find_path(ctx, nullptr, path.c_str(), 0);
    if (!schema || !(schema->nodetype & LYD_NODE_TERM)) {
        throw YangError("--set " + path + ": not a leaf of the models", ctx);
    }
    Tree& tree = (schema->flags & LYS_CONFIG_R) ? result.state : result.config;
    lyd_node* head = tree.release();
    lyd_node* created = nullptr;
    const LY_ERR rc = lyd_new_path(head, ctx, path.c_str(), value.c_str(), LYD_NEW_PATH_UPDATE, &created);
    if (!head && created) {
        head = created;
        while (head->parent) {
            head = lyd_parent(head);
        }
    }
    tree.reset(head);
    if (tree) {
        lyd_node* first = lyd_first_sibling(tree.release());
        tree.reset(first);
    }
    if (rc != LY_SUCCESS) {
        throw YangError("--set " + path + "=" + value + " failed", ctx);
    }
    if (&tree == &result.config) {
        head = result.config.release();
        const LY_ERR valid =
            lyd_validate_all(&head, ctx, LYD_VALIDATE_NO_STATE | LYD_VALIDATE_PRESENT, nullptr);
        result.config.reset(head);
        if (valid != LY_SUCCESS) {
            throw YangError("--set " + path + "=" + value + " leaves the configuration invalid", ctx);
        }
    }
    result.configNodes = countNodes(result.config.get());
    result.stateNodes = countNodes(result.state.get());
}

} // namespace ncstore::load
