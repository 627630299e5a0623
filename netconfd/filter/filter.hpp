// NETCONF filtering of configuration data: RFC 6241 §6 subtree filters and the :xpath
// capability's XPath filters, applied to a libyang data forest.
//
// Promises:
//  - The input trees are never modified, and several threads may filter one tree at once (the
//    datastore's readers do): libyang lookups that would change a hash table for a moment are
//    not used, or, for XPath, run alone (filter.cpp). The result is a new forest of duplicated
//    nodes (with their ancestors) that the caller owns and prints. Node flags are kept (LYD_DUP_WITH_FLAGS),
//    so LYD_DEFAULT survives and the printer's with-defaults modes work on the result:
//        explicit           -> LYD_PRINT_WD_EXPLICIT
//        trim               -> LYD_PRINT_WD_TRIM
//        report-all         -> LYD_PRINT_WD_ALL
//        report-all-tagged  -> LYD_PRINT_WD_ALL_TAG (needs ietf-netconf-with-defaults in the
//                              context for the wd:default attribute)
//    Nodes selected by several filter branches appear once. Sibling list/leaf-list entries keep
//    the order they have in the data. A selected list entry always carries its keys.
//  - An empty result is nullptr (print it as an empty <data/>).
//  - A subtree content match on all keys of a list is a hash lookup (lyd_find_sibling_val), so
//    a filter naming K entries of an N-entry list costs O(K), not O(K*N). Content matches on
//    non-key leaves, and lists where not every key is given, scan the list's entries.
//  - Errors (a malformed XPath, an anyxml value of a kind we cannot read) throw
//    filter::Error with the reason.
#pragma once

