// Fuzz target (c): the edit-config engine (datastore/src/edit.hpp) under a sequence of edits
// built from the input bytes against the bundled models (ietf-interfaces, the Open ROADM
// inventory) and the edit test's module (ordered-by-user lists and leaf-lists, a choice, a
// presence container, defaults). The tree starts as the Open ROADM example device.
//
// Each edit is generated from the compiled schema (elements, keys, values from small pools so
// that edits meet existing entries, nc:operation and yang:insert attributes), written as XML
// and parsed as the server parses an edit's <config> (parseEditContent). Then, as the store
// does: apply, validate the whole tree, keep or roll back. Properties checked:
//  - an edit the engine refuses leaves, after undo, the tree exactly as it was (printed with
//    every default tagged, so order, values and default flags all count);
//  - an edit whose result does not validate leaves, after the validation diff is reverted and
//    undo, the tree exactly as it was (also for test-only edits that did validate);
//  - the engine never makes two instances of one list entry or leaf-list value out of an edit
//    that names each once (it must merge into the existing ones);
//  - the tree the accepted edits leave prints and parses back to the same tree.
#include "edit.hpp"

#include "editcontent.hpp"
#include "errors.hpp"
#include "fuzz_models.hpp"

#include "ncstore/models.hpp"

#include <fuzzer/FuzzedDataProvider.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

using namespace ncstore;
using namespace ncstore::ds;
using namespace ncstore::ds::detail;

namespace {

constexpr const char* kNc = "urn:ietf:params:xml:ns:netconf:base:1.0";
constexpr const char* kYang = "urn:ietf:params:xml:ns:yang:1";
constexpr uint32_t kValidate = LYD_VALIDATE_PRESENT | LYD_VALIDATE_NO_STATE;
constexpr std::size_t kMaxEdits = 8;
constexpr int kMaxDepth = 7;

[[noreturn]] void violated(const char* what, const std::string& detail) {
    fuzz::violated("fuzz_edit", what, detail);
}

/// The tree as the comparisons see it: every default tagged, so order, values and default flags
/// all count. Empty non-presence containers are not printed: they carry no data, no reply shows
/// them, and libyang drops or re-adds them while validating.
std::string dump(const lyd_node* tree) {
    return tree ? print(tree, LYD_XML, LYD_PRINT_WITHSIBLINGS | LYD_PRINT_WD_ALL_TAG | LYD_PRINT_SHRINK)
                : std::string();
}

struct Fixture {
    Context ctx;
    Tree base;                          ///< validated, with defaults: the store's tree
    std::string baseDump;               ///< dump(base), printed once rather than per input
    std::vector<const lysc_node*> tops; ///< top-level configuration nodes edits start from
};

const Fixture& fixture() {
    static const Fixture f = [] {
        Fixture out;
        ModelOptions o = defaultModelOptions();
        o.yangDirs = {NCSTORE_EDIT_TEST_YANG_DIR};
        out.ctx = buildContext(o);
        const ly_ctx* ctx = out.ctx.get();
        for (const char* name : {"ietf-interfaces", "ncstore-openroadm-inventory", "edit-test"}) {
            const lys_module* mod = ly_ctx_get_module_implemented(ctx, name);
            if (!mod) {
                throw std::runtime_error(std::string("module not implemented: ") + name);
            }
            for (const lysc_node* n = nullptr; (n = lys_getnext(n, nullptr, mod->compiled, 0));) {
                if (n->flags & LYS_CONFIG_W) {
                    out.tops.push_back(n);
                }
            }
        }
        const std::string device =
            fuzz::exampleConfig(NCSTORE_SOURCE_DIR "/yang/openroadm/examples/device-create.xml");
        Tree edit = netconfd::parseEditContent(ctx, device);
        UndoLog undo;
        struct : ChangeObserver {
            void created(const lyd_node*) override {}
            void changed(const lyd_node*, const std::string&, bool) override {}
            void moved(const lyd_node*, const std::string&) override {}
            void deleting(const lyd_node*) override {}
        } none;
        lyd_node* raw = nullptr;
        applyEdit(&raw, edit.get(), DefaultOperation::Merge, undo, none);
        if (lyd_validate_all(&raw, ctx, kValidate, nullptr) != LY_SUCCESS) {
            throw YangError("the example device does not validate", ctx);
        }
        out.base.reset(raw);
        out.baseDump = dump(out.base.get());
        return out;
    }();
    return f;
}

/// Checks what the engine reports: every node is a node of the tree's context.
class Observer : public ChangeObserver {
public:
    explicit Observer(const ly_ctx* ctx) : ctx_(ctx) {}
    void created(const lyd_node* node) override { check(node); }
    void changed(const lyd_node* node, const std::string&, bool) override {
        check(node);
        if (!(node->schema->nodetype & LYD_NODE_TERM)) {
            violated("a value change reported on a node that holds no value", pathOf(node));
        }
    }
    void moved(const lyd_node* node, const std::string& oldAnchor) override {
        check(node);
        if (oldAnchor == pathOf(node)) {
            violated("a move reported as following itself", oldAnchor);
        }
        if (!(node->schema->flags & LYS_ORDBY_USER)) {
            violated("a move reported in a list the system orders", pathOf(node));
        }
    }
    void deleting(const lyd_node* node) override { check(node); }

private:
    void check(const lyd_node* node) const {
        if (!node || LYD_CTX(node) != ctx_) {
            violated("a change reported with no node or a foreign one", "");
        }
        (void)pathOf(node);
    }
    const ly_ctx* ctx_;
};

/// Writes one edit's XML from the input bytes.
class EditWriter {
public:
    explicit EditWriter(FuzzedDataProvider& in) : in_(in) {}

