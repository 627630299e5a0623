#include "dbfiles.hpp"

#include "ncstore/files.hpp"

namespace ncstore::ds::detail {

const std::filesystem::path& privateDatabase(const std::filesystem::path& db) {
    files::ensurePrivateFile(db);
    for (const char* suffix : {"-wal", "-shm"}) {
        const std::filesystem::path companion = db.string() + suffix;
        if (std::filesystem::exists(companion)) {
            files::ensurePrivateFile(companion);
        }
    }
    return db;
}

} // namespace ncstore::ds::detail
