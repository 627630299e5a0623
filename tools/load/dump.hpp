// A device's data dump (what a <get> of a real device returns: configuration and state, XML or
// JSON) made into what ncstore can serve: the configuration as a valid running datastore, the
// state as operational data.
//
// Promises:
// - `unwrap` accepts the document as devices and tools write it: a bare forest, or inside
//   <data>, <config> or <rpc-reply><data> (any namespace), with an XML declaration and comments
//   around it; namespace prefixes declared on a wrapper stay in force for what it holds. JSON: a
//   bare object, or inside "data", "ietf-netconf:data" or "ietf-restconf:data".
// - `clean` never fails on the content (only on a document that is not XML/JSON at all): every
//   node the models reject is dropped, one subtree at a time, and the reason recorded with the
//   path it had. What is kept is exactly what a strict parse and a validation of running accept:
//   the configuration passes lyd_validate_all without state (leafrefs, when, must, mandatory,
//   unique, min/max-elements) and every kept state leaf is of its type. A dropped list entry's
//   state goes with it. Nothing valid is dropped to make the rest valid, except the entry or
//   presence container that a missing mandatory node or a too-short list leaves invalid.
// - Modules that are not data models of the server (`dataModules`; the NETCONF protocol's and
//   the server's own, e.g. nc-notifications' streams) are dropped with reason "server-module".
// Cost: one validation of the configuration per error found (a device of a few thousand nodes
// validates in about a millisecond).
#pragma once

#include "ncstore/yang.hpp"

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace ncstore::load {

/// One dropped subtree: where it was, why (a short reason keyword), libyang's message.
struct Dropped {
    std::string path;
    std::string reason; ///< unknown-node, invalid-value, server-module, missing-mandatory, ...
    std::string message;
    std::size_t nodes = 1; ///< data nodes in the subtree (itself included)
};

struct Result {
    Tree config; ///< what running gets
    Tree state;  ///< config false nodes with the keys of their configuration ancestors
    std::vector<Dropped> dropped;
    std::size_t nodesRead = 0; ///< data nodes parsed (opaque ones included)
    std::size_t configNodes = 0;
    std::size_t stateNodes = 0;

    /// Dropped subtrees per reason.
    std::map<std::string, std::size_t> countsByReason() const;
};

/// The document's content without its wrappers (see the header's promise). Throws
/// std::invalid_argument when the text is not a single well-formed element tree / object.
std::string unwrap(std::string_view text, LYD_FORMAT format);

/// Parses the unwrapped `forest` and keeps what the models accept. `dataModules`: names of the
/// modules whose data may be loaded. Throws YangError only when the text cannot be parsed at all.
Result clean(const ly_ctx* ctx, const std::string& forest, LYD_FORMAT format,
             const std::set<std::string>& dataModules);

/// Sets the leaf `path` to `value` in the configuration or the state, as its schema node is,
/// creating the entries on the way; the configuration must still validate. Throws YangError.
void setLeaf(Result& result, const ly_ctx* ctx, const std::string& path, const std::string& value);

/// The data nodes of a forest (all siblings, all descendants).
std::size_t countNodes(const lyd_node* forest);

} // namespace ncstore::load
