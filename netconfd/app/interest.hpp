// Which changes a subscription's subtree takes in: "/module:*" (a whole module) or a data path
// ("/ietf-interfaces:interfaces", "/m:top/list[key='k']"), predicates written as change paths
// write them (single quotes, module-qualified first node).
//
// Promises: a change is in the subtree when its node lies within it (its path starts with the
// subtree's), or when it creates, deletes or replaces an ancestor of the subtree (a container
// created with its content, an entry deleted whole): the subscriber then gets that change, its
// subtree included. Matching costs a string comparison and a walk up the change's schema node.
#pragma once

#include "ncstore/changes.hpp"

#include <libyang/libyang.h>

#include <string>

namespace ncstore::netconfd::app {

/// A data path without its predicates ("/m:a/b[k='x']/c" -> "/m:a/b/c"): the schema path
/// lys_find_path() reads. `had` tells whether there were any.
std::string schemaPathOf(const std::string& path, bool* had = nullptr);

class Interest {
public:
    /// Throws std::invalid_argument naming what does not resolve in `ctx`.
    Interest(const ly_ctx* ctx, std::string xpath);

    bool touches(const ds::Change& change) const;
    bool touches(const ds::ChangeSet& changes) const;
    /// The changes of `changes` it takes in, as indices.
    std::vector<std::size_t> within(const ds::ChangeSet& changes) const;

    const std::string& xpath() const { return xpath_; }
    /// The module, for "/module:*"; else the subtree's top-level node's module.
    const lys_module* module() const { return module_; }
    /// The subtree's schema node (nullptr for a whole module).
    const lysc_node* schema() const { return schema_; }

private:
    std::string xpath_;
    const lys_module* module_ = nullptr;
    const lysc_node* schema_ = nullptr;
    bool predicates_ = false;
};

} // namespace ncstore::netconfd::app