    std::string write(const std::vector<const lysc_node*>& tops) {
        out_.clear();
        const std::size_t count = in_.ConsumeIntegralInRange<std::size_t>(1, 2);
        for (std::size_t i = 0; i < count; ++i) {
            element(tops[in_.ConsumeIntegralInRange<std::size_t>(0, tops.size() - 1)], 0, true);
        }
        return out_;
    }

private:
    std::string pick(std::initializer_list<const char*> values) {
        const std::size_t i = in_.ConsumeIntegralInRange<std::size_t>(0, values.size() - 1);
        return *(values.begin() + i);
    }

    /// A value of `type`: mostly valid ones, from pools small enough that edits meet the
    /// entries already there (and the leafrefs of the example device resolve).
    std::string value(const lysc_type* type, std::string& xmlns) {
        switch (type->basetype) {
        case LY_TYPE_STRING:
            return pick({"a", "b", "c", "1/0", "2/0", "L1", "eth0", "C201-7-1A-9001", "",
                         "2026-11-30T01:00:00Z", "x y", "&lt;&amp;"});
        case LY_TYPE_UINT8:
        case LY_TYPE_UINT16:
        case LY_TYPE_UINT32:
        case LY_TYPE_UINT64:
        case LY_TYPE_INT8:
        case LY_TYPE_INT16:
        case LY_TYPE_INT32:
        case LY_TYPE_INT64:
            return pick({"0", "1", "2", "3", "96", "1500", "255", "-1", "65536"});
        case LY_TYPE_DEC64:
            return pick({"1.5", "0", "-2.25", "1e3"});
        case LY_TYPE_BOOL:
            return pick({"true", "false", "1"});
        case LY_TYPE_EMPTY:
            return "";
        case LY_TYPE_ENUM: {
            const auto* e = reinterpret_cast<const lysc_type_enum*>(type);
            const std::size_t n = LY_ARRAY_COUNT(e->enums);
            const std::size_t i = in_.ConsumeIntegralInRange<std::size_t>(0, n);
            return i < n ? e->enums[i].name : "no-such-enum";
        }
        case LY_TYPE_IDENT: {
            const auto* t = reinterpret_cast<const lysc_type_identityref*>(type);
            std::vector<const lysc_ident*> all;
            for (LY_ARRAY_COUNT_TYPE b = 0; b < LY_ARRAY_COUNT(t->bases); ++b) {
                all.push_back(t->bases[b]);
                for (LY_ARRAY_COUNT_TYPE d = 0; d < LY_ARRAY_COUNT(t->bases[b]->derived); ++d) {
                    all.push_back(t->bases[b]->derived[d]);
                }
            }
            const lysc_ident* id = all[in_.ConsumeIntegralInRange<std::size_t>(0, all.size() - 1)];
            xmlns = std::string(" xmlns:id=\"") + id->module->ns + "\"";
            return std::string("id:") + id->name;
        }
        case LY_TYPE_LEAFREF:
            return value(reinterpret_cast<const lysc_type_leafref*>(type)->realtype, xmlns);
        case LY_TYPE_UNION: {
            const auto* u = reinterpret_cast<const lysc_type_union*>(type);
            return value(u->types[in_.ConsumeIntegralInRange<std::size_t>(0, LY_ARRAY_COUNT(u->types) - 1)],
                         xmlns);
        }
        default:
            return "";
        }
    }

