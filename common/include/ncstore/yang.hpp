// RAII ownership of libyang handles, and small helpers every component uses.
#pragma once

#include <libyang/libyang.h>

#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ncstore {

struct LyCtxDeleter {
    void operator()(ly_ctx* ctx) const noexcept { ly_ctx_destroy(ctx); }
};
/// Owns a libyang context.
using Context = std::unique_ptr<ly_ctx, LyCtxDeleter>;

struct LydTreeDeleter {
    void operator()(lyd_node* node) const noexcept { lyd_free_all(node); }
};
/// Owns a whole data forest (the node given and all its siblings).
using Tree = std::unique_ptr<lyd_node, LydTreeDeleter>;

struct LydSubtreeDeleter {
    void operator()(lyd_node* node) const noexcept { lyd_free_tree(node); }
};
/// Owns one unlinked subtree (not its siblings).
using Subtree = std::unique_ptr<lyd_node, LydSubtreeDeleter>;

/// Links the top-level `node` (with its siblings, if any) into the forest `forest` owns, which
/// keeps pointing at its first sibling. LY_SUCCESS: the forest owns `node` now (release the
/// caller's owner); anything else: nothing changed, the caller still owns `node`.
LY_ERR insertSiblings(Tree& forest, lyd_node* node) noexcept;

/// A deep copy of the forest `tree` (any sibling: the copy starts at it), flags included
/// (nullptr for nullptr). Throws YangError.
Tree dupForest(const lyd_node* tree);

struct LySetDeleter {
    void operator()(ly_set* set) const noexcept { ly_set_free(set, nullptr); }
};
/// Owns a ly_set (not the nodes in it).
using Set = std::unique_ptr<ly_set, LySetDeleter>;

struct CFreeDeleter {
    void operator()(void* p) const noexcept;
};
/// Owns a malloc'ed C string returned by a C library (lyd_path, lyd_print_mem, ...).
using CString = std::unique_ptr<char, CFreeDeleter>;

/// A libyang failure with the context's last error message appended.
class YangError : public std::runtime_error {
public:
    YangError(const std::string& what, const ly_ctx* ctx);
    explicit YangError(const std::string& what) : std::runtime_error(what) {}
};

/// The last error libyang recorded in `ctx`, or "" when there is none.
std::string lastError(const ly_ctx* ctx);
/// The error-path libyang recorded with the last error, or "".
std::string lastErrorPath(const ly_ctx* ctx);
/// Where the last error is, as libyang 2.1 writes it in text ('Schema location "/a:b/c", data
/// location "/a:b/c[k='1']", line number 3.'): each path, or "" when it names none.
struct ErrorLocation {
    std::string schema;
    std::string data;
};
ErrorLocation lastErrorLocation(const ly_ctx* ctx);

/// Data path of `node` (LYD_PATH_STD), e.g. /ietf-interfaces:interfaces/interface[name='eth0'].
std::string pathOf(const lyd_node* node);

/// Whether the schema node `node` is `ancestor` or lies below it.
bool schemaWithin(const lysc_node* node, const lysc_node* ancestor);

/// Appends "[key='value']", a key predicate as lyd_find_sibling_val and lyd_find_path take it:
/// single quotes unless the value holds one. False, `out` unchanged, when the value holds both
/// quote characters (an XPath 1.0 literal cannot).
bool appendKeyPredicate(std::string& out, std::string_view key, std::string_view value);

/// Prints a forest (all siblings) in `format`; `options` are LYD_PRINT_* flags. `expected`: the
/// size the result will likely have (LYB and JSON print into a buffer of that size at once;
/// 0: grown as it goes, slow for megabytes).
std::string print(const lyd_node* tree, LYD_FORMAT format, uint32_t options, std::size_t expected = 0);
/// Prints one subtree in `format`.
std::string printTree(const lyd_node* node, LYD_FORMAT format, uint32_t options);

/// Parses a complete data document (string) into a forest; throws YangError on failure.
Tree parseData(const ly_ctx* ctx, const std::string& text, LYD_FORMAT format, uint32_t parseOptions,
               uint32_t validateOptions);

/// Options for building a context from YANG directories.
struct ContextOptions {
    std::vector<std::filesystem::path> searchDirs;     ///< every module found here is loaded (implemented)
    std::vector<std::filesystem::path> importOnlyDirs; ///< searched for imports only
    /// Modules loaded with all their features enabled; others get no features.
    bool enableAllFeatures = true;
};

/// Creates a context with the search dirs and loads every *.yang module found in
/// `searchDirs` (newest revision when several files hold one module). Throws YangError.
Context makeContext(const ContextOptions& options);

/// Lists the module names (without revision) that have a file in `dir`.
std::vector<std::string> modulesInDir(const std::filesystem::path& dir);

} // namespace ncstore
