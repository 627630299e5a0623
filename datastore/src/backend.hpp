// Where the datastore's records live: the seam between the store (trees, edits, group commit)
// and the database under it. Private to the datastore.
//
// Two implementations share one SQL schema (schemaSteps()) and one contract (tests/datastore:
// the store's tests run on both):
//  - SqliteBackend (sqlitebackend.hpp): a local SQLite file in WAL mode, the embedded default;
//  - DqliteBackend (dqlitebackend.hpp): a database of a dqlite cluster (Raft-replicated SQLite)
//    reached through our wire-protocol client; a commit is durable once a Raft majority has it.
//
// Promises of every Backend:
//  1. apply() is all or nothing: it returns once the whole batch is durable, or throws having
//     written none of it. When it cannot know (the connection to a dqlite leader broke during
//     the commit), it finds out by reading the last commit id back before answering, and throws
//     only when the batch is known not to be there or cannot be found out (the message says so).
//  2. load()/loadPatches() give back what committed batches left, records in insertion order
//     (the order libyang keeps for ordered-by-system entries), patches oldest first.
//  3. lastCommitId() is the commit id of the last batch made durable (0: none ever was).
//  4. One thread at a time calls everything but readJournal(), which any thread may call at any
//     time and sees committed batches only.
#pragma once

#include "ncstore/changes.hpp"
#include "ncstore/datastore.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
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
    /// A read's check that this node still leads its dqlite cluster (datastore.hpp, rule 3):
    /// the batch must replicate something, so when it writes nothing else it rewrites the meta
    /// row leader_check.
    bool leaderCheck = false;
    std::size_t bytes() const;
};

/// Schema version of the layout written by this build; older databases are migrated.
inline constexpr int kSchemaVersion = 4;

/// The SQL that brings a database from schema version `step - 1` to `step` (1..kSchemaVersion),
/// each to run in one transaction with the matching `UPDATE meta` (both backends run the same).
const std::vector<std::string>& schemaStep(int step);
/// Creates the meta table (version 0 of every database).
inline constexpr const char* kCreateMeta =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)";

// The statements of a batch, the same on both backends (parameters in this order).
/// An INSERT that may carry many rows: head, then the row's VALUES tuple once per row (joined by
/// ","), then tail. With one row, the statement the SQLite backend prepares; the dqlite backend
/// sends a run of rows as one statement (one parse and plan on the leader, not one per row).
struct RowsSql {
    std::string_view head, row, tail;
    std::string single() const { return std::string(head).append(row).append(tail); }
};
/// (ds, path, parent, data)
inline constexpr RowsSql kUpsertRecordSql{
    "INSERT INTO records(ds, path, parent, data) VALUES", "(?, ?, ?, ?)",
    " ON CONFLICT(ds, path) DO UPDATE SET parent=excluded.parent, data=excluded.data"};
/// (ds, path, value)
inline constexpr RowsSql kUpsertPatchSql{"INSERT INTO patches(ds, path, value) VALUES", "(?, ?, ?)",
                                         " ON CONFLICT(ds, path) DO UPDATE SET value=excluded.value"};
/// (value)
inline constexpr const char* kSetLeaderCheckSql = "INSERT INTO meta(key, value) VALUES('leader_check', ?) ON "
                                                  "CONFLICT(key) DO UPDATE SET value=excluded.value";
/// (commit id as text)
inline constexpr const char* kSetCommitIdSql =
    "INSERT INTO meta(key, value) VALUES('commit_id', ?) ON CONFLICT(key) DO UPDATE SET value=excluded.value";
/// (name, commit id, seq, data)
inline constexpr RowsSql kJournalRowSql{"INSERT INTO journal(name, commit_id, seq, data) VALUES",
                                        "(?, ?, ?, ?)", ""};
/// (name, through)
inline constexpr const char* kJournalTrimSql = "DELETE FROM journal WHERE name=? AND commit_id<=?";
/// (name, after): data of journal rows in commit order
inline constexpr const char* kReadJournalSql =
    "SELECT commit_id, data FROM journal WHERE name=? AND commit_id>? ORDER BY commit_id, seq";
/// (ds): records in insertion order / patches oldest first
inline constexpr const char* kLoadRecordsSql =
    "SELECT path, parent, data FROM records WHERE ds=? ORDER BY id";
inline constexpr const char* kLoadPatchesSql = "SELECT path, value FROM patches WHERE ds=? ORDER BY id";
/// (key) / (key, value)
inline constexpr const char* kMetaSql = "SELECT value FROM meta WHERE key=?";
inline constexpr const char* kSetMetaSql =
    "INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value=excluded.value";
/// The last commit id as lastCommitId() defines it, for a backend that reads it back.
inline constexpr const char* kLastCommitIdSql =
    "SELECT max((SELECT coalesce(max(CAST(value AS INTEGER)), 0) FROM meta WHERE key='commit_id'), "
    "(SELECT coalesce(max(commit_id), 0) FROM journal))";

