// The SQLite side of the datastore: schema, migrations, loading and applying change sets.
// Private to the datastore; one Persistence object is used by one thread at a time.
#pragma once

#include "ncstore/changes.hpp"
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
struct RecordSet {
    Datastore ds;
    std::vector<RecordOp> ops;
    /// The write's commit id (0: none), persisted with it as the last commit id (lastCommitId()).
    std::uint64_t commitId = 0;
    /// Journal rows (journal name, data) persisted with it, under its commit id.
    std::vector<std::pair<std::string, std::string>> journal;
    /// Journal retention: (journal name, commit id) deletes the rows up to that commit id.
    std::vector<std::pair<std::string, std::uint64_t>> trims;
    std::size_t bytes() const;
};

/// Schema version of the SQLite layout written by this build; older files are migrated.
inline constexpr int kSchemaVersion = 3;

class Persistence {
public:
    /// Opens or creates the file, applies the durability pragmas, creates or migrates the schema.
    /// Throws Error(OperationFailed) naming the file on any problem.
    Persistence(const std::filesystem::path& file, Durability durability,
                std::uint64_t maxWalBytes = 64u * 1024 * 1024, std::uint64_t cacheBytes = 64u * 1024 * 1024);

    /// Calls fn(path, parent, data) for every record of `ds` in insertion order.
    void load(Datastore ds, const std::function<void(const std::string& path, const std::string& parent,
                                                     const std::string& data)>& fn);
    /// A value of the meta table ("" when absent) / sets one (its own transaction).
    std::string meta(const std::string& key);
    void setMeta(const std::string& key, const std::string& value);
    /// The commit id of the last write persisted (0 when none ever was): the larger of the meta
    /// row commit_id and the journal's newest commit id. A transaction writes the meta row only
    /// when the journal would not tell: when its last write has no journal row, or when it
    /// deletes journal rows. Most commits carry journal rows (the notification log, the
    /// history), and skipping the meta row saves a page (a WAL frame) per commit.
    std::uint64_t lastCommitId();
    /// Calls fn(leaf path, value) for every leaf patch of `ds`, oldest first.
    void loadPatches(Datastore ds,
                     const std::function<void(const std::string& path, const std::string& value)>& fn);

    /// Applies the change sets in ONE transaction and makes it durable. Throws on failure
    /// after rolling the transaction back. Returns (records written, records deleted).
    std::pair<std::uint64_t, std::uint64_t> apply(const std::vector<const RecordSet*>& batch);

    /// Bytes committed since the last call (the WAL's growth), and resets the count.
    /// Bytes in the WAL after the last commit (SQLite's WAL hook).
    std::uint64_t walBytes() const { return walFrames_ * pageSize_; }
    /// Checkpoints the whole WAL and has the next transaction start it again from its beginning
    /// (waiting, at most a few seconds, for the checkpointer and readers). False when it could
    /// not (it is tried again after a later commit).
    bool restartWal();

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
    std::uint64_t walFrames_ = 0;
    std::uint64_t pageSize_ = 4096;
    // An upper bound of the patch rows: while it is 0, rewriting a record skips the patch delete
    // (most stores never hold patches long: a record rewrite drops them). Changed only when a
    // transaction commits.
    std::uint64_t patches_ = 0;
    std::uint64_t lastCommitId_ = 0; // as lastCommitId() would read it; changed when a transaction commits
    std::unique_ptr<SQLite::Statement> upsert_;
    std::unique_ptr<SQLite::Statement> deleteExact_;
    std::unique_ptr<SQLite::Statement> deleteBelow_;
    std::unique_ptr<SQLite::Statement> deleteAll_;
    std::unique_ptr<SQLite::Statement> patch_;
    std::unique_ptr<SQLite::Statement> deletePatchExact_;
    std::unique_ptr<SQLite::Statement> deletePatchBelow_;
    std::unique_ptr<SQLite::Statement> deleteAllPatches_;
    std::unique_ptr<SQLite::Statement> setCommitId_;
    std::unique_ptr<SQLite::Statement> journalRow_;
    std::unique_ptr<SQLite::Statement> journalTrim_;
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

/// Calls fn(row) for every row of journal `name` with a commit id above `after`, in commit
/// order, through a connection of its own (it sees committed transactions only).
void readJournal(const std::filesystem::path& file, const std::string& name, std::uint64_t after,
                 const std::function<void(const JournalRow&)>& fn);

/// Online backup of `file` to `dest` through SQLite's backup API.
void backupFile(const std::filesystem::path& file, const std::filesystem::path& dest);
/// PRAGMA integrity_check of `file`: "ok" or the problems found.
std::string integrityCheckFile(const std::filesystem::path& file);
/// The newest backup beside `file` (files named <file>.backup-*), or "" when there is none.
std::string newestBackup(const std::filesystem::path& file);

} // namespace ncstore::ds::detail