#include "ncstore/errortag.hpp"
#include "ncstore/yang.hpp"

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace ncstore::filter {

/// A filter that cannot be evaluated. Map it to the rpc-error tag `invalid-value` (bad XPath) or
/// `bad-element` (unreadable subtree filter), error-type protocol.
class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// A filter the server stopped evaluating: over its budget (ErrorTag::ResourceDenied), or its
/// client gone or its evaluator failed (ErrorTag::OperationFailed). Map it to an rpc-error of
/// that tag, error-type application.
class Stopped : public std::runtime_error {
public:
    Stopped(ErrorTag errorTag, const std::string& message) : std::runtime_error(message), tag(errorTag) {}
    ErrorTag tag;
};

/// RFC 6241 §6 subtree filtering of the forest `data` (any sibling of the forest; may be nullptr).
///
/// `filter` is the first top-level node of the filter's content, i.e. the children of
/// `<filter type="subtree">`, exactly as libyang parses them into the value of the ietf-netconf
/// `filter` anyxml (LYD_ANYDATA_DATATREE, parsed with LYD_PARSE_OPAQ): a mix of schema nodes
/// (elements libyang could resolve) and opaque nodes (everything else: selection nodes whose
/// empty value is not valid for their type, list entries without keys, unknown elements). Both
/// kinds are read for namespace, name and value; opaque values are interpreted with the XML
/// prefixes in scope (identityref content matches work), schema node values are canonical.
/// nullptr (an empty `<filter/>`) selects nothing.
///
/// Semantics (RFC 6241 §6.2):
///  - namespace selection: an element matches data nodes of the module with its namespace; an
///    element without namespace, or in the NETCONF base namespace (what an element written
///    without xmlns inside <filter> inherits), matches data nodes of that name in any module;
///  - containment nodes (elements with children), selection nodes (empty elements: the whole
///    subtree), content-match nodes (leaves with a value: exact match of the canonical value;
///    all content matches of a sibling set must hold, and a set with only content matches
///    selects the whole parent; list keys are ordinary content matches);
///  - several top-level filter elements, or several sibling containment nodes of one name,
///    select the union.
/// Attribute-match expressions are not supported: attributes in the filter are ignored.
Tree subtree(const lyd_node* data, const lyd_node* filter);

/// The `filter` anyxml node of a parsed get/get-config RPC (value of
/// type LYD_ANYDATA_DATATREE, or an XML string which is parsed here with
/// LYD_PARSE_ONLY | LYD_PARSE_OPAQ in the context of `filterNode`), evaluated as subtree().
Tree subtreeOfAnyxml(const lyd_node* data, const lyd_node* filterNode);

/// Parses `xml` (the content of a <filter>, several top-level elements allowed) and evaluates
/// it as subtree(). When `ctx` implements ietf-netconf, the text is parsed exactly as the
/// server receives it (inside a get-config RPC: elements without xmlns are in the NETCONF base
/// namespace); otherwise as data with LYD_PARSE_ONLY | LYD_PARSE_OPAQ, which rejects some
/// filters (list entries without keys). For tests and tools.
Tree subtreeOfXml(const lyd_node* data, const ly_ctx* ctx, const std::string& xml);

/// XPath filter (RFC 6241 §8.9, `<filter type="xpath" select="...">`) on the forest `data`.
///
/// `expr` uses libyang's JSON prefixes (module names). That is what the server already has:
/// libyang's xpath1.0 type turns the `select` attribute's XML prefixes (declared with xmlns on
/// the <filter> element) into module names, so pass lyd_get_meta_value() of the
/// ietf-netconf:select metadata as is. For clients that write no prefix at all, a top-level
/// name without prefix is resolved to the one module that has a top-level data node of that
/// name (children inherit the module as usual in libyang).
///
/// The result holds every selected node with its ancestors (list ancestors with their keys);
/// a selected container or list entry comes with its whole subtree. An expression that does
/// not yield a node-set (e.g. count(...)) selects nothing. Throws Error on an invalid
/// expression.
Tree xpath(const lyd_node* data, const std::string& expr);

/// Whether evaluating `expr` costs at most about its length times the size of the data, by its
/// text alone (conservative: false when unsure): at most 512 characters, at most one `//`, no
/// `..`, no axis (`::`), no variable, and no location path or function call inside a predicate.
/// The paths clients send most (`/m:a/b[key='v']/c`, unions of them) pass; a filter that
/// nests paths or climbs back up does not, and the server evaluates it in a worker, within a
/// budget (netconfd/read/xpathworker.hpp).
bool boundedXPath(const std::string& expr);

/// xpath(), printed as applyXml() prints it, without the selected top-level node of schema
/// `leaveOut` (nullptr: none) and what it holds: the filter may look at it, the output leaves it
/// out. What the XPath worker (netconfd/read/xpathworker.hpp) answers.
std::string xpathXml(const lyd_node* data, const std::string& expr, uint32_t printOptions,
                     const lysc_node* leaveOut = nullptr);

/// The whole get/get-config filtering step: `filterNode` is the ietf-netconf `filter` anyxml
/// of the RPC; type="xpath" runs xpath() on its select, anything else subtreeOfAnyxml().
/// (libyang already refuses a select that is not a valid XPath while parsing the RPC: its type
/// is yang:xpath1.0. A valid expression naming nothing that exists selects nothing.)
/// (Without a filter element the caller returns all data; this is not called.)
Tree apply(const lyd_node* data, const lyd_node* filterNode);

/// apply(), printed: the selected data as XML (no enclosing element; "" when nothing is
/// selected), with `printOptions` LYD_PRINT_* flags (with-defaults mode, KEEPEMPTYCONT; output
/// is always shrunk). Selected subtrees are printed straight from `data` instead of being
/// duplicated first, which halves the server's work for large results (benchmark B6: 3000 whole
/// devices). The text is equivalent to printing apply()'s tree: same elements, values and
/// default attributes; an element may repeat an xmlns its parent already declared.
std::string applyXml(const lyd_node* data, const lyd_node* filterNode, uint32_t printOptions);

/// applyXml() of a subtree filter on `data` without the top-level nodes `absent` (NACM: what the
/// user may not read): the result is what the filter selects from the forest those nodes are
/// not in, without copying it. A subtree filter selects among top-level nodes one by one, so
/// leaving some out changes nothing else. Not for XPath filters, whose predicates may look at
/// any node: throws std::invalid_argument.
std::string applySubtreeXmlWithout(const lyd_node* data, const lyd_node* filterNode, uint32_t printOptions,
                                   const std::vector<const lyd_node*>& absent);

/// A filter given as a YANG parameter, the NMDA and RFC 8639/8641 way (an anydata holding a
/// subtree filter, or a yang:xpath1.0 leaf holding an XPath), copied as a node the functions
/// above read like an ietf-netconf `filter` (an XPath leaf gets the ietf-netconf type and select
/// annotations). `param` is such a node of a parsed RPC; libyang has checked the XPath's syntax
/// and prefixes. The context must implement ietf-netconf.
Tree fromParameter(const lyd_node* param);

/// One step of a path a filter selects: a node name in a module ("": any module).
struct SelectedStep {
    std::string module;
    std::string name;
};
/// The paths `filterNode` selects whole, when that is all it does: a subtree filter of
/// containment and selection nodes only (no content match, every namespace implemented), or an
/// XPath that is a plain absolute path ("/m:a/b"). A node lies in what the filter selects exactly
/// when one of these paths is a prefix of its schema path. nullopt for any other filter.
std::optional<std::vector<std::vector<SelectedStep>>> selectedPaths(const lyd_node* filterNode);

/// The top-level data nodes `filterNode` can select anything in or under, each as a step
/// (module "": of any module), or nullopt when that is not known without evaluating it (an XPath
/// other than a plain path, a filter given as text). Lets a reader skip building data that no
/// answer could contain (the server's state data for a filter on /interfaces). A top-level filter
/// element of a namespace no module implements can select nothing and adds no step.
std::optional<std::vector<SelectedStep>> topLevelScope(const lyd_node* filterNode);

/// The `select` expression of an ietf-netconf `filter` node with type="xpath" (possibly ""),
/// or nullopt when the node has type subtree or none. Throws Error when type is xpath but
/// select is missing.
std::optional<std::string> xpathSelect(const lyd_node* filterNode);

} // namespace ncstore::filter