/// Children of `p` have paths starting with "p/": the range [p/, p0) since '0' follows '/'.
inline std::pair<std::string, std::string> belowRange(const std::string& path) {
    return {path + "/", path + "0"};
}

/// The row writes a batch is made of, run by a backend inside its transaction (writeBatch()).
class RowWriter {
public:
    virtual ~RowWriter() = default;
    virtual void upsertRecord(int ds, const std::string& path, const std::string& parent,
                              const std::string& data) = 0;
    /// Deletes the record at `path` and every record below it (belowRange()); returns how many.
    virtual std::uint64_t deleteRecords(int ds, const std::string& path) = 0;
    virtual std::uint64_t deleteAllRecords(int ds) = 0;
    virtual void upsertPatch(int ds, const std::string& path, const std::string& value) = 0;
    /// Deletes the patch at `path` and every patch below it; returns how many.
    virtual std::uint64_t deletePatches(int ds, const std::string& path) = 0;
    virtual std::uint64_t deleteAllPatches(int ds) = 0;
    virtual void journalRow(const std::string& name, std::uint64_t commitId, int seq,
                            const std::string& data) = 0;
    virtual void trimJournal(const std::string& name, std::uint64_t through) = 0;
    /// The meta row commit_id.
    virtual void setCommitId(std::uint64_t commitId) = 0;
    /// The meta row leader_check, to `value` (which differs from what it held: an unchanged row
    /// leaves SQLite, and so Raft, nothing to write).
    virtual void setLeaderCheck(const std::string& value) = 0;
};

/// What a batch left: counts for the stats, and the state both backends keep between batches.
struct BatchResult {
    std::uint64_t written = 0;
    std::uint64_t deleted = 0;
    /// An upper bound of the patch rows: while it is 0, rewriting a record skips the patch
    /// delete (most stores never hold patches long: a record rewrite drops them).
    std::uint64_t patches = 0;
    std::uint64_t lastCommitId = 0;
};

/// Writes `batch` through `w`, given the patch bound and last commit id before it. The meta row
/// commit_id is written only when the journal would not tell the last commit id (the larger of
/// that row and the journal's newest commit id): when the batch's last write has no journal row,
/// or when it deletes journal rows. Most commits carry journal rows (the notification log, the
/// history), and skipping the meta row saves a page per commit. The caller keeps the result's
/// patches and lastCommitId only once its transaction committed.
BatchResult writeBatch(const std::vector<const RecordSet*>& batch, std::uint64_t patches,
                       std::uint64_t lastCommitId, RowWriter& w);

class Backend {
public:
    virtual ~Backend() = default;

    /// What the data is, for messages: "the datastore /var/lib/ncstore/ncstore.db", "the dqlite
    /// database ncstore on 10.0.0.1:9001, ...".
    virtual std::string describe() const = 0;
    /// What an operator can do when the stored data cannot be loaded ("newest backup: X", or "").
    virtual std::string recoveryHint() const = 0;

    /// Calls fn(path, parent, data) for every record of `ds` in insertion order.
    virtual void load(Datastore ds,
                      const std::function<void(const std::string& path, const std::string& parent,
                                               const std::string& data)>& fn) = 0;
    /// Calls fn(leaf path, value) for every leaf patch of `ds`, oldest first.
    virtual void
    loadPatches(Datastore ds,
                const std::function<void(const std::string& path, const std::string& value)>& fn) = 0;
    /// A value of the meta table ("" when absent) / sets one (its own transaction).
    virtual std::string meta(const std::string& key) = 0;
    /// False for a store opened only to read (a dqlite reader): nothing may be written.
    virtual bool writable() const { return true; }
    virtual void setMeta(const std::string& key, const std::string& value) = 0;
    /// The commit id of the last batch made durable (0 when none ever was).
    virtual std::uint64_t lastCommitId() = 0;

    /// Applies the change sets in ONE transaction and makes it durable (promise 1). Returns
    /// (records written, records deleted).
    virtual std::pair<std::uint64_t, std::uint64_t> apply(const std::vector<const RecordSet*>& batch) = 0;
    /// Upkeep between two transactions, on the committing thread (SQLite: bounding the WAL).
    virtual void afterCommit() {}

    /// Calls fn(row) for every row of journal `name` with a commit id above `after`, in commit
    /// order (promise 4).
    virtual void readJournal(const std::string& name, std::uint64_t after,
                             const std::function<void(const JournalRow&)>& fn) const = 0;
    /// A consistent copy of the data as a local SQLite file `dest` (which the file backend opens).
    virtual void backup(const std::filesystem::path& dest) const = 0;
    /// The database's own integrity check: "ok" or the problems found.
    virtual std::string integrityCheck() const = 0;
};

/// The backend `options` ask for: options.dqlite when set, else the SQLite file options.file.
/// Throws Error(OperationFailed) when it cannot be opened.
std::unique_ptr<Backend> openBackend(const StoreOptions& options);

} // namespace ncstore::ds::detail
