#include "persistence.hpp"

#include "dbfiles.hpp"
#include "syncpoint.hpp"

#include "ncstore/log.hpp"

#include <SQLiteCpp/Backup.h>
#include <SQLiteCpp/Transaction.h>
#include <sqlite3.h>

#include <algorithm>

namespace ncstore::ds::detail {

std::size_t RecordSet::bytes() const {
    std::size_t total = 0;
    for (const auto& op : ops) {
        total += op.path.size() + op.parent.size() + op.data.size();
    }
    for (const auto& [name, data] : journal) {
        total += name.size() + data.size();
    }
    return total;
}

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

Persistence::Persistence(const std::filesystem::path& file, Durability durability, std::uint64_t maxWalBytes,
                         std::uint64_t cacheBytes) try
    : file_(privateDatabase(file)), db_(file.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE) {
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
            static_cast<Persistence*>(self)->walFrames_ = static_cast<std::uint64_t>(frames);
            return SQLITE_OK;
        },
        this);
    migrate();
    upsert_ = std::make_unique<SQLite::Statement>(
        db_, "INSERT INTO records(ds, path, parent, data) VALUES(?, ?, ?, ?) "
             "ON CONFLICT(ds, path) DO UPDATE SET parent=excluded.parent, data=excluded.data");
    // Children of `p` have paths starting with "p/": the range [p/, p0) since '0' follows '/'.
    // Two statements, not one with OR: SQLite uses the (ds, path) index for each only then.
    deleteExact_ = std::make_unique<SQLite::Statement>(db_, "DELETE FROM records WHERE ds=? AND path=?");
    deleteBelow_ =
        std::make_unique<SQLite::Statement>(db_, "DELETE FROM records WHERE ds=? AND path>=? AND path<?");
    deleteAll_ = std::make_unique<SQLite::Statement>(db_, "DELETE FROM records WHERE ds=?");
    patch_ =
        std::make_unique<SQLite::Statement>(db_, "INSERT INTO patches(ds, path, value) VALUES(?, ?, ?) "
                                                 "ON CONFLICT(ds, path) DO UPDATE SET value=excluded.value");
    deletePatchExact_ = std::make_unique<SQLite::Statement>(db_, "DELETE FROM patches WHERE ds=? AND path=?");
    deletePatchBelow_ =
        std::make_unique<SQLite::Statement>(db_, "DELETE FROM patches WHERE ds=? AND path>=? AND path<?");
    deleteAllPatches_ = std::make_unique<SQLite::Statement>(db_, "DELETE FROM patches WHERE ds=?");
    setCommitId_ =
        std::make_unique<SQLite::Statement>(db_, "INSERT INTO meta(key, value) VALUES('commit_id', ?) ON "
                                                 "CONFLICT(key) DO UPDATE SET value=excluded.value");
    journalRow_ = std::make_unique<SQLite::Statement>(
        db_, "INSERT INTO journal(name, commit_id, seq, data) VALUES(?, ?, ?, ?)");
    journalTrim_ =
        std::make_unique<SQLite::Statement>(db_, "DELETE FROM journal WHERE name=? AND commit_id<=?");
    patches_ = static_cast<std::uint64_t>(db_.execAndGet("SELECT count(*) FROM patches").getInt64());
    const std::string metaId = meta("commit_id");
    lastCommitId_ = std::max<std::uint64_t>(
        metaId.empty() ? 0 : std::stoull(metaId),
        static_cast<std::uint64_t>(
            db_.execAndGet("SELECT coalesce(max(commit_id), 0) FROM journal").getInt64()));
} catch (const SQLite::Exception& e) {
    failOpen(file, e.what());
}

