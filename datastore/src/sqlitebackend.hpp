// The embedded default backend: a local SQLite file in WAL mode (backend.hpp says what every
// backend promises). Private to the datastore.
//
// Beyond the Backend contract:
//  - durability: synchronous FULL/NORMAL/OFF as StoreOptions::durability says;
//  - commits never pay for checkpoints: SQLite's automatic checkpoint is off; a thread of its own
//    copies the WAL back (PASSIVE) once a MiB was committed since the last time, and afterCommit()
//    starts the WAL again from its beginning once it holds more than maxWalBytes (commits wait
//    meanwhile: under a steady stream of commits SQLite would never find the moment itself).
#pragma once

#include "backend.hpp"

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace ncstore::ds::detail {

class SqliteBackend final : public Backend {
public:
    /// Opens or creates the file, applies the durability pragmas, creates or migrates the schema.
    /// Throws Error(OperationFailed) naming the file on any problem.
    SqliteBackend(const std::filesystem::path& file, Durability durability,
                  std::uint64_t maxWalBytes = 64u * 1024 * 1024,
                  std::uint64_t cacheBytes = 64u * 1024 * 1024);
    ~SqliteBackend() override;

    std::string describe() const override { return "the datastore " + file_.string(); }
    std::string recoveryHint() const override;
    void load(Datastore ds, const std::function<void(const std::string& path, const std::string& parent,
                                                     const std::string& data)>& fn) override;
    void
    loadPatches(Datastore ds,
                const std::function<void(const std::string& path, const std::string& value)>& fn) override;
    std::string meta(const std::string& key) override;
    void setMeta(const std::string& key, const std::string& value) override;
    /// The larger of the meta row commit_id and the journal's newest commit id. A transaction
    /// writes the meta row only when the journal would not tell: when its last write has no
    /// journal row, or when it deletes journal rows. Most commits carry journal rows (the
    /// notification log, the history), and skipping the meta row saves a page (a WAL frame) per
    /// commit.
    std::uint64_t lastCommitId() override { return lastCommitId_; }
    std::pair<std::uint64_t, std::uint64_t> apply(const std::vector<const RecordSet*>& batch) override;
    void afterCommit() override;
    /// Through a connection of its own (it sees committed transactions only).
    void readJournal(const std::string& name, std::uint64_t after,
                     const std::function<void(const JournalRow&)>& fn) const override;
    /// Through SQLite's backup API: consistent while the writer goes on.
    void backup(const std::filesystem::path& dest) const override;
    std::string integrityCheck() const override;

    /// Bytes in the WAL after the last commit (SQLite's WAL hook).
    std::uint64_t walBytes() const { return walFrames_ * pageSize_; }

private:
    void migrate();
    /// Checkpoints the whole WAL and has the next transaction start it again from its beginning
    /// (waiting, at most a few seconds, for the checkpointer and readers). False when it could
    /// not (it is tried again after a later commit).
    bool restartWal();
    void checkpointLoop();
    /// Deletes the row at `path` and every row below it; returns how many.
    static std::uint64_t deleteRange(SQLite::Statement& exact, SQLite::Statement& below, int ds,
                                     const std::string& path);

    std::filesystem::path file_;
    SQLite::Database db_;
    std::uint64_t maxWalBytes_;
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

    // The checkpointer: a second connection that copies the WAL back into the database file
    // (PASSIVE: it waits for neither readers nor the writer, which keeps appending meanwhile).
    std::optional<SQLite::Database> checkpointDb_;
    std::mutex checkpointMutex_;
    std::condition_variable checkpointWake_;
    bool checkpointWanted_ = false;
    bool checkpointStop_ = false;
    std::thread checkpointThread_;
};

/// Online backup of the SQLite file `file` to `dest` (no store needs to be open).
void backupFile(const std::filesystem::path& file, const std::filesystem::path& dest);
/// The newest backup beside `file` (files named <file>.backup-*), or "" when there is none.
std::string newestBackup(const std::filesystem::path& file);

} // namespace ncstore::ds::detail
