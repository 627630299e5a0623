// Data paths as change sets name them (lyd_path, LYD_PATH_STD): where their steps begin.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace ncstore::netconfd::history {

/// The offsets of the '/' that begin each step of `path`: the '/' outside key predicates, whose
/// quoted values may hold any character. Throws std::runtime_error when a quote or a predicate
/// is left open.
std::vector<std::size_t> stepStarts(std::string_view path);

} // namespace ncstore::netconfd::history
