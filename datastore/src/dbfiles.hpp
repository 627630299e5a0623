// The store's files are private to their owner (ncstore/files.hpp). SQLite creates a database
// 0644 and gives its -wal and -shm files the database's mode, so the database is created 0600
// before SQLite opens it; a store left readable by an older version is made private on open.
#pragma once

#include <filesystem>

namespace ncstore::ds::detail {

/// Makes `db` (created empty when missing) and its existing -wal and -shm files 0600 at most;
/// returns `db`. Throws std::system_error when that fails.
const std::filesystem::path& privateDatabase(const std::filesystem::path& db);

} // namespace ncstore::ds::detail
