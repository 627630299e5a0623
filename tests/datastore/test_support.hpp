// Helpers shared by the datastore tests and the crash driver.
#pragma once

#include "ncstore/datastore.hpp"

#include <filesystem>
#include <string>

namespace ncstore::test {

/// A context with ietf-interfaces, iana-if-type and ietf-netconf (for edit operations).
Context interfacesContext();

/// Parses an edit-config <config> content (XML, several top-level nodes allowed).
Tree parseEdit(const ly_ctx* ctx, const std::string& xml);

/// XML of `count` interface entries named <prefix><i>, as edit content.
std::string interfacesXml(const std::string& prefix, int first, int count, const std::string& op = "");

/// Names of the interfaces in a tree, in order.
std::vector<std::string> interfaceNames(const lyd_node* tree);

} // namespace ncstore::test
