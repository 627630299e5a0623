// NMDA (RFC 8342, RFC 8526): get-data and edit-data on running, candidate, startup, intended and
// operational.
//
// The datastores as this server has them: intended is running (ncstore has no inactive
// configuration and no templates to take out of it, RFC 8342 5.1.4), read-only; operational is
// running as applied (origin intended: the server applies every committed change, nothing is
// refused or pending) with the defaults in use (origin default) and the server's own state data
// (origin system: monitoring, yang-library, NACM counters, the commit history, the notification
// streams), read-only.
//
// get-data reads through the one read path of every read (read/readpath.hpp: filters, NACM,
// with-defaults, the state providers). with-origin alone annotates the printed text; only
// config-filter, max-depth and the origin filters need a copy of what is selected, pruned and annotated
// before it is printed.
#include "ops.hpp"

#include "edit.hpp"
#include "readpath.hpp"
#include "rpcargs.hpp"
#include "sessionaccess.hpp"

#include "ncstore/log.hpp"

#include "filter.hpp"

#include <cstring>
#include <functional>

namespace ncstore::netconfd {

class NmdaOps {
public:
    explicit NmdaOps(const Services& svc) : svc_(svc) {}
    Reply getData(Request& r);
    Reply editData(Request& r);

private:
    Services svc_;
};

using namespace rpcargs;

namespace {

/// An NMDA datastore of this server.
struct NmdaDatastore {
    ds::Datastore store = ds::Datastore::Running; ///< where its configuration is
    bool operational = false;
    bool writable = false;
};

NmdaDatastore nmdaDatastore(const lyd_node* node) {
    const std::string v = valueOf(node);
    if (v == "ietf-datastores:running") {
        return {ds::Datastore::Running, false, true};
    }
    if (v == "ietf-datastores:candidate") {
        return {ds::Datastore::Candidate, false, true};
    }
    if (v == "ietf-datastores:startup") {
        return {ds::Datastore::Startup, false, true};
    }
    if (v == "ietf-datastores:intended") {
        return {ds::Datastore::Running, false, false};
    }
    if (v == "ietf-datastores:operational") {
        return {ds::Datastore::Running, true, false};
    }
    throw RpcError::invalidValue("datastore " + v +
                                     " is not supported (running, candidate, startup, intended, "
                                     "operational are)",
                                 "datastore");
}

bool isConfig(const lyd_node* n) {
    return n->schema && (n->schema->flags & LYS_CONFIG_W);
}

bool isKey(const lyd_node* n) {
    return n->schema && lysc_is_key(n->schema);
}

/// Frees `n` (a node of `forest`, any level), keeping `forest` at the first remaining top node.
void freeNode(Tree& forest, lyd_node* n) {
    if (lyd_parent(n)) {
        lyd_free_tree(n);
        return;
    }
    lyd_node* first = lyd_first_sibling(forest.get());
    lyd_node* keep = n == first ? n->next : first;
    forest.release();
    lyd_free_tree(n);
    forest.reset(keep);
}

/// RFC 8526 config-filter and origin filters: keeps the nodes of `n` that are `wanted`, with the
/// ancestors and list keys of what it keeps. Returns whether anything of `n` is kept.
template <typename Wanted> bool keepIf(Tree& forest, lyd_node* n, const Wanted& wanted) {
    bool kept = wanted(n);
    for (lyd_node *c = lyd_child(n), *next = nullptr; c; c = next) {
        next = c->next;
        if (!isKey(c)) {
            kept = keepIf(forest, c, wanted) || kept;
        }
    }
    if (!kept) {
        freeNode(forest, n);
    }
    return kept;
}

/// RFC 8526 max-depth: nodes deeper than `depth` (1: the top-level nodes) are left out; list
/// entries keep their keys.
void limitDepth(lyd_node* n, std::uint32_t level, std::uint32_t depth) {
    for (lyd_node *c = lyd_child(n), *next = nullptr; c; c = next) {
        next = c->next;
        if (level + 1 > depth && !isKey(c)) {
            lyd_free_tree(c);
        } else {
            limitDepth(c, level + 1, depth);
        }
    }
}

/// Whether identity `ident` is `base` or derived from it.
bool derivedFrom(const lysc_ident* ident, const lysc_ident* base) {
    if (ident == base) {
        return true;
    }
    LY_ARRAY_COUNT_TYPE i = 0;
    LY_ARRAY_FOR(base->derived, i) {
        if (derivedFrom(ident, base->derived[i])) {
            return true;
        }
    }
    return false;
}

const lysc_ident* originIdentity(const ly_ctx* ctx, std::string_view name) {
    const lys_module* m = ly_ctx_get_module_implemented(ctx, "ietf-origin");
    const auto colon = name.find(':');
    const std::string_view local = colon == std::string_view::npos ? name : name.substr(colon + 1);
    LY_ARRAY_COUNT_TYPE i = 0;
    LY_ARRAY_FOR(m->identities, i) {
        if (local == m->identities[i].name) {
            return &m->identities[i];
        }
    }
    return nullptr;
}

/// Adds the ietf-origin annotation `origin` to every top-level element of `xml`, and origin default
/// to every default node in use (`xml` printed by libyang with LYD_PRINT_WD_IMPL_TAG, which tags
/// only the defaults the server added, not a configured value equal to its default as
/// report-all-tagged would: that one is configuration; no comments, no CDATA, text escaped,
/// attribute values quoted).
void annotateTopLevel(std::string& xml, const char* origin) {
    // Defaults in use, printed tagged (with-defaults report-all-tagged tags, as libyang writes them, with
    // or without the declaration of its prefix): their origin is default. The prefix "or" is
    // declared on the top-level elements below (only a top-level leaf could declare "or" for
    // another namespace, and a leaf holds no element that would use it).
    static constexpr std::string_view kNcwd =
        " xmlns:ncwd=\"urn:ietf:params:xml:ns:yang:ietf-netconf-with-defaults\"";
    static constexpr std::string_view kTag = " ncwd:default=\"true\"";
    static constexpr std::string_view kDefault = " or:origin=\"or:default\"";
    static constexpr std::string_view kDeclare = " xmlns:or=\"urn:ietf:params:xml:ns:yang:ietf-origin\"";
    if (std::size_t at = xml.find(kTag); at != std::string::npos) {
        // One pass, appending: replacing in place would move the rest of the text each time.
        std::string replaced;
        replaced.reserve(xml.size());
        std::size_t from = 0;
        for (; at != std::string::npos; at = xml.find(kTag, from)) {
            const bool declared =
                at >= kNcwd.size() && std::string_view(xml).substr(at - kNcwd.size(), kNcwd.size()) == kNcwd;
            replaced.append(xml, from, (declared ? at - kNcwd.size() : at) - from);
            replaced += kDefault;
            from = at + kTag.size();
        }
        replaced.append(xml, from, std::string::npos);
        xml.swap(replaced);
    }
    std::string out;
    out.reserve(xml.size() + 64);
    int depth = 0;
    std::size_t i = 0;
    while (i < xml.size()) {
        const std::size_t lt = xml.find('<', i);
        if (lt == std::string::npos) {
            break;
        }
        out.append(xml, i, lt - i);
        // The end of the tag, past quoted attribute values.
        std::size_t gt = lt + 1;
        for (char quote = 0; gt < xml.size() && (quote || xml[gt] != '>'); ++gt) {
            if (quote ? xml[gt] == quote : (xml[gt] == '"' || xml[gt] == '\'')) {
                quote = quote ? 0 : xml[gt];
            }
        }
        const std::string_view tag = std::string_view(xml).substr(lt, gt - lt);
        const bool end = tag.size() > 1 && tag[1] == '/';
        const bool empty = tag.back() == '/';
        std::size_t name = 1;
        while (name < tag.size() && !std::strchr(" /\t\r\n", tag[name])) {
            ++name;
        }
        if (!end && depth == 0 && tag.find(kDefault) != std::string_view::npos) {
            // A default at the top: its annotation is there, its prefix is declared here.
            out.append(tag.substr(0, name));
            out += kDeclare;
            out.append(tag.substr(name));
        } else if (!end && depth == 0) {
            // A top-level element that declares prefix "or" itself (a leaf: no default below it
            // uses it) gets the annotation under another.
            const std::string prefix = tag.find("xmlns:or=") == std::string_view::npos ? "or" : "orx";
            out.append(tag.substr(0, name));
            out += " xmlns:" + prefix + "=\"urn:ietf:params:xml:ns:yang:ietf-origin\" " + prefix +
                   ":origin=\"" + prefix + ":" + origin + "\"";
            out.append(tag.substr(name));
        } else {
            out.append(tag);
        }
        out += '>';
        i = gt + 1;
        if (!end && depth == 0 && !empty) {
            // The rest of a top-level element is copied whole up to its end tag, found by a string
            // search, unless an element of the same name may be nested in it (then tag by tag).
            const std::string_view elementName = tag.substr(1, name - 1);
            const std::string endTag = "</" + std::string(elementName) + ">";
            const std::size_t close = xml.find(endTag, i);
            std::size_t nested = xml.find("<" + std::string(elementName), i);
            while (nested < close && !std::strchr(" />", xml[nested + name])) {
                nested = xml.find("<" + std::string(elementName), nested + 1);
            }
            if (close != std::string::npos && (nested == std::string::npos || nested > close)) {
                out.append(xml, i, close + endTag.size() - i);
                i = close + endTag.size();
                continue;
            }
        }
        depth += end ? -1 : (empty ? 0 : 1);
    }
    if (i < xml.size()) {
        out.append(xml, i, std::string::npos);
    }
    xml.swap(out);
}

} // namespace

Reply NmdaOps::getData(Request& r) {
    const lyd_node* rpc = r.op;
    const NmdaDatastore datastore = nmdaDatastore(child(rpc, "datastore"));
    const lyd_node* withDefaults = child(rpc, "with-defaults");
    if (withDefaults && datastore.operational) {
        // RFC 8526 3.1.1: only with :with-operational-defaults, which this server does not have.
        throw RpcError::invalidValue("with-defaults is not supported on the operational datastore",
                                     "with-defaults");
    }
    const bool withOrigin = child(rpc, "with-origin") != nullptr;
    std::vector<const lysc_ident*> origins;
    std::vector<const lysc_ident*> negated;
    for (const lyd_node* n = lyd_child(rpc); n; n = n->next) {
        const std::string_view name = n->schema ? n->schema->name : "";
        if (name == "origin-filter" || name == "negated-origin-filter") {
            const lysc_ident* ident = originIdentity(svc_.ctx, valueOf(n));
            if (!ident) {
                throw RpcError::invalidValue("unknown origin " + valueOf(n), std::string(name));
            }
            (name == "origin-filter" ? origins : negated).push_back(ident);
        }
    }
    if ((withOrigin || !origins.empty() || !negated.empty()) && !datastore.operational) {
        throw RpcError::invalidValue("origin parameters are for the operational datastore only",
                                     withOrigin ? "with-origin" : "origin-filter");
    }
    Tree filterHolder;
    if (const lyd_node* f = child(rpc, "subtree-filter")) {
        filterHolder = filter::fromParameter(f);
    } else if (const lyd_node* x = child(rpc, "xpath-filter")) {
        filterHolder = filter::fromParameter(x);
    }
    const lyd_node* configFilter = child(rpc, "config-filter");
    const lyd_node* maxDepthNode = child(rpc, "max-depth");
    const std::string maxDepth = valueOf(maxDepthNode);
    const bool depthLimited = maxDepthNode && maxDepth != "unbounded";
    // Defaults in use are part of operational (RFC 8342 5.3, origin default): all are shown.
    const std::uint32_t wd = datastore.operational ? LYD_PRINT_WD_ALL : withDefaultsFlag(rpc);
    const bool copy = configFilter || depthLimited || withOrigin || !origins.empty() || !negated.empty();
    const StopRequested stop = [&s = r.session] { return s.abandoned(); };
    // What is selected of `tree` (any sibling; nullptr: nothing), as a forest of copies; in two
    // steps when `tree` is the store's (ReadPath::prepareSelection: an XPath filter is evaluated
    // once the store's lock is released).
    auto selected = [&](const lyd_node* tree) -> Tree {
        return svc_.reads.finish(svc_.reads.prepareSelection(tree, filterHolder.get()), stop);
    };
    // A copy of `node` alone (a top-level node), as a forest of its own.
    auto alone = [&](const lyd_node* node) -> Tree {
        lyd_node* dup = nullptr;
        if (node &&
            lyd_dup_single(node, nullptr, LYD_DUP_RECURSIVE | LYD_DUP_WITH_FLAGS, &dup) != LY_SUCCESS) {
            throw YangError("copying " + pathOf(node) + " for get-data", svc_.ctx);
        }
        return Tree{dup};
    };
    // `forest` (copies) as the reply shows it: NACM, config-filter, origins, max-depth, printed.
    auto finish = [&](Tree forest) -> std::string {
        std::string out;
        if (r.access) {
            r.access->pruneUnreadable(forest);
        }
        if (configFilter) {
            const bool config = valueOf(configFilter) == "true";
            for (lyd_node *t = forest ? lyd_first_sibling(forest.get()) : nullptr, *next = nullptr; t;
                 t = next) {
                next = t->next;
                keepIf(forest, t, [config](const lyd_node* n) { return isConfig(n) == config; });
            }
        }
        if (datastore.operational && (withOrigin || !origins.empty() || !negated.empty())) {
            // RFC 8342 5.3.4: configuration is intended (applied as committed), the server's state
            // is system, a default in use is default; a node shows its origin where it differs
            // from its parent's.
            const lysc_ident* intended = originIdentity(svc_.ctx, "intended");
            const lysc_ident* system = originIdentity(svc_.ctx, "system");
            const lysc_ident* fromDefault = originIdentity(svc_.ctx, "default");
            auto originOf = [&](const lyd_node* n) {
                return (n->flags & LYD_DEFAULT) ? fromDefault : isConfig(n) ? intended : system;
            };
            if (!origins.empty() || !negated.empty()) {
                auto wanted = [&](const lyd_node* n) {
                    const lysc_ident* origin = originOf(n);
                    auto derived = [origin](const lysc_ident* o) { return derivedFrom(origin, o); };
                    return (origins.empty() || std::any_of(origins.begin(), origins.end(), derived)) &&
                           std::none_of(negated.begin(), negated.end(), derived);
                };
                for (lyd_node *t = forest ? lyd_first_sibling(forest.get()) : nullptr, *next = nullptr; t;
                     t = next) {
                    next = t->next;
                    keepIf(forest, t, wanted);
                }
            }
            if (withOrigin) {
                for (lyd_node* t = forest ? lyd_first_sibling(forest.get()) : nullptr; t; t = t->next) {
                    lyd_node* elem = nullptr;
                    LYD_TREE_DFS_BEGIN(t, elem) {
                        const lysc_ident* origin = originOf(elem);
                        if (!lyd_parent(elem) || originOf(lyd_parent(elem)) != origin) {
                            const std::string value = std::string("ietf-origin:") + origin->name;
                            if (lyd_new_meta(svc_.ctx, elem, nullptr, "ietf-origin:origin", value.c_str(), 0,
                                             nullptr) != LY_SUCCESS) {
                                throw YangError("annotating the origin", svc_.ctx);
                            }
                        }
                        LYD_TREE_DFS_END(t, elem);
                    }
                }
            }
        }
        if (depthLimited) {
            const auto depth = static_cast<std::uint32_t>(std::stoul(maxDepth));
            for (lyd_node* t = forest ? lyd_first_sibling(forest.get()) : nullptr; t; t = t->next) {
                limitDepth(t, 1, depth);
            }
        }
        if (forest) {
            // A container whose children max-depth cut off is shown, empty.
            const std::uint32_t keepEmpty = depthLimited ? LYD_PRINT_KEEPEMPTYCONT : 0;
            out = print(forest.get(), LYD_XML, LYD_PRINT_WITHSIBLINGS | LYD_PRINT_SHRINK | wd | keepEmpty);
        }

        return out;
    };
    std::string xml;
    if (!copy) {
        xml = svc_.reads.readXml(r.access, datastore.store, datastore.operational, filterHolder.get(), wd,
                                 stop);
    } else if (datastore.operational && withOrigin && !configFilter && !depthLimited && origins.empty() &&
               negated.empty()) {
        // Only with-origin: every top-level node has one origin, so the data is printed straight
        // from the trees as get-config prints it and each top-level element gets its annotation.
        // Only /nacm holds both (the configuration and its counters): it takes the copy path.
        Tree nacmConfig;
        ReadPath::Prepared config;
        svc_.store.read(ds::Datastore::Running, [&](const lyd_node* tree) {
            const lyd_node* top = nacmTop(tree);
            config = svc_.reads.prepare(tree, filterHolder.get(), LYD_PRINT_WD_IMPL_TAG, r.access, top);
            nacmConfig = alone(top);
        });
        std::string part = svc_.reads.finish(std::move(config), stop);
        annotateTopLevel(part, "intended");
        xml += part;
        Tree nacm = selected(nacmConfig.get());
        const Tree state = svc_.reads.state(filterHolder.get());
        const lyd_node* counters = nacmTop(state.get());
        part = svc_.reads.finish(
            svc_.reads.prepare(state.get(), filterHolder.get(), LYD_PRINT_WD_IMPL_TAG, r.access, counters),
            stop);
        annotateTopLevel(part, "system");
        xml += part;
        if (counters) {
            svc_.reads.merge(nacm, selected(alone(counters).get()), "the NACM counters");
        }
        xml += finish(std::move(nacm));
    } else {
        // Configuration, then state data merged into it (the NACM configuration and its counters
        // become one /nacm).
        ReadPath::PreparedSelection config;
        svc_.store.read(datastore.store, [&](const lyd_node* tree) {
            config = svc_.reads.prepareSelection(tree, filterHolder.get());
        });
        Tree forest = svc_.reads.finish(std::move(config), stop);
        if (datastore.operational) {
            svc_.reads.merge(forest, selected(svc_.reads.state(filterHolder.get()).get()),
                             "state data into the operational datastore");
        }
        xml = finish(std::move(forest));
    }
    return Reply::output("<data xmlns=\"urn:ietf:params:xml:ns:yang:ietf-netconf-nmda\">" + xml + "</data>");
}

Reply NmdaOps::editData(Request& r) {
    const lyd_node* rpc = r.op;
    const NmdaDatastore datastore = nmdaDatastore(child(rpc, "datastore"));
    if (!datastore.writable) {
        throw RpcError::invalidValue(valueOf(child(rpc, "datastore")) + " is not writable", "datastore");
    }
    ds::EditOptions options;
    options.defaultOperation = defaultOperation(rpc);
    return edit::applyEdit(svc_, r, datastore.store, options);
}

void addNmdaOperations(Dispatcher& d, const Services& svc) {
    const auto ops = std::make_shared<NmdaOps>(svc);
    d.add("ietf-netconf-nmda", "get-data", handler(ops, &NmdaOps::getData));
    d.add("ietf-netconf-nmda", "edit-data", handler(ops, &NmdaOps::editData, true));
}

} // namespace ncstore::netconfd
