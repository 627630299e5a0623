// The one select-and-print step of every read reply (get, get-config, and any later read
// operation): the RPC's filter, with-defaults, and NACM read access (RFC 8341 3.4.5).
//
// Promises:
//  - What the user may not read is left out silently, as if it did not exist, for the filter
//    too: a subtree filter's content match or an XPath predicate never selects anything because
//    of a value the user cannot read. List entries whose keys the user cannot read are left out
//    whole; ancestors of readable nodes stay as structure (the engine's rules, nacm.hpp).
//  - Cost: with no access object (NACM off, recovery session, a user who may read everything)
//    the forest is printed exactly as before NACM. Otherwise one walk finds what is unreadable
//    (it stops where a decision covers a subtree). When that is nothing, or only whole top-level
//    nodes (the /nacm every user outside group admin may not read, a denied module), the
//    original is printed without them, also through a subtree filter. Only when something deeper
//    must be left out, or an XPath filter is used (its predicates may look anywhere), is a copy
//    made: of the subtree filter's selection, else of the readable view of the whole forest.
#pragma once

#include "nacm.hpp"
#include "xpathworker.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace ncstore::netconfd {

/// The XML of `forest` (any sibling; nullptr: "") as a read reply shows it to a user with
/// `access` (nullptr: may read everything), through the ietf-netconf `filter` node
/// `filterNode` (nullptr: everything) with the with-defaults print flag `wd`. `skip`, a
/// top-level node of `forest` or nullptr, is left out (shown elsewhere in the reply).
std::string readableXml(const lyd_node* forest, const lyd_node* filterNode, std::uint32_t wd,
                        const nacm::Access* access, const lyd_node* skip = nullptr);

/// What readableXml() evaluates when `filterNode` is an XPath filter, as a job for an XPath
/// worker (xpathworker.hpp), whose answer is then what readableXml() returns: the forest the user
/// may read (the whole forest, or NACM's readable copy of it) printed as LYB, and `skip` to leave
/// out. The forest is only read here: the caller may release its lock before evaluating.
/// nullopt when `filterNode` is not an XPath filter, or one that filter::boundedXPath() finds
/// as cheap as a subtree filter (readableXml() then costs no more than a subtree filter's read).
std::optional<XPathJob> readableXPathJob(const lyd_node* forest, const lyd_node* filterNode, std::uint32_t wd,
                                         const nacm::Access* access, const lyd_node* skip = nullptr);

} // namespace ncstore::netconfd