void Persistence::migrate() {
    db_.exec("CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)");
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
    if (version < 1) {
        // Version 1: one row per record; the rowid keeps insertion order, which is the order
        // libyang keeps for ordered-by-system list entries, so a reload prints the same.
        db_.exec("CREATE TABLE IF NOT EXISTS records("
                 " id INTEGER PRIMARY KEY,"
                 " ds INTEGER NOT NULL,"
                 " path TEXT NOT NULL,"
                 " parent TEXT NOT NULL,"
                 " data BLOB NOT NULL,"
                 " UNIQUE(ds, path))");
        db_.exec("INSERT OR REPLACE INTO meta(key, value) VALUES('schema_version', '1')");
    }
    if (version < 2) {
        // Version 2: a leaf merge writes a patch row (leaf path, value) instead of rewriting the
        // record; rewriting or deleting the record drops the patches below it.
        db_.exec("CREATE TABLE IF NOT EXISTS patches("
                 " id INTEGER PRIMARY KEY,"
                 " ds INTEGER NOT NULL,"
                 " path TEXT NOT NULL,"
                 " value TEXT NOT NULL,"
                 " UNIQUE(ds, path))");
        db_.exec("INSERT OR REPLACE INTO meta(key, value) VALUES('schema_version', '2')");
    }
    if (version < 3) {
        // Version 3: features' journals (notification replay, commit history), written in the
        // same transaction as the change they describe.
        db_.exec("CREATE TABLE IF NOT EXISTS journal("
                 " name TEXT NOT NULL,"
                 " commit_id INTEGER NOT NULL,"
                 " seq INTEGER NOT NULL,"
                 " data BLOB NOT NULL,"
                 " PRIMARY KEY(name, commit_id, seq)) WITHOUT ROWID");
        db_.exec("INSERT OR REPLACE INTO meta(key, value) VALUES('schema_version', '3')");
    }
    // Later versions: `if (version < 4) { ...; UPDATE meta ... }`, each in this transaction.
    tx.commit();
}

