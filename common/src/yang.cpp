#include "ncstore/yang.hpp"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <new>
#include <set>

namespace ncstore {

void CFreeDeleter::operator()(void* p) const noexcept {
    std::free(p);
}

std::string lastError(const ly_ctx* ctx) {
    if (!ctx) {
        return {};
    }
    const ly_err_item* e = ly_err_last(ctx);
    return e && e->msg ? e->msg : "";
}

std::string lastErrorPath(const ly_ctx* ctx) {
    if (!ctx) {
        return {};
    }
    const ly_err_item* e = ly_err_last(ctx);
    return e && e->path ? e->path : "";
}

ErrorLocation lastErrorLocation(const ly_ctx* ctx) {
    const std::string where = lastErrorPath(ctx);
    auto quoted = [&](std::string_view label) {
        const std::size_t start = where.find(label);
        if (start == std::string::npos) {
            return std::string();
        }
        const std::size_t from = start + label.size();
        const std::size_t end = where.find('"', from);
        return end == std::string::npos ? std::string() : where.substr(from, end - from);
    };
    ErrorLocation loc{quoted("chema location \""), quoted("ata location \"")};
    if (loc.schema.empty() && loc.data.empty() && where.starts_with('/')) {
        loc.data = where; // a bare path
    }
    return loc;
}

YangError::YangError(const std::string& what, const ly_ctx* ctx)
    : std::runtime_error(lastError(ctx).empty() ? what : what + ": " + lastError(ctx)) {}

std::string pathOf(const lyd_node* node) {
    CString p{lyd_path(node, LYD_PATH_STD, nullptr, 0)};
    if (!p) {
        throw YangError("lyd_path failed");
    }
    return p.get();
}

bool schemaWithin(const lysc_node* node, const lysc_node* ancestor) {
    for (const lysc_node* n = node; n; n = n->parent) {
        if (n == ancestor) {
            return true;
        }
    }
    return false;
}

bool appendKeyPredicate(std::string& out, std::string_view key, std::string_view value) {
    const char quote = value.find('\'') == std::string_view::npos ? '\'' : '"';
    if (quote == '"' && value.find('"') != std::string_view::npos) {
        return false;
    }
    out += '[';
    out += key;
    out += '=';
    out += quote;
    out += value;
    out += quote;
    out += ']';
    return true;
}

namespace {
// libyang's memory printer grows its buffer 1 KiB at a time (REALLOC_CHUNK), and LYB, which goes
// back to fill in lengths, cannot print through a callback without the same kind of buffer: a
// printed document of megabytes is moved again and again (40 ms for the 1.4 MB of old subtrees
// of a 16384-entry delete). Given a buffer of the expected size up front, libyang fills it.
std::string printToMemory(const lyd_node* node, LYD_FORMAT format, uint32_t options, std::size_t expected) {
    char* buf = expected ? static_cast<char*>(std::malloc(expected)) : nullptr;
    ly_out* raw = nullptr;
    if (ly_out_new_memory(&buf, buf ? expected : 0, &raw) != LY_SUCCESS) {
        CString owned{buf};
        throw YangError("printing data failed: no printer", node ? LYD_CTX(node) : nullptr);
    }
    std::unique_ptr<ly_out, void (*)(ly_out*)> out(raw, [](ly_out* o) { ly_out_free(o, nullptr, 0); });
    const LY_ERR rc = (options & LYD_PRINT_WITHSIBLINGS)
                          ? lyd_print_all(out.get(), node, format, options & ~LYD_PRINT_WITHSIBLINGS)
                          : lyd_print_tree(out.get(), node, format, options);
    const std::size_t printed = ly_out_printed(out.get());
    out.reset(); // keeps the buffer, which libyang may have moved: `buf` follows it
    CString owned{buf};
    if (rc != LY_SUCCESS) {
        throw YangError("printing data failed", node ? LYD_CTX(node) : nullptr);
    }
    return buf ? std::string(buf, printed) : std::string();
}

// XML is what replies carry, up to many MB. libyang's memory printer reallocates its buffer to
// the exact size on every small write, so a large reply is moved again and again and leaves the
// malloc arenas fragmented long after it is gone (the soak's RSS trend). Printed through a
// callback into a std::string, the buffer grows geometrically. Siblings one after the other
// print as LYD_PRINT_WITHSIBLINGS would: each top element declares its own namespaces.
std::string printImpl(const lyd_node* node, LYD_FORMAT format, uint32_t options, bool siblings,
                      std::size_t expected) {
    if (format != LYD_XML) {
        return printToMemory(node, format, siblings ? options | LYD_PRINT_WITHSIBLINGS : options, expected);
    }
    if (options & LYD_PRINT_WITHSIBLINGS) {
        siblings = true;
        options &= ~static_cast<uint32_t>(LYD_PRINT_WITHSIBLINGS);
    }
    std::string text;
    ly_out* raw = nullptr;
    const ly_write_clb append = [](void* user, const void* buf, size_t count) -> ssize_t {
        try { // no exception may cross libyang's C frames: out of memory is a failed write there
            static_cast<std::string*>(user)->append(static_cast<const char*>(buf), count);
            return static_cast<ssize_t>(count);
        } catch (const std::bad_alloc&) {
            return -1;
        }
    };
    if (ly_out_new_clb(append, &text, &raw) != LY_SUCCESS) {
        throw YangError("printing data failed: no printer", node ? LYD_CTX(node) : nullptr);
    }
    const std::unique_ptr<ly_out, void (*)(ly_out*)> out(raw, [](ly_out* o) { ly_out_free(o, nullptr, 0); });
    LY_ERR rc = LY_SUCCESS;
    for (const lyd_node* n = node; n && rc == LY_SUCCESS; n = siblings ? n->next : nullptr) {
        rc = lyd_print_tree(out.get(), n, format, options);
    }
    if (rc != LY_SUCCESS) {
        throw YangError("printing data failed", LYD_CTX(node));
    }
    return text;
}
} // namespace

std::string print(const lyd_node* tree, LYD_FORMAT format, uint32_t options, std::size_t expected) {
    return printImpl(tree, format, options, true, expected);
}

std::string printTree(const lyd_node* node, LYD_FORMAT format, uint32_t options) {
    return printImpl(node, format, options, false, 0);
}

Tree dupForest(const lyd_node* tree) {
    if (!tree) {
        return Tree{};
    }
    lyd_node* copy = nullptr;
    if (lyd_dup_siblings(tree, nullptr, LYD_DUP_RECURSIVE | LYD_DUP_WITH_FLAGS, &copy) != LY_SUCCESS) {
        throw YangError("cannot copy a data tree", LYD_CTX(tree));
    }
    return Tree{copy};
}

LY_ERR insertSiblings(Tree& forest, lyd_node* node) noexcept {
    lyd_node* first = forest.release();
    const LY_ERR rc = lyd_insert_sibling(first, node, &first);
    forest.reset(first);
    return rc;
}

Tree parseData(const ly_ctx* ctx, const std::string& text, LYD_FORMAT format, uint32_t parseOptions,
               uint32_t validateOptions) {
    lyd_node* tree = nullptr;
    LY_ERR rc = lyd_parse_data_mem(ctx, text.c_str(), format, parseOptions, validateOptions, &tree);
    Tree owned{tree};
    if (rc != LY_SUCCESS) {
        throw YangError("parsing data failed", ctx);
    }
    return owned;
}

std::vector<std::string> modulesInDir(const std::filesystem::path& dir) {
    std::set<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        if (!entry.is_regular_file() || entry.path().extension() != ".yang") {
            continue;
        }
        std::string stem = entry.path().stem().string();
        names.insert(stem.substr(0, stem.find('@')));
    }
    return {names.begin(), names.end()};
}

Context makeContext(const ContextOptions& options) {
    ly_ctx* raw = nullptr;
    if (ly_ctx_new(nullptr, LY_CTX_NO_YANGLIBRARY | LY_CTX_DISABLE_SEARCHDIR_CWD, &raw) != LY_SUCCESS) {
        throw YangError("cannot create libyang context");
    }
    Context ctx{raw};
    auto addDir = [&](const std::filesystem::path& dir) {
        if (ly_ctx_set_searchdir(ctx.get(), dir.c_str()) != LY_SUCCESS) {
            throw YangError("cannot add YANG search directory " + dir.string(), ctx.get());
        }
    };
    for (const auto& d : options.searchDirs) {
        addDir(d);
    }
    for (const auto& d : options.importOnlyDirs) {
        addDir(d);
    }
    const char* allFeatures[] = {"*", nullptr};
    for (const auto& d : options.searchDirs) {
        for (const auto& name : modulesInDir(d)) {
            if (!ly_ctx_load_module(ctx.get(), name.c_str(), nullptr,
                                    options.enableAllFeatures ? allFeatures : nullptr)) {
                throw YangError("cannot load YANG module " + name + " from " + d.string(), ctx.get());
            }
        }
    }
    return ctx;
}

} // namespace ncstore
