#include "sqlitebackend.hpp"

#include "dbfiles.hpp"
#include "syncpoint.hpp"
#include "walvfs.hpp"

#include "ncstore/log.hpp"
#include "ncstore/threadname.hpp"

#include <SQLiteCpp/Backup.h>
#include <SQLiteCpp/Transaction.h>
#include <sqlite3.h>

#include <algorithm>
#include <chrono>

namespace ncstore::ds::detail {

namespace {

const char* synchronousPragma(Durability d) {
    switch (d) {
    case Durability::Full:
        return "PRAGMA synchronous=FULL";
    case Durability::Normal:
        return "PRAGMA synchronous=NORMAL";
    case Durability::Off:
        return "PRAGMA synchronous=OFF";
    }
    return "PRAGMA synchronous=FULL";
}

/// Runs a bound statement once and resets it whatever happens: a statement SQLite failed in the
/// middle refuses every later bind until it is reset.
int run(SQLite::Statement& statement) {
    struct Reset {
        SQLite::Statement& s;
        ~Reset() { s.tryReset(); }
    } reset{statement};
    return statement.exec();
}

[[noreturn]] void failOpen(const std::filesystem::path& file, const std::string& why) {
    std::string msg = "cannot open the datastore " + file.string() + ": " + why;
    std::string backup = newestBackup(file);
    msg += backup.empty() ? " (no backup found beside it)" : " (newest backup: " + backup + ")";
    throw Error(ErrorTag::OperationFailed, msg);
}

} // namespace

SqliteBackend::SqliteBackend(const std::filesystem::path& file, Durability durability,
                             std::uint64_t maxWalBytes, std::uint64_t cacheBytes) try
    : file_(privateDatabase(file)),
      // At durability full SQLite syncs the WAL at every commit before readers may see it: its
      // writes can then be gathered into one per commit (walvfs.hpp says why, and why only then).
      db_(file.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE, 0,
          durability == Durability::Full ? gatheringWalVfs() : ""),
      maxWalBytes_(maxWalBytes) {
    db_.exec("PRAGMA journal_mode=WAL");
    // A WAL started again is cut back to this size (SQLite otherwise keeps its largest size).
    db_.exec("PRAGMA journal_size_limit=" + std::to_string(maxWalBytes));
    // restartWal() waits this long for the checkpointer's and readers' locks.
    db_.exec("PRAGMA busy_timeout=5000");
    pageSize_ = static_cast<std::uint64_t>(db_.execAndGet("PRAGMA page_size").getInt64());
    db_.exec(synchronousPragma(durability));
    // A negative cache_size is in KiB, whatever the page size.
    db_.exec("PRAGMA cache_size=-" + std::to_string(std::max<std::uint64_t>(cacheBytes / 1024, 1)));
    db_.exec("PRAGMA temp_store=MEMORY");
    db_.exec("PRAGMA wal_autocheckpoint=0"); // the writer checkpoints between transactions
    // After the pragma above, which is itself a WAL hook and would replace this one.
    sqlite3_wal_hook(
        db_.getHandle(),
        [](void* self, sqlite3*, const char*, int frames) {
            static_cast<SqliteBackend*>(self)->walFrames_ = static_cast<std::uint64_t>(frames);
            return SQLITE_OK;
        },
        this);
    migrate();
    upsert_ = std::make_unique<SQLite::Statement>(db_, kUpsertRecordSql.single());
    // Children of a record: belowRange(). Two statements, not one with OR: SQLite uses the
    // (ds, path) index for each only then.
    deleteExact_ = std::make_unique<SQLite::Statement>(db_, "DELETE FROM records WHERE ds=? AND path=?");
    deleteBelow_ =
        std::make_unique<SQLite::Statement>(db_, "DELETE FROM records WHERE ds=? AND path>=? AND path<?");
    deleteAll_ = std::make_unique<SQLite::Statement>(db_, "DELETE FROM records WHERE ds=?");
    patch_ = std::make_unique<SQLite::Statement>(db_, kUpsertPatchSql.single());
    deletePatchExact_ = std::make_unique<SQLite::Statement>(db_, "DELETE FROM patches WHERE ds=? AND path=?");
    deletePatchBelow_ =
        std::make_unique<SQLite::Statement>(db_, "DELETE FROM patches WHERE ds=? AND path>=? AND path<?");
    deleteAllPatches_ = std::make_unique<SQLite::Statement>(db_, "DELETE FROM patches WHERE ds=?");
    setCommitId_ = std::make_unique<SQLite::Statement>(db_, kSetCommitIdSql);
    journalRow_ = std::make_unique<SQLite::Statement>(db_, kJournalRowSql.single());
    journalTrim_ = std::make_unique<SQLite::Statement>(db_, kJournalTrimSql);
    patches_ = static_cast<std::uint64_t>(db_.execAndGet("SELECT count(*) FROM patches").getInt64());
    lastCommitId_ = static_cast<std::uint64_t>(db_.execAndGet(kLastCommitIdSql).getInt64());
    checkpointDb_.emplace(file_.string(), SQLite::OPEN_READWRITE);
    checkpointThread_ = std::thread([this] { checkpointLoop(); });
} catch (const SQLite::Exception& e) {
    failOpen(file, e.what());
}

void SqliteBackend::migrate() {
    db_.exec(kCreateMeta);
    int version = 0;
    {
        SQLite::Statement q(db_, "SELECT value FROM meta WHERE key='schema_version'");
        if (q.executeStep()) {
            version = std::stoi(q.getColumn(0).getString());
        }
    }
    if (version > kSchemaVersion) {
        failOpen(file_, "it was written by a newer ncstore (schema version " + std::to_string(version) +
                            ", this build knows " + std::to_string(kSchemaVersion) + ")");
    }
    SQLite::Transaction tx(db_);
    for (int step = version + 1; step <= kSchemaVersion; ++step) {
        for (const std::string& sql : schemaStep(step)) {
            db_.exec(sql);
        }
        db_.exec("INSERT OR REPLACE INTO meta(key, value) VALUES('schema_version', '" + std::to_string(step) +
                 "')");
    }
    tx.commit();
}

SqliteBackend::~SqliteBackend() {
    {
        std::lock_guard lock(checkpointMutex_);
        checkpointStop_ = true;
    }
    checkpointWake_.notify_all();
    if (checkpointThread_.joinable()) {
        checkpointThread_.join();
    }
}

std::string SqliteBackend::recoveryHint() const {
    const std::string backup = newestBackup(file_);
    return backup.empty() ? "no backup found beside it" : "newest backup: " + backup;
}

void SqliteBackend::load(
    Datastore ds, const std::function<void(const std::string&, const std::string&, const std::string&)>& fn) {
    try {
        SQLite::Statement q(db_, kLoadRecordsSql);
        q.bind(1, static_cast<int>(ds));
        while (q.executeStep()) {
            const auto data = q.getColumn(2);
            fn(q.getColumn(0).getString(), q.getColumn(1).getString(),
               std::string(static_cast<const char*>(data.getBlob()),
                           static_cast<std::size_t>(data.getBytes())));
        }
    } catch (const SQLite::Exception& e) {
        failOpen(file_, e.what());
    }
}

std::string SqliteBackend::meta(const std::string& key) {
    SQLite::Statement q(db_, kMetaSql);
    q.bind(1, key);
    return q.executeStep() ? q.getColumn(0).getString() : std::string();
}

void SqliteBackend::setMeta(const std::string& key, const std::string& value) {
    SQLite::Statement q(db_, kSetMetaSql);
    q.bind(1, key);
    q.bind(2, value);
    q.exec();
}

void SqliteBackend::loadPatches(Datastore ds,
                                const std::function<void(const std::string&, const std::string&)>& fn) {
    try {
        SQLite::Statement q(db_, kLoadPatchesSql);
        q.bind(1, static_cast<int>(ds));
        while (q.executeStep()) {
            fn(q.getColumn(0).getString(), q.getColumn(1).getString());
        }
    } catch (const SQLite::Exception& e) {
        failOpen(file_, e.what());
    }
}

std::uint64_t SqliteBackend::deleteRange(SQLite::Statement& exact, SQLite::Statement& below, int ds,
                                         const std::string& path) {
    const auto [from, to] = belowRange(path);
    exact.bind(1, ds);
    exact.bindNoCopy(2, path);
    auto n = static_cast<std::uint64_t>(run(exact));
    below.bind(1, ds);
    below.bindNoCopy(2, from);
    below.bindNoCopy(3, to);
    n += static_cast<std::uint64_t>(run(below));
    return n;
}

std::pair<std::uint64_t, std::uint64_t> SqliteBackend::apply(const std::vector<const RecordSet*>& batch) {
    // Prepared statements, bound without copies: this is every commit's path.
    struct Rows final : RowWriter {
        SqliteBackend& b;
        explicit Rows(SqliteBackend& backend) : b(backend) {}
        void upsertRecord(int ds, const std::string& path, const std::string& parent,
                          const std::string& data) override {
            b.upsert_->bind(1, ds);
            b.upsert_->bindNoCopy(2, path);
            b.upsert_->bindNoCopy(3, parent);
            b.upsert_->bindNoCopy(4, data.data(), static_cast<int>(data.size()));
            run(*b.upsert_);
        }
        std::uint64_t deleteRecords(int ds, const std::string& path) override {
            return deleteRange(*b.deleteExact_, *b.deleteBelow_, ds, path);
        }
        std::uint64_t deleteAllRecords(int ds) override {
            b.deleteAll_->bind(1, ds);
            return static_cast<std::uint64_t>(run(*b.deleteAll_));
        }
        void upsertPatch(int ds, const std::string& path, const std::string& value) override {
            b.patch_->bind(1, ds);
            b.patch_->bindNoCopy(2, path);
            b.patch_->bindNoCopy(3, value);
            run(*b.patch_);
        }
        std::uint64_t deletePatches(int ds, const std::string& path) override {
            return deleteRange(*b.deletePatchExact_, *b.deletePatchBelow_, ds, path);
        }
        std::uint64_t deleteAllPatches(int ds) override {
            b.deleteAllPatches_->bind(1, ds);
            return static_cast<std::uint64_t>(run(*b.deleteAllPatches_));
        }
        void journalRow(const std::string& name, std::uint64_t commitId, int seq,
                        const std::string& data) override {
            b.journalRow_->bindNoCopy(1, name);
            b.journalRow_->bind(2, static_cast<std::int64_t>(commitId));
            b.journalRow_->bind(3, seq);
            b.journalRow_->bindNoCopy(4, data.data(), static_cast<int>(data.size()));
            run(*b.journalRow_);
        }
        void trimJournal(const std::string& name, std::uint64_t through) override {
            b.journalTrim_->bindNoCopy(1, name);
            b.journalTrim_->bind(2, static_cast<std::int64_t>(through));
            run(*b.journalTrim_);
        }
        void setCommitId(std::uint64_t commitId) override {
            const std::string text = std::to_string(commitId);
            b.setCommitId_->bind(1, text);
            run(*b.setCommitId_);
        }
        void setLeaderCheck(const std::string& value) override {
            // Only a dqlite store asks for it (a read's leadership check): not worth a
            // prepared statement here.
            SQLite::Statement q(b.db_, kSetLeaderCheckSql);
            q.bindNoCopy(1, value);
            run(q);
        }
    } rows(*this);
    const auto begun = std::chrono::steady_clock::now();
    SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
    NCS_SYNC_POINT("persistence:begun");
    // The patch count and commit id change only with a committed transaction: a rolled-back
    // one keeps its patch rows, which later record rewrites must still delete.
    const BatchResult r = writeBatch(batch, patches_, lastCommitId_, rows);
    const auto written = std::chrono::steady_clock::now();
    tx.commit();
    NCS_LOG(debug) << "datastore: " << batch.size() << " change sets: rows written in "
                   << (written - begun) / std::chrono::microseconds(1) << " us, COMMIT in "
                   << (std::chrono::steady_clock::now() - written) / std::chrono::microseconds(1) << " us";
    patches_ = r.patches;
    lastCommitId_ = r.lastCommitId;
    for (const RecordSet* cs : batch) {
        bytesSinceCheckpoint_ += cs->bytes();
    }
    return {r.written, r.deleted};
}

bool SqliteBackend::restartWal() {
    SQLite::Statement q(db_, "PRAGMA wal_checkpoint(RESTART)");
    if (!q.executeStep()) {
        return false;
    }
    const bool busy = q.getColumn(0).getInt() != 0;
    if (!busy) {
        walFrames_ = 0;
    }
    return !busy;
}

void SqliteBackend::afterCommit() {
    if (walBytes() > maxWalBytes_) {
        try {
            const auto t0 = std::chrono::steady_clock::now();
            const bool restarted = restartWal();
            const auto ms =
                std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
            if (!restarted) {
                NCS_LOG(debug) << "datastore: the WAL could not be restarted yet (busy, " << ms.count()
                               << " ms)";
            } else {
                NCS_LOG(debug) << "datastore: WAL restarted in " << ms.count() << " ms";
            }
        } catch (const std::exception& e) {
            NCS_LOG(warning) << "datastore: restarting the WAL failed (tried again later): " << e.what();
        }
    }
    constexpr std::uint64_t kThreshold = 1u << 20;
    if (bytesSinceCheckpoint_ < kThreshold) {
        return;
    }
    bytesSinceCheckpoint_ = 0;
    {
        std::lock_guard lock(checkpointMutex_);
        checkpointWanted_ = true;
    }
    checkpointWake_.notify_one();
}

void SqliteBackend::checkpointLoop() {
    nameThisThread("ncs-checkpoint");
    for (;;) {
        {
            std::unique_lock lock(checkpointMutex_);
            checkpointWake_.wait(lock, [this] { return checkpointWanted_ || checkpointStop_; });
            if (checkpointStop_) {
                return;
            }
            checkpointWanted_ = false;
        }
        try {
            const auto t0 = std::chrono::steady_clock::now();
            SQLite::Statement q(*checkpointDb_, "PRAGMA wal_checkpoint(PASSIVE)");
            if (q.executeStep()) {
                // Its copying competes with the commits for the disk: say how long it took.
                NCS_LOG(debug) << "datastore: WAL checkpoint copied " << q.getColumn(2).getInt() << " of "
                               << q.getColumn(1).getInt() << " frames in "
                               << std::chrono::duration_cast<std::chrono::milliseconds>(
                                      std::chrono::steady_clock::now() - t0)
                                      .count()
                               << " ms";
            }
        } catch (const std::exception& e) {
            NCS_LOG(warning) << "datastore: WAL checkpoint failed (retried after the next commits): "
                             << e.what();
        }
    }
}

void SqliteBackend::readJournal(const std::string& name, std::uint64_t after,
                                const std::function<void(const JournalRow&)>& fn) const {
    const auto& file = file_;
    try {
        SQLite::Database db(file.string(), SQLite::OPEN_READONLY);
        SQLite::Statement q(db, kReadJournalSql);
        q.bind(1, name);
        q.bind(2, static_cast<std::int64_t>(after));
        while (q.executeStep()) {
            const auto data = q.getColumn(1);
            fn(JournalRow{static_cast<std::uint64_t>(q.getColumn(0).getInt64()),
                          std::string(static_cast<const char*>(data.getBlob()),
                                      static_cast<std::size_t>(data.getBytes()))});
        }
    } catch (const SQLite::Exception& e) {
        throw Error(ErrorTag::OperationFailed,
                    "cannot read journal " + name + " of " + file.string() + ": " + e.what());
    }
}

void backupFile(const std::filesystem::path& file, const std::filesystem::path& dest) {
    try {
        SQLite::Database src(file.string(), SQLite::OPEN_READONLY);
        SQLite::Database dst(privateDatabase(dest).string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
        SQLite::Backup backup(dst, src);
        backup.executeStep(); // -1: all pages in one step, consistent snapshot
    } catch (const SQLite::Exception& e) {
        throw Error(ErrorTag::OperationFailed,
                    "backup of " + file.string() + " to " + dest.string() + " failed: " + e.what());
    }
}

void SqliteBackend::backup(const std::filesystem::path& dest) const {
    backupFile(file_, dest);
}

std::string SqliteBackend::integrityCheck() const {
    const auto& file = file_;
    try {
        SQLite::Database db(file.string(), SQLite::OPEN_READONLY);
        SQLite::Statement q(db, "PRAGMA integrity_check");
        std::string result;
        while (q.executeStep()) {
            if (!result.empty()) {
                result += "\n";
            }
            result += q.getColumn(0).getString();
        }
        return result;
    } catch (const SQLite::Exception& e) {
        return std::string("cannot check ") + file.string() + ": " + e.what();
    }
}

std::string newestBackup(const std::filesystem::path& file) {
    std::error_code ec;
    const auto dir = file.has_parent_path() ? file.parent_path() : std::filesystem::path(".");
    const std::string prefix = file.filename().string() + ".backup-";
    std::filesystem::path best;
    std::filesystem::file_time_type bestTime{};
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
        const auto name = entry.path().filename().string();
        if (name.rfind(prefix, 0) != 0) {
            continue;
        }
        auto t = entry.last_write_time(ec);
        if (best.empty() || t > bestTime) {
            best = entry.path();
            bestTime = t;
        }
    }
    return best.string();
}

} // namespace ncstore::ds::detail
