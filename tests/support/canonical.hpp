// A datastore's content as text that compares equal exactly when the content is the same, for
// tests that check a tree against another (undo, rollback, replay).
#pragma once

#include "ncstore/yang.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace ncstore::test {

/// One line per explicit node (terminals and anydata with their value), sorted, and for every
/// ordered-by-user instance the instance it follows: the order of system-ordered entries is not
/// part of a datastore's content, the order of ordered-by-user ones is. Default nodes are left
/// out (RFC 6243 explicit mode).
inline std::string canonical(const lyd_node* forest) {
    std::vector<std::string> lines;
    for (const lyd_node* top = forest ? lyd_first_sibling(forest) : nullptr; top; top = top->next) {
        const lyd_node* elem = nullptr;
        LYD_TREE_DFS_BEGIN(top, elem) {
            if (elem->flags & LYD_DEFAULT) {
                LYD_TREE_DFS_continue = 1;
            } else {
                std::string line = pathOf(elem);
                if (elem->schema->nodetype & LYD_NODE_TERM) {
                    line += " = " + std::string(lyd_get_value(elem));
                } else if (elem->schema->nodetype & LYD_NODE_ANY) {
                    line += " = " + print(elem, LYD_XML, LYD_PRINT_SHRINK);
                }
                if (lysc_is_userordered(elem->schema)) {
                    const bool first = !elem->prev->next || elem->prev->schema != elem->schema;
                    line += first ? " (first)" : " (after " + pathOf(elem->prev) + ")";
                }
                lines.push_back(std::move(line));
            }
            LYD_TREE_DFS_END(top, elem);
        }
    }
    std::sort(lines.begin(), lines.end());
    std::string out;
    for (const auto& l : lines) {
        out += l + "\n";
    }
    return out;
}

} // namespace ncstore::test
