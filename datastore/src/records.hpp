// How a datastore tree is cut into persisted records. Private to the datastore.
//
// A record is the unit written to SQLite. Cutting rule: below each top-level node, descend
// through containers; every entry of the first list met on that way, when the list is
// ordered-by-system, is a record of its own (a device, an interface, a circuit-pack). Everything
// else of that top-level node (its containers and leaves, and ordered-by-user lists whose order
// must be kept) is the top-level node's "shell" record. So a leaf merge on 1000 devices rewrites
// 1000 device records, deleting a device deletes one record, and a top-level delete is a range
// delete over the paths that start with its path.
#pragma once

#include <libyang/libyang.h>

#include "ncstore/yang.hpp"

#include <functional>
#include <string>

namespace ncstore::ds::detail {

/// True when `node` is a list entry that is a record of its own.
bool isSplitEntry(const lyd_node* node);

/// The root of the record that holds `node` (a split entry or a top-level node).
const lyd_node* recordRoot(const lyd_node* node);

/// Calls `fn` for every record root inside the subtree of `node` (itself included when it is a
/// split entry or a top-level node), shells before the entries they contain.
void forEachRecordIn(const lyd_node* node, const std::function<void(const lyd_node*)>& fn);

/// Calls `fn` for every record root of the whole forest, shells first.
void forEachRecord(const lyd_node* forest, const std::function<void(const lyd_node*)>& fn);

/// The record's bytes (LYB): a split entry's subtree, or a top-level node without its split
/// entries. Default nodes are not stored: validation re-creates them at load.
std::string serializeRecord(const lyd_node* root);

/// A copy of the shell of the top-level node `top` (see above) as a tree of its own.
Tree copyRecordShell(const lyd_node* top);

/// Rebuilds a forest from records given in insertion order (a parent before its entries).
class RecordLoader {
public:
    explicit RecordLoader(const ly_ctx* ctx) : ctx_(ctx) {}
    RecordLoader(const RecordLoader&) = delete;
    RecordLoader& operator=(const RecordLoader&) = delete;
    ~RecordLoader() { lyd_free_all(forest_); }

    /// Parses a record's bytes. Thread-safe: records may be parsed on several threads at once.
    static Tree parse(const ly_ctx* ctx, const std::string& data);
    /// Links a parsed record: top-level when `parentPath` is empty, otherwise under the already
    /// loaded node at `parentPath`. Records must be linked in insertion order. Throws YangError.
    void link(const std::string& parentPath, Tree parsed);
    /// The forest built so far; the loader no longer owns it.
    lyd_node* release() {
        lyd_node* f = forest_;
        forest_ = nullptr;
        return f;
    }

private:
    const ly_ctx* ctx_;
    lyd_node* forest_ = nullptr;
    std::string lastParentPath_;
    lyd_node* lastParent_ = nullptr;
};

} // namespace ncstore::ds::detail
