// The `path` of a NACM data-node rule (node-instance-identifier, RFC 8341 3.5.2), resolved against
// the schema once, when the policy is compiled. Internal to the NACM engine.
//
// Accepts what libyang stores for that type (JSON form: module names as prefixes on the first
// node and where the module changes, e.g. /ietf-interfaces:interfaces/interface[name='eth0']) and,
// to be lenient with trees built otherwise, whitespace between tokens, double-quoted literals and
// prefixes on key names. Key predicates may name any subset of a list's keys ("predicates for
// keys are optional"); values are brought to the key type's canonical form so that comparing them
// with stored data is a string comparison. The special path "/" matches every data node.
// Refused, with the reason: positional predicates, predicates on non-key nodes, variables,
// functions, and anything that is not a chain of /node steps.
#pragma once

#include <libyang/libyang.h>

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ncstore::nacm::detail {

/// One `[key='value']` (or `[.='value']` on a leaf-list: then `key` is the leaf-list itself).
struct KeyMatch {
    const lysc_node* key;
    std::string value; ///< canonical
};

/// The predicates on one list or leaf-list step of a path. Keys sorted by schema node address
/// so that rules predicating the same keys have their values in the same order.
struct PredStep {
    const lysc_node* node;
    std::vector<KeyMatch> keys;
};

struct RulePath {
    bool all = false;                  ///< the path "/"
    const lysc_node* target = nullptr; ///< the node the path names (data node, action or notification)
    std::vector<PredStep> preds;       ///< top-down
};

/// A path that cannot be used; what() says why.
class PathError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// Parses and resolves `text` in `ctx`. Throws PathError.
RulePath parseRulePath(const ly_ctx* ctx, std::string_view text);

} // namespace ncstore::nacm::detail
