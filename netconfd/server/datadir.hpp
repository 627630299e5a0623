// What ncstored keeps in its data directory and how the server and its offline commands
// (--add-user --group, --reset-nacm) open it the same way: the same models, the same store file.
#pragma once

#include "options.hpp"

#include "ncstore/datastore.hpp"
#include "ncstore/models.hpp"

#include <filesystem>

namespace ncstore::netconfd {

/// The models `config` names (ncstored's defaults, --yang-dir, --yang-search-dir).
ModelOptions modelOptions(const ServerConfig& config);
/// The store of the data directory, with the configured durability.
ds::StoreOptions storeOptions(const ServerConfig& config);
/// Held (files::ProcessLock) by the server for as long as it runs.
std::filesystem::path lockFile(const ServerConfig& config);

} // namespace ncstore::netconfd