    /// nc:operation (mostly none), and for an ordered-by-user instance yang:insert.
    std::string attributes(const lysc_node* schema) {
        std::string attrs;
        const int op = in_.ConsumeIntegralInRange<int>(0, 10);
        static constexpr std::array<const char*, 5> kOps = {"merge", "replace", "create", "delete", "remove"};
        if (op >= 6) {
            attrs += std::string(" nc:operation=\"") + kOps[op - 6] + "\"";
        }
        if ((schema->nodetype & (LYS_LIST | LYS_LEAFLIST)) && (schema->flags & LYS_ORDBY_USER) &&
            in_.ConsumeBool()) {
            const std::string where = pick({"first", "last", "before", "after"});
            attrs += " yang:insert=\"" + where + "\"";
            if (where == "before" || where == "after") {
                const std::string anchor = pick({"a", "b", "c"});
                if (schema->nodetype == LYS_LEAFLIST) {
                    attrs += " yang:value=\"" + anchor + "\"";
                } else {
                    const lysc_node* key = lysc_node_child(schema);
                    attrs +=
                        std::string(" yang:key=\"[m:") + (key ? key->name : "id") + "='" + anchor + "']\"";
                }
            }
        }
        return attrs;
    }

    void element(const lysc_node* schema, int depth, bool top) {
        std::string open = std::string("<") + schema->name;
        if (top) {
            open += std::string(" xmlns=\"") + schema->module->ns + "\" xmlns:m=\"" + schema->module->ns +
                    "\" xmlns:nc=\"" + kNc + "\" xmlns:yang=\"" + kYang + "\"";
        }
        open += attributes(schema);
        if (schema->nodetype & (LYS_LEAF | LYS_LEAFLIST)) {
            // Now and then a leaf without a value: how clients write a delete of a leaf.
            if (in_.ConsumeIntegralInRange<int>(0, 7) == 0) {
                out_ += open + "/>";
                return;
            }
            std::string xmlns;
            const std::string v = value(reinterpret_cast<const lysc_node_leaf*>(schema)->type, xmlns);
            out_ += open + xmlns + ">" + v + "</" + schema->name + ">";
            return;
        }
        out_ += open + ">";
        if (depth < kMaxDepth) {
            children(schema, depth);
        }
        out_ += std::string("</") + schema->name + ">";
    }

    void children(const lysc_node* parent, int depth) {
        for (const lysc_node* c = nullptr; (c = lys_getnext(c, parent, nullptr, 0));) {
            if (!(c->flags & LYS_CONFIG_W) || in_.remaining_bytes() == 0) {
                continue;
            }
            // Keys come first and almost always; other children now and then.
            const bool key = lysc_is_key(c);
            if (in_.ConsumeProbability<float>() >= (key ? 0.95f : 0.35f)) {
                continue;
            }
            const std::size_t count =
                (c->nodetype & (LYS_LIST | LYS_LEAFLIST)) ? in_.ConsumeIntegralInRange<std::size_t>(1, 2) : 1;
            for (std::size_t i = 0; i < count; ++i) {
                element(c, depth + 1, false);
            }
        }
    }