void Persistence::load(
    Datastore ds, const std::function<void(const std::string&, const std::string&, const std::string&)>& fn) {
    try {
        SQLite::Statement q(db_, "SELECT path, parent, data FROM records WHERE ds=? ORDER BY id");
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

std::string Persistence::meta(const std::string& key) {
    SQLite::Statement q(db_, "SELECT value FROM meta WHERE key=?");
    q.bind(1, key);
    return q.executeStep() ? q.getColumn(0).getString() : std::string();
}

void Persistence::setMeta(const std::string& key, const std::string& value) {
    SQLite::Statement q(
        db_, "INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value=excluded.value");
    q.bind(1, key);
    q.bind(2, value);
    q.exec();
}

std::uint64_t Persistence::lastCommitId() {
    return lastCommitId_;
}

void Persistence::loadPatches(Datastore ds,
                              const std::function<void(const std::string&, const std::string&)>& fn) {
    try {
        SQLite::Statement q(db_, "SELECT path, value FROM patches WHERE ds=? ORDER BY id");
        q.bind(1, static_cast<int>(ds));
        while (q.executeStep()) {
            fn(q.getColumn(0).getString(), q.getColumn(1).getString());
        }
    } catch (const SQLite::Exception& e) {
        failOpen(file_, e.what());
    }
}

std::uint64_t Persistence::deleteRange(SQLite::Statement& exact, SQLite::Statement& below, int ds,
                                       const std::string& path) {
    const std::string from = path + "/";
    const std::string to = path + "0";
    exact.bind(1, ds);
    exact.bindNoCopy(2, path);
    auto n = static_cast<std::uint64_t>(run(exact));
    below.bind(1, ds);
    below.bindNoCopy(2, from);
    below.bindNoCopy(3, to);
    n += static_cast<std::uint64_t>(run(below));
    return n;
}

std::pair<std::uint64_t, std::uint64_t> Persistence::apply(const std::vector<const RecordSet*>& batch) {
    std::uint64_t written = 0;
    std::uint64_t deleted = 0;
    // The patch count changes only with a committed transaction: a rolled-back one keeps its
    // patch rows, which later record rewrites must still delete.
    std::uint64_t patches = patches_;
    SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
    NCS_SYNC_POINT("persistence:begun");
    for (const RecordSet* cs : batch) {
        const int ds = static_cast<int>(cs->ds);
        for (const RecordOp& op : cs->ops) {
            switch (op.kind) {
            case RecordOp::Kind::Upsert:
                if (patches > 0) {
                    patches -=
                        std::min(patches, deleteRange(*deletePatchExact_, *deletePatchBelow_, ds, op.path));
                }
                upsert_->bind(1, ds);
                upsert_->bindNoCopy(2, op.path);
                upsert_->bindNoCopy(3, op.parent);
                upsert_->bindNoCopy(4, op.data.data(), static_cast<int>(op.data.size()));
                run(*upsert_);
                ++written;
                break;
            case RecordOp::Kind::DeleteRange:
                deleted += deleteRange(*deleteExact_, *deleteBelow_, ds, op.path);
                if (patches > 0) {
                    patches -=
                        std::min(patches, deleteRange(*deletePatchExact_, *deletePatchBelow_, ds, op.path));
                }
                break;
            case RecordOp::Kind::DeleteAll:
                deleteAll_->bind(1, ds);
                deleted += static_cast<std::uint64_t>(run(*deleteAll_));
                deleteAllPatches_->bind(1, ds);
                patches -=
                    std::min<std::uint64_t>(patches, static_cast<std::uint64_t>(run(*deleteAllPatches_)));
                break;
            case RecordOp::Kind::Patch:
                patch_->bind(1, ds);
                patch_->bindNoCopy(2, op.path);
                patch_->bindNoCopy(3, op.data);
                run(*patch_);
                ++patches; // counts a replaced patch twice: only ever too high, never too low
                ++written;
                break;
            }
        }
    }
    std::uint64_t commitId = 0;
    bool journalTells = false; // the batch's newest journal row carries its last commit id
    bool trimmed = false;
    for (const RecordSet* cs : batch) {
        if (cs->commitId >= commitId) {
            journalTells = !cs->journal.empty();
        }
        commitId = std::max(commitId, cs->commitId);
        trimmed = trimmed || !cs->trims.empty();
        int seq = 0;
        for (const auto& [name, data] : cs->journal) {
            journalRow_->bindNoCopy(1, name);
            journalRow_->bind(2, static_cast<std::int64_t>(cs->commitId));
            journalRow_->bind(3, seq++);
            journalRow_->bindNoCopy(4, data.data(), static_cast<int>(data.size()));
            run(*journalRow_);
        }
        for (const auto& [name, through] : cs->trims) {
            journalTrim_->bindNoCopy(1, name);
            journalTrim_->bind(2, static_cast<std::int64_t>(through));
            run(*journalTrim_);
        }
    }
    // lastCommitId(): a trim may delete the rows that held the newest commit id, so a transaction
    // that trims says it in the meta row, as one whose last write has no journal row must.
    const std::uint64_t last = std::max(lastCommitId_, commitId);
    if ((commitId > 0 && !journalTells) || (trimmed && last > 0)) {
        setCommitId_->bind(1, std::to_string(last));
        run(*setCommitId_);
    }
    tx.commit();
    patches_ = patches;
    lastCommitId_ = last;
    for (const RecordSet* cs : batch) {
        bytesSinceCheckpoint_ += cs->bytes();
    }
    return {written, deleted};
}

bool Persistence::restartWal() {
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

Checkpointer::Checkpointer(const std::filesystem::path& file) : db_(file.string(), SQLite::OPEN_READWRITE) {}

void Checkpointer::checkpoint() {
    db_.exec("PRAGMA wal_checkpoint(PASSIVE)");
}

void readJournal(const std::filesystem::path& file, const std::string& name, std::uint64_t after,
                 const std::function<void(const JournalRow&)>& fn) {
    try {
        SQLite::Database db(file.string(), SQLite::OPEN_READONLY);
        SQLite::Statement q(db, "SELECT commit_id, data FROM journal WHERE name=? AND commit_id>? "
                                "ORDER BY commit_id, seq");
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

std::string integrityCheckFile(const std::filesystem::path& file) {
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
