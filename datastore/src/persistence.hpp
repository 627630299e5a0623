// The SQLite side of the datastore: schema, migrations, loading and applying change sets.
// Private to the datastore; one Persistence object is used by one thread at a time.
#pragma once

#include "ncstore/datastore.hpp"

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace ncstore::ds::detail {

/// One persisted change: the record at `path` is now `data` (under `parent`), or gone.
struct RecordOp {
    enum class Kind {
        Upsert,      ///< write record `path`
        DeleteRange, ///< delete record `path` and every record below it
        DeleteAll,   ///< delete every record of the datastore
        Patch,       ///< the leaf at `path` now has the value `data` (its record is not rewritten)
    };
    Kind kind;
    std::string path;
    std::string parent;
    std::string data;
};

/// Everything one write changes in one datastore; applied all or nothing.
struct ChangeSet {
    Datastore ds;
    std::vector<RecordOp> ops;
    std::size_t bytes() const;
};

/// Schema version of the SQLite layout written by this build; older files are migrated.
inline constexpr int kSchemaVersion = 2;

class Persistence {
public:
    /// Opens or creates the file, applies the durability pragmas, creates or migrates the schema.
    /// Throws Error(OperationFailed) naming the file on any problem.
    Persistence(const std::filesystem::path& file, Durability durability);

    /// Calls fn(path, parent, data) for every record of `ds` in insertion order.
    void load(Datastore ds, const std::function<void(const std::string& path, const std::string& parent,
                                                     const std::string& data)>& fn);
    /// A value of the meta table ("" when absent) / sets one (its own transaction).
    std::string meta(const std::string& key);
    void setMeta(const std::string& key, const std::string& value);
    /// Calls fn(leaf path, value) for every leaf patch of `ds`, oldest first.
    void loadPatches(Datastore ds,
                     const std::function<void(const std::string& path, const std::string& value)>& fn);

    /// Applies the change sets in ONE transaction and makes it durable. Throws on failure
    /// after rolling the transaction back. Returns (records written, records deleted).
    std::pair<std::uint64_t, std::uint64_t> apply(const std::vector<const ChangeSet*>& batch);

    /// Bytes committed since the last call (the WAL's growth), and resets the count.
    std::uint64_t takeBytesSinceCheckpoint() {
        const auto n = bytesSinceCheckpoint_;
        bytesSinceCheckpoint_ = 0;
        return n;
    }

    const std::filesystem::path& file() const { return file_; }

private:
    void migrate();
    /// Deletes the row at `path` and every row below it; returns how many.
    static std::uint64_t deleteRange(SQLite::Statement& exact, SQLite::Statement& below, int ds,
                                     const std::string& path);
    std::filesystem::path file_;
    SQLite::Database db_;
    std::uint64_t bytesSinceCheckpoint_ = 0;
    // An upper bound of the patch rows: while it is 0, rewriting a record skips the patch delete
    // (most stores never hold patches long: a record rewrite drops them).
    std::uint64_t patches_ = 0;
    std::unique_ptr<SQLite::Statement> upsert_;
    std::unique_ptr<SQLite::Statement> deleteExact_;
    std::unique_ptr<SQLite::Statement> deleteBelow_;
    std::unique_ptr<SQLite::Statement> deleteAll_;
    std::unique_ptr<SQLite::Statement> patch_;
    std::unique_ptr<SQLite::Statement> deletePatchExact_;
    std::unique_ptr<SQLite::Statement> deletePatchBelow_;
    std::unique_ptr<SQLite::Statement> deleteAllPatches_;
};

/// A second connection that copies the WAL back into the database file (PASSIVE: it waits for
/// neither readers nor the writer, which keeps appending meanwhile). SQLite's automatic
/// checkpoint, which runs inside a commit, is off: commits never pay for checkpoints.
class Checkpointer {
public:
    explicit Checkpointer(const std::filesystem::path& file);
    void checkpoint();

private:
    SQLite::Database db_;
};

/// Online backup of `file` to `dest` through SQLite's backup API.
void backupFile(const std::filesystem::path& file, const std::filesystem::path& dest);
/// PRAGMA integrity_check of `file`: "ok" or the problems found.
std::string integrityCheckFile(const std::filesystem::path& file);
/// The newest backup beside `file` (files named <file>.backup-*), or "" when there is none.
std::string newestBackup(const std::filesystem::path& file);

} // namespace ncstore::ds::detail