    FuzzedDataProvider& in_;
    std::string out_;
};

/// FUZZ_EDIT_TRACE=1: each edit and what became of it on stderr, to read a crash input.
bool tracing() {
    static const bool on = std::getenv("FUZZ_EDIT_TRACE") != nullptr;
    return on;
}

void trace(const std::string& what, const std::string& xml) {
    if (tracing()) {
        std::fprintf(stderr, "fuzz_edit: %s: %s\n", what.c_str(), xml.c_str());
    }
}

/// A trace of the whole tree, printed only when tracing: a print per edit costs a fifth of the
/// executions otherwise.
void traceTree(const std::string& what, const lyd_node* tree) {
    if (tracing()) {
        trace(what, dump(tree));
    }
}

const char* toString(DefaultOperation op) {
    return op == DefaultOperation::Merge ? "merge" : op == DefaultOperation::Replace ? "replace" : "none";
}

/// Reverts what validation added or removed, then the edit: what the store's rollback does.
void rollback(lyd_node** tree, const lyd_node* validationDiff, UndoLog& undo) {
    if (validationDiff) {
        lyd_node* reversed = nullptr;
        if (lyd_diff_reverse_all(validationDiff, &reversed) != LY_SUCCESS) {
            violated("a validation diff cannot be reversed", lastError(LYD_CTX(validationDiff)));
        }
        const Tree owned{reversed};
        traceTree("validation diff reversed", reversed);
        if (lyd_diff_apply_all(tree, reversed) != LY_SUCCESS) {
            violated("a reversed validation diff does not apply", lastError(LYD_CTX(validationDiff)));
        }
    }
    traceTree("before undo", *tree);
    undo.undo(tree);
}

void expectRestored(const lyd_node* tree, const std::string& before, const std::string& edit,
                    const char* when) {
    const std::string after = dump(tree);
    if (after != before) {
        violated(when, "edit: " + edit + "\nbefore: " + before + "\nafter:  " + after);
    }
}

/// Whether the edit names one list entry or leaf-list value twice among siblings (invalid data
/// in itself, RFC 7950 7.7/7.8: refusing it is right).
bool namesAnInstanceTwice(const lyd_node* first) {
    for (const lyd_node* a = first; a; a = a->next) {
        if (a->schema && (a->schema->nodetype & (LYS_LIST | LYS_LEAFLIST))) {
            for (const lyd_node* b = a->next; b; b = b->next) {
                if (b->schema == a->schema && lyd_compare_single(a, b, 0) == LY_SUCCESS) {
                    return true;
                }
            }
        }
        if (namesAnInstanceTwice(lyd_child(a))) {
            return true;
        }
    }
    return false;
}

/// The engine must never make two instances of one entry from an edit that names each once:
/// validation calls them duplicates.
void expectNoDuplicates(const ly_ctx* ctx, const lyd_node* edit, const std::string& xml) {
    const ly_err_item* e = ly_err_last(ctx);
    if (e && e->msg && std::strstr(e->msg, "Duplicate instance") && !namesAnInstanceTwice(edit)) {
        violated("the edit made a duplicate instance", "edit: " + xml + "\n" + e->msg);
    }
}

/// What the store keeps must read back as the same valid tree (checked once per input, after
/// the last edit: a whole-tree parse per edit would halve the executions).
void expectReadsBack(const ly_ctx* ctx, const lyd_node* tree) {
    const std::string kept = dump(tree);
    if (kept.empty()) {
        return;
    }
    lyd_node* again = nullptr;
    const LY_ERR parsed = lyd_parse_data_mem(ctx, kept.c_str(), LYD_XML, LYD_PARSE_STRICT, kValidate, &again);
    const Tree againOwner{again};
    if (parsed != LY_SUCCESS) {
        violated("an accepted tree does not parse back", "tree: " + kept + "\n" + lastError(ctx));
    }
    if (dump(again) != kept) {
        violated("an accepted tree prints differently once parsed back",
                 "tree: " + kept + "\nagain: " + dump(again));
    }
}

/// One edit as the store makes it; true when it was kept. `before` is dump(tree) when known:
/// a refused edit leaves the tree as it was (that is checked), so its dump stays known and the
/// next edit does not print the tree again.
bool step(const ly_ctx* ctx, Tree& tree, const std::string& xml, DefaultOperation defaultOperation,
          bool testOnly, std::optional<std::string>& before) {
    trace(std::string("edit, default-operation ") + toString(defaultOperation) +
              (testOnly ? ", test-only" : ""),
          xml);
    Tree edit;
    try {
        edit = netconfd::parseEditContent(ctx, xml);
    } catch (const netconfd::RpcError& e) {
        trace("refused by the parse", e.what());
        ly_err_clean(const_cast<ly_ctx*>(ctx), nullptr);
        return false; // the server answers the client's mistake before the engine sees it
    }
    if (!edit) {
        return false;
    }
    if (!before) {
        before = dump(tree.get());
    }
    UndoLog undo;
    Observer observer(ctx);
    lyd_node* raw = tree.release();
    try {
        applyEdit(&raw, edit.get(), defaultOperation, undo, observer);
    } catch (const Error& e) {
        trace("refused by the engine", e.what());
        undo.undo(&raw);
        tree.reset(raw);
        expectRestored(tree.get(), *before, xml, "undo after a refused edit did not restore the tree");
        return false;
    }
    lyd_node* diff = nullptr;
    const LY_ERR rc = raw ? lyd_validate_all(&raw, ctx, kValidate, &diff) : LY_SUCCESS;
    const Tree diffOwner{diff};
    if (rc != LY_SUCCESS) {
        trace("refused by validation", lastError(ctx));
        expectNoDuplicates(ctx, edit.get(), xml);
        ly_err_clean(const_cast<ly_ctx*>(ctx), nullptr);
        rollback(&raw, diff, undo);
        tree.reset(raw);
        expectRestored(tree.get(), *before, xml,
                       "rollback after a failed validation did not restore the tree");
        return false;
    }
    if (testOnly) {
        rollback(&raw, diff, undo);
        tree.reset(raw);
        expectRestored(tree.get(), *before, xml, "rollback of a test-only edit did not restore the tree");
        return false;
    }
    tree.reset(raw);
    before.reset();
    traceTree("accepted", tree.get());
    return true;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    fuzz::quietLogs();
    (void)fixture();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const Fixture& f = fixture();
    FuzzedDataProvider in(data, size);
    lyd_node* copy = nullptr;
    if (lyd_dup_siblings(f.base.get(), nullptr, LYD_DUP_RECURSIVE | LYD_DUP_WITH_FLAGS, &copy) !=
        LY_SUCCESS) {
        violated("cannot copy the base tree", lastError(f.ctx.get()));
    }
    Tree tree{copy};
    EditWriter writer(in);
    bool accepted = false;
    std::optional<std::string> before = f.baseDump;
    for (std::size_t i = 0; i < kMaxEdits && in.remaining_bytes() > 0; ++i) {
        const auto defaultOperation = static_cast<DefaultOperation>(in.ConsumeIntegralInRange<int>(0, 2));
        const bool testOnly = in.ConsumeIntegralInRange<int>(0, 3) == 0;
        const std::string xml = writer.write(f.tops);
        accepted = step(f.ctx.get(), tree, xml, defaultOperation, testOnly, before) || accepted;
    }
    if (accepted) {
        expectReadsBack(f.ctx.get(), tree.get());
    }
    return 0;
}
