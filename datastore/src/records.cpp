#include "records.hpp"

#include "ncstore/yang.hpp"

namespace ncstore::ds::detail {

namespace {

bool isContainer(const lyd_node* node) {
    return node->schema && node->schema->nodetype == LYS_CONTAINER;
}

bool isSystemOrderedListEntry(const lyd_node* node) {
    return node->schema && node->schema->nodetype == LYS_LIST && !(node->schema->flags & LYS_ORDBY_USER);
}

// Copies the shell of `src` (everything but split entries) under `dstParent` (or as a new top): a
// container without its split entries and default children, anything else (leaf, leaf-list
// entry, ordered-by-user list entry, anydata) whole.
lyd_node* copyShell(const lyd_node* src, lyd_node* dstParent) {
    const bool container = isContainer(src);
    lyd_node* copy = nullptr;
    if (lyd_dup_single(src, reinterpret_cast<lyd_node_inner*>(dstParent), container ? 0 : LYD_DUP_RECURSIVE,
                       &copy) != LY_SUCCESS) {
        throw YangError("cannot copy record shell", LYD_CTX(src));
    }
    if (container && lyd_child(src)) {
        // By schema node, not by data child: a device container holds thousands of split entries
        // (connections, interfaces) that the shell skips; their instances are found by hash.
        const lysc_node* schema = nullptr;
        while ((schema = lys_getnext(schema, src->schema, nullptr, 0))) {
            if (schema->nodetype == LYS_LIST && !(schema->flags & LYS_ORDBY_USER)) {
                continue;
            }
            lyd_node* child = nullptr;
            LYD_LIST_FOR_INST(lyd_child(src), schema, child) {
                if (!(child->flags & LYD_DEFAULT)) {
                    copyShell(child, copy);
                }
            }
        }
    }
    return copy;
}

void forEachInContainer(const lyd_node* container, const std::function<void(const lyd_node*)>& fn) {
    for (const lyd_node* child = lyd_child(container); child; child = child->next) {
        if (isSystemOrderedListEntry(child)) {
            fn(child);
        } else if (isContainer(child)) {
            forEachInContainer(child, fn);
        }
    }
}

} // namespace

bool isSplitEntry(const lyd_node* node) {
    if (!isSystemOrderedListEntry(node)) {
        return false;
    }
    for (const lyd_node* p = lyd_parent(node); p; p = lyd_parent(p)) {
        if (!isContainer(p)) {
            return false;
        }
    }
    return true;
}

const lyd_node* recordRoot(const lyd_node* node) {
    const lyd_node* topmostList = nullptr;
    const lyd_node* top = node;
    for (const lyd_node* n = node; n; n = lyd_parent(n)) {
        if (n->schema && n->schema->nodetype == LYS_LIST) {
            topmostList = n;
        }
        top = n;
    }
    if (topmostList && isSystemOrderedListEntry(topmostList)) {
        return topmostList;
    }
    return top;
}

void forEachRecordIn(const lyd_node* node, const std::function<void(const lyd_node*)>& fn) {
    if (isSplitEntry(node)) {
        fn(node);
        return;
    }
    if (!lyd_parent(node)) {
        fn(node);
    }
    if (!isContainer(node)) {
        return;
    }
    for (const lyd_node* p = lyd_parent(node); p; p = lyd_parent(p)) {
        if (!isContainer(p)) {
            return; // inside a record that is not a shell: no records below
        }
    }
    forEachInContainer(node, fn);
}

void forEachRecord(const lyd_node* forest, const std::function<void(const lyd_node*)>& fn) {
    for (const lyd_node* top = forest; top; top = top->next) {
        forEachRecordIn(top, fn);
    }
}

std::string serializeRecord(const lyd_node* root) {
    if (isSplitEntry(root) && lyd_parent(root)) {
        // LYB prints top-level trees only: store the entry with its (key-less) container chain.
        lyd_node* copy = nullptr;
        if (lyd_dup_single(root, nullptr, LYD_DUP_RECURSIVE | LYD_DUP_WITH_PARENTS, &copy) != LY_SUCCESS) {
            throw YangError("cannot copy record", LYD_CTX(root));
        }
        lyd_node* top = copy;
        while (lyd_parent(top)) {
            top = lyd_parent(top);
        }
        Subtree owned{top};
        return printTree(top, LYD_LYB, LYD_PRINT_WD_EXPLICIT);
    }
    if (isSplitEntry(root) || !isContainer(root)) {
        return printTree(root, LYD_LYB, LYD_PRINT_WD_EXPLICIT);
    }
    Subtree shell{copyShell(root, nullptr)};
    return printTree(shell.get(), LYD_LYB, LYD_PRINT_WD_EXPLICIT);
}

Tree copyRecordShell(const lyd_node* top) {
    if (!isContainer(top)) {
        lyd_node* copy = nullptr;
        if (lyd_dup_single(top, nullptr, LYD_DUP_RECURSIVE, &copy) != LY_SUCCESS) {
            throw YangError("cannot copy record shell", LYD_CTX(top));
        }
        return Tree{copy};
    }
    return Tree{copyShell(top, nullptr)};
}

Tree RecordLoader::parse(const ly_ctx* ctx, const std::string& data) {
    lyd_node* parsed = nullptr;
    const uint32_t parseOpts = LYD_PARSE_ONLY | LYD_PARSE_STRICT;
    if (lyd_parse_data_mem(ctx, data.data(), LYD_LYB, parseOpts, 0, &parsed) != LY_SUCCESS) {
        lyd_free_all(parsed);
        throw YangError("cannot parse record", ctx);
    }
    return Tree{parsed};
}

void RecordLoader::link(const std::string& parentPath, Tree owned) {
    lyd_node* parsed = owned.get();
    if (!parsed) {
        throw YangError("empty record" + (parentPath.empty() ? "" : " under " + parentPath));
    }
    if (parentPath.empty()) {
        // Top-level: link into the forest through its first node (cheap, no sibling walk).
        lyd_node* top = owned.release();
        if (forest_) {
            if (lyd_insert_sibling(forest_, top, nullptr) != LY_SUCCESS) {
                lyd_free_all(top);
                throw YangError("cannot link record", ctx_);
            }
        } else {
            forest_ = top;
        }
        forest_ = lyd_first_sibling(forest_);
        return;
    }
    // An entry stored with its container chain: move the entry under the loaded parent.
    lyd_node* entry = parsed;
    while (entry && !isSystemOrderedListEntry(entry)) {
        entry = lyd_child(entry);
    }
    if (!entry) {
        throw YangError("record under " + parentPath + " holds no list entry");
    }
    if (parentPath != lastParentPath_) {
        lastParent_ = nullptr;
        if (!forest_ || lyd_find_path(forest_, parentPath.c_str(), 0, &lastParent_) != LY_SUCCESS ||
            !lastParent_) {
            // No shell record: the parent is a chain of non-presence containers that held nothing
            // but entries (it may even have been created implicitly, as an empty default
            // container, before the first entry arrived). Such containers exist implicitly.
            lyd_node* first = nullptr;
            if (lyd_new_path2(forest_, ctx_, parentPath.c_str(), nullptr, 0, LYD_ANYDATA_STRING, 0, &first,
                              &lastParent_) != LY_SUCCESS ||
                !lastParent_) {
                throw YangError("record parent " + parentPath + " is missing and cannot be created", ctx_);
            }
            if (!forest_) {
                forest_ = first;
            }
            forest_ = lyd_first_sibling(forest_);
        }
        lastParentPath_ = parentPath;
    }
    lyd_unlink_tree(entry);
    if (lyd_insert_child(lastParent_, entry) != LY_SUCCESS) {
        lyd_free_tree(entry);
        throw YangError("cannot link record under " + parentPath, ctx_);
    }
}

} // namespace ncstore::ds::detail
