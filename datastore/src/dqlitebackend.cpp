#include "dqlitebackend.hpp"

#include "sqlitebackend.hpp"

#include "ncstore/log.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <limits>
#include <map>
#include <thread>

namespace ncstore::ds::detail {

using dqlite::Blob;
using dqlite::Connection;
using dqlite::Value;
using Kind = dqlite::Error::Kind;
using std::chrono::milliseconds;

namespace {

// One statement each where the file backend runs two: each is a round trip to the leader.
constexpr const char* kDeleteRecordsSql =
    "DELETE FROM records WHERE ds=? AND (path=? OR (path>=? AND path<?))";
constexpr const char* kDeletePatchesSql =
    "DELETE FROM patches WHERE ds=? AND (path=? OR (path>=? AND path<?))";
constexpr const char* kDeleteAllRecordsSql = "DELETE FROM records WHERE ds=?";
constexpr const char* kDeleteAllPatchesSql = "DELETE FROM patches WHERE ds=?";
constexpr int kSqliteBusy = 5;
// A page of journal rows after (commit id, seq): (name, commit id, commit id, seq, limit).
constexpr const char* kReadJournalPageSql =
    "SELECT commit_id, seq, data FROM journal WHERE name=? AND (commit_id>? OR (commit_id=? AND seq>?)) "
    "ORDER BY commit_id, seq LIMIT ?";
constexpr int kJournalPageRows = 500;

/// A TEXT or BLOB column as bytes (NULL: empty).
std::string bytesOf(const Value& v) {
    if (const auto* s = std::get_if<std::string>(&v)) {
        return *s;
    }
    if (const auto* b = std::get_if<Blob>(&v)) {
        return std::string(b->bytes.begin(), b->bytes.end());
    }
    if (const auto* i = std::get_if<std::int64_t>(&v)) {
        return std::to_string(*i);
    }
    return {};
}

/// An INTEGER column, or TEXT holding a number (the meta table's values); NULL is 0.
std::uint64_t integerOf(const Value& v) {
    if (const auto* i = std::get_if<std::int64_t>(&v)) {
        return static_cast<std::uint64_t>(std::max<std::int64_t>(*i, 0));
    }
    if (std::holds_alternative<std::nullptr_t>(v)) {
        return 0;
    }
    const std::string text = bytesOf(v);
    std::uint64_t n = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec != std::errc() || end != text.data() + text.size()) {
        throw Error(ErrorTag::OperationFailed,
                    "the dqlite database holds '" + text + "' where a number belongs");
    }
    return n;
}

/// The schema version the meta rows of kMetaSql('schema_version') give (0: none).
int schemaVersionOf(const dqlite::Rows& rows) {
    return rows.rows.empty() ? 0 : static_cast<int>(integerOf(rows.rows[0][0]));
}

milliseconds left(std::chrono::steady_clock::time_point deadline) {
    return std::max(milliseconds{1},
                    std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now()));
}

dqlite::ClusterOptions clusterOptions(const DqliteStoreOptions& o) {
    dqlite::ClusterOptions c;
    c.connect.connectTimeout = std::min(o.timeout, milliseconds{2000});
    c.connect.requestTimeout = o.timeout;
    return c;
}

/// Ends an explicit transaction the node still holds open after a refused statement (a
/// connection that broke has none left: the node rolled it back).
void rollbackQuietly(Connection& c, std::uint32_t db) noexcept {
    if (!c.usable()) {
        return;
    }
    try {
        c.exec(db, "ROLLBACK");
    } catch (const std::exception&) {
        // Nothing was open (the node rolled back itself), or the connection broke meanwhile.
    }
}

/// SQL literals: a blob in hex; text in quotes ('' for a quote: SQLite has no other escape), or
/// as a cast blob when it holds a NUL, which a quoted literal cannot.
std::string blobLiteral(const std::string& bytes) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string out;
    out.reserve(bytes.size() * 2 + 3);
    out += "X'";
    for (const char c : bytes) {
        const auto b = static_cast<unsigned char>(c);
        out += kHex[b >> 4];
        out += kHex[b & 15];
    }
    out += '\'';
    return out;
}

std::string textLiteral(const std::string& text) {
    if (text.find('\0') != std::string::npos) {
        return "CAST(" + blobLiteral(text) + " AS TEXT)";
    }
    std::string out;
    out.reserve(text.size() + 2);
    out += '\'';
    for (const char c : text) {
        out += c;
        if (c == '\'') {
            out += '\'';
        }
    }
    out += '\'';
    return out;
}

/// `sql` with each '?' replaced by the next of `literals` (the shared statements of backend.hpp
/// have no '?' inside a string).
std::string withLiterals(std::string_view sql, std::initializer_list<std::string> literals) {
    std::string out;
    auto next = literals.begin();
    for (const char c : sql) {
        if (c == '?' && next != literals.end()) {
            out += *next++;
        } else {
            out += c;
        }
    }
    return out;
}

/// A batch's row writes inside one transaction on the leader. dqlite 1.11 binds parameters to
/// the first statement of a request only, so the writes whose result the batch does not need
/// are sent together as SQL text with their values as literals: one round trip for many, where
/// one each made a single-entry commit cost about seven. Rows of one kind in a row go as one
/// multi-row statement: the leader executes a batch's statements on its one thread, and parsing
/// and planning a statement per row took most of that time. Deletes, whose counts the batch
/// needs, go alone with parameters, after what is pending.
class Rows final : public RowWriter {
public:
    Rows(Connection& c, std::uint32_t db) : c_(c), db_(db) {}
    void upsertRecord(int ds, const std::string& path, const std::string& parent,
                      const std::string& data) override {
        addRow(kUpsertRecordSql,
               withLiterals(kUpsertRecordSql.row,
                            {std::to_string(ds), textLiteral(path), textLiteral(parent), blobLiteral(data)}));
    }
    std::uint64_t deleteRecords(int ds, const std::string& path) override {
        return deleteSubtree(kDeleteRecordsSql, ds, path);
    }
    std::uint64_t deleteAllRecords(int ds) override {
        return counted(kDeleteAllRecordsSql, {std::int64_t{ds}});
    }
    void upsertPatch(int ds, const std::string& path, const std::string& value) override {
        addRow(kUpsertPatchSql, withLiterals(kUpsertPatchSql.row,
                                             {std::to_string(ds), textLiteral(path), textLiteral(value)}));
    }
    std::uint64_t deletePatches(int ds, const std::string& path) override {
        return deleteSubtree(kDeletePatchesSql, ds, path);
    }
    std::uint64_t deleteAllPatches(int ds) override {
        return counted(kDeleteAllPatchesSql, {std::int64_t{ds}});
    }
    void journalRow(const std::string& name, std::uint64_t commitId, int seq,
                    const std::string& data) override {
        addRow(kJournalRowSql, withLiterals(kJournalRowSql.row, {textLiteral(name), std::to_string(commitId),
                                                                 std::to_string(seq), blobLiteral(data)}));
    }
    void trimJournal(const std::string& name, std::uint64_t through) override {
        add(withLiterals(kJournalTrimSql, {textLiteral(name), std::to_string(through)}));
    }
    void setCommitId(std::uint64_t commitId) override {
        add(withLiterals(kSetCommitIdSql, {textLiteral(std::to_string(commitId))}));
    }
    void setLeaderCheck(const std::string& value) override {
        add(withLiterals(kSetLeaderCheckSql, {textLiteral(value)}));
    }
    /// Sends what is pending with COMMIT.
    void commit() {
        add("COMMIT");
        flush();
    }
    /// SQL text sent so far.
    std::size_t sentBytes() const { return sent_; }

private:
    // A request of a few MiB at most: dqlite keeps a whole request in memory, and so do we.
    static constexpr std::size_t kFlushBytes = 4u << 20;
    // Rows per multi-row statement: well inside SQLite's limits on a statement.
    static constexpr std::size_t kRunRows = 256;

    /// A statement whose count the batch needs: after what is pending, alone, with parameters.
    std::uint64_t counted(const char* sql, const std::vector<Value>& params) {
        flush();
        return c_.exec(db_, sql, params).rowsAffected;
    }
    /// (ds, path, belowRange(path)) statements: the row at `path` and the rows below it.
    std::uint64_t deleteSubtree(const char* sql, int ds, const std::string& path) {
        const auto [from, to] = belowRange(path);
        return counted(sql, {std::int64_t{ds}, path, from, to});
    }

    /// One row of `sql`: into the open statement when it is one of `sql`'s, else in a new one.
    void addRow(const RowsSql& sql, const std::string& values) {
        if (run_ == &sql && runRows_ < kRunRows) {
            pending_ += ',';
            ++runRows_;
        } else {
            separate();
            pending_ += sql.head;
            run_ = &sql;
            runRows_ = 1;
        }
        pending_ += values;
        flushIfFull();
    }
    void add(const std::string& statement) {
        separate();
        pending_ += statement;
        flushIfFull();
    }
    /// Ends the open multi-row statement, if any, and starts the next statement.
    void separate() {
        endRun();
        pending_ += pending_.empty() ? "" : ";";
    }
    void endRun() {
        if (run_) {
            pending_ += run_->tail;
            run_ = nullptr;
        }
    }
    void flushIfFull() {
        if (pending_.size() >= kFlushBytes) {
            flush();
        }
    }
    void flush() {
        endRun();
        if (!pending_.empty()) {
            sent_ += pending_.size();
            c_.exec(db_, pending_);
            pending_.clear();
        }
    }

    Connection& c_;
    std::uint32_t db_;
    std::size_t sent_ = 0;
    std::string pending_ = "BEGIN";
    const RowsSql* run_ = nullptr; ///< the statement whose rows pending_ ends with, if any
    std::size_t runRows_ = 0;
};

} // namespace

DqliteBackend::DqliteBackend(DqliteStoreOptions options)
    : options_(std::move(options)), cluster_(options_.nodes, clusterOptions(options_)) {
    if (options_.nodes.empty()) {
        throw Error(ErrorTag::OperationFailed, "the dqlite backend needs the address of at least one node");
    }
    try {
        if (options_.reader) {
            checkSchema();
        } else {
            migrate();
        }
        lastCommitId_ = integerOf(query(kLastCommitIdSql, {}).rows.at(0).at(0));
        patches_ = integerOf(query("SELECT count(*) FROM patches", {}).rows.at(0).at(0));
    } catch (const dqlite::Error& e) {
        fail("cannot open", e);
    }
}

std::string DqliteBackend::describe() const {
    std::string nodes;
    for (const auto& n : options_.nodes) {
        nodes += (nodes.empty() ? "" : ", ") + n;
    }
    return "the dqlite database " + options_.database + " on " + nodes;
}

void DqliteBackend::fail(const std::string& what, const std::exception& e) const {
    throw Error(ErrorTag::OperationFailed, what + " " + describe() + ": " + e.what());
}

void DqliteBackend::checkSchema() {
    const int version = schemaVersionOf(query(kMetaSql, {std::string("schema_version")}));
    if (version != kSchemaVersion) {
        throw Error(ErrorTag::OperationFailed, describe() + " has schema version " + std::to_string(version) +
                                                   " and this build reads " + std::to_string(kSchemaVersion) +
                                                   " only: use a tool of the servers' version");
    }
}

void DqliteBackend::checkWritable(const std::string& what) const {
    if (options_.reader) {
        throw Error(ErrorTag::OperationFailed, what + ": " + describe() + " was opened to read only");
    }
}

void DqliteBackend::migrate() {
    // Always one write transaction, even with nothing to migrate: it takes the database's write
    // lock, so it runs after whatever a writer that went away (a killed server, a deposed leader)
    // still had in flight, and what this store then loads includes that writer's last commit if
    // it was made. Loading first could miss a commit that lands a moment later.
    const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
    for (;;) {
        try {
            cluster_.run(
                [&](Connection& c) {
                    const auto db = c.open(options_.database);
                    // Run again whole when the answer to COMMIT was lost: the version it reads
                    // first tells whether the migration landed.
                    c.exec(db, "BEGIN");
                    try {
                        c.exec(db, kCreateMeta);
                        const int version =
                            schemaVersionOf(c.query(db, kMetaSql, {std::string("schema_version")}));
                        if (version > kSchemaVersion) {
                            throw Error(ErrorTag::OperationFailed,
                                        describe() + " was written by a newer ncstore (schema version " +
                                            std::to_string(version) + ", this build knows " +
                                            std::to_string(kSchemaVersion) + ")");
                        }
                        for (int step = version + 1; step <= kSchemaVersion; ++step) {
                            for (const std::string& sql : schemaStep(step)) {
                                c.exec(db, sql);
                            }
                        }
                        c.exec(db, "INSERT OR REPLACE INTO meta(key, value) VALUES('schema_version', ?)",
                               {std::to_string(kSchemaVersion)});
                        c.exec(db, "COMMIT");
                    } catch (...) {
                        rollbackQuietly(c, db);
                        throw;
                    }
                },
                left(deadline), true);
            return;
        } catch (const dqlite::Error& e) {
            // Another writer's transaction still holds the lock (SQLITE_BUSY and its extended codes).
            if (e.kind() != Kind::Server || (e.code() & 0xff) != kSqliteBusy ||
                std::chrono::steady_clock::now() >= deadline) {
                throw;
            }
            std::this_thread::sleep_for(milliseconds{10});
        }
    }
}

dqlite::Rows DqliteBackend::query(const std::string& sql, const std::vector<Value>& params) {
    return cluster_.run(
        [&](Connection& c) {
            const auto db = c.open(options_.database);
            return c.query(db, sql, params);
        },
        options_.timeout, true);
}

dqlite::Rows DqliteBackend::queryApart(const std::string& sql, const std::vector<Value>& params) const {
    dqlite::Cluster apart(options_.nodes, clusterOptions(options_));
    return apart.run(
        [&](Connection& c) {
            const auto db = c.open(options_.database);
            return c.query(db, sql, params);
        },
        options_.timeout, true);
}

void DqliteBackend::load(
    Datastore ds, const std::function<void(const std::string&, const std::string&, const std::string&)>& fn) {
    dqlite::Rows rows;
    try {
        rows = query(kLoadRecordsSql, {std::int64_t{static_cast<int>(ds)}});
    } catch (const dqlite::Error& e) {
        fail("cannot read the records of", e);
    }
    for (const auto& row : rows.rows) {
        fn(bytesOf(row.at(0)), bytesOf(row.at(1)), bytesOf(row.at(2)));
    }
}

void DqliteBackend::loadPatches(Datastore ds,
                                const std::function<void(const std::string&, const std::string&)>& fn) {
    dqlite::Rows rows;
    try {
        rows = query(kLoadPatchesSql, {std::int64_t{static_cast<int>(ds)}});
    } catch (const dqlite::Error& e) {
        fail("cannot read the patches of", e);
    }
    for (const auto& row : rows.rows) {
        fn(bytesOf(row.at(0)), bytesOf(row.at(1)));
    }
}

std::string DqliteBackend::meta(const std::string& key) {
    try {
        const auto rows = query(kMetaSql, {key});
        return rows.rows.empty() ? std::string() : bytesOf(rows.rows[0].at(0));
    } catch (const dqlite::Error& e) {
        fail("cannot read meta " + key + " of", e);
    }
}

void DqliteBackend::setMeta(const std::string& key, const std::string& value) {
    checkWritable("setting " + key);
    try {
        // Idempotent: run again when the answer was lost.
        cluster_.run(
            [&](Connection& c) {
                const auto db = c.open(options_.database);
                c.exec(db, kSetMetaSql, {key, value});
            },
            options_.timeout, true);
    } catch (const dqlite::Error& e) {
        fail("cannot write meta " + key + " of", e);
    }
}

std::pair<std::uint64_t, std::uint64_t> DqliteBackend::apply(const std::vector<const RecordSet*>& batch) {
    checkWritable("a commit");
    std::uint64_t target = 0;
    for (const RecordSet* cs : batch) {
        target = std::max(target, cs->commitId);
    }
    const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
    for (;;) {
        std::optional<BatchResult> written;
        Connection* conn = nullptr;
        std::uint32_t db = 0;
        try {
            conn = &cluster_.leader(left(deadline));
            db = conn->open(options_.database);
            Rows rows(*conn, db);
            const auto begun = std::chrono::steady_clock::now();
            written = writeBatch(batch, patches_, lastCommitId_, rows);
            const auto built = std::chrono::steady_clock::now();
            rows.commit();
            NCS_LOG(debug) << "datastore: " << batch.size() << " change sets: SQL made in "
                           << (built - begun) / std::chrono::microseconds(1)
                           << " us, executed through Raft in "
                           << (std::chrono::steady_clock::now() - built) / std::chrono::microseconds(1)
                           << " us (" << rows.sentBytes() << " bytes sent)";
            patches_ = written->patches;
            lastCommitId_ = written->lastCommitId;
            return {written->written, written->deleted};
        } catch (const dqlite::Error& e) {
            const bool answered = e.kind() == Kind::Server || e.kind() == Kind::NotLeader;
            if (!written || answered) {
                // Refused, or lost before COMMIT: nothing of the batch committed.
                if (conn && e.kind() == Kind::Server) {
                    rollbackQuietly(*conn, db);
                } else {
                    cluster_.invalidate();
                }
                const bool busy = e.kind() == Kind::Server && (e.code() & 0xff) == kSqliteBusy;
                const bool again = e.kind() != Kind::Server || busy;
                if (!again || std::chrono::steady_clock::now() >= deadline) {
                    fail("cannot commit to", e);
                }
                NCS_LOG(warning) << "datastore: commit to " << describe() << " not made (" << e.what()
                                 << "): running it again";
                if (busy) {
                    std::this_thread::sleep_for(milliseconds{10});
                }
                continue;
            }
            // COMMIT sent, no answer: ask the leader in office (promise in dqlitebackend.hpp).
            cluster_.invalidate();
            if (target == 0) {
                fail("a commit without commit id got no answer (" + std::string(e.what()) +
                         "), its outcome cannot be told: the store reloads from",
                     e);
            }
            std::uint64_t found = 0;
            try {
                found = integerOf(query(kLastCommitIdSql, {}).rows.at(0).at(0));
            } catch (const dqlite::Error& again) {
                fail("a commit got no answer (" + std::string(e.what()) +
                         ") and its outcome could not be read back from",
                     again);
            }
            if (found >= target) {
                NCS_LOG(warning) << "datastore: commit " << target << " got no answer (" << e.what()
                                 << ") but is in " << describe();
                patches_ = written->patches;
                lastCommitId_ = found;
                return {written->written, written->deleted};
            }
            NCS_LOG(warning) << "datastore: commit " << target << " got no answer (" << e.what()
                             << ") and is not in " << describe() << " (last commit " << found
                             << "): running it again";
            if (std::chrono::steady_clock::now() >= deadline) {
                fail("commit " + std::to_string(target) + " is not in", e);
            }
        }
    }
}

void DqliteBackend::readJournal(const std::string& name, std::uint64_t after,
                                const std::function<void(const JournalRow&)>& fn) const {
    // In pages, each a request of its own: a node serves one request at a time, and a journal
    // of tens of MB read in one went out as one long reply that held up every commit behind it
    // (the notification index of a new leader did that to its first commits).
    dqlite::Cluster apart(options_.nodes, clusterOptions(options_));
    std::int64_t commitId = static_cast<std::int64_t>(after);
    std::int64_t seq = std::numeric_limits<std::int64_t>::max(); // past every row of `after`
    for (;;) {
        dqlite::Rows page;
        try {
            page = apart.run(
                [&](Connection& c) {
                    return c.query(c.open(options_.database), kReadJournalPageSql,
                                   {name, commitId, commitId, seq, std::int64_t{kJournalPageRows}});
                },
                options_.timeout, true);
        } catch (const dqlite::Error& e) {
            fail("cannot read journal " + name + " of", e);
        }
        for (const auto& row : page.rows) {
            fn(JournalRow{integerOf(row.at(0)), bytesOf(row.at(2))});
        }
        if (page.rows.size() < static_cast<std::size_t>(kJournalPageRows)) {
            return;
        }
        commitId = static_cast<std::int64_t>(integerOf(page.rows.back().at(0)));
        seq = static_cast<std::int64_t>(integerOf(page.rows.back().at(1)));
    }
}

std::string DqliteBackend::integrityCheck() const {
    try {
        std::string result;
        for (const auto& row : queryApart("PRAGMA integrity_check", {}).rows) {
            result += (result.empty() ? "" : "\n") + bytesOf(row.at(0));
        }
        return result;
    } catch (const dqlite::Error& e) {
        return "cannot check " + describe() + ": " + e.what();
    }
}

void DqliteBackend::backup(const std::filesystem::path& dest) const {
    if (std::filesystem::exists(dest)) {
        throw Error(ErrorTag::OperationFailed, "backup of " + describe() + ": " + dest.string() + " exists");
    }
    // One read transaction: the four tables as of one commit.
    dqlite::Rows meta;
    dqlite::Rows records;
    dqlite::Rows patches;
    dqlite::Rows journal;
    try {
        dqlite::Cluster apart(options_.nodes, clusterOptions(options_));
        apart.run(
            [&](Connection& c) {
                const auto db = c.open(options_.database);
                c.exec(db, "BEGIN");
                try {
                    meta = c.query(db, "SELECT key, value FROM meta", {});
                    records = c.query(db, "SELECT ds, path, parent, data FROM records ORDER BY id", {});
                    patches = c.query(db, "SELECT ds, path, value FROM patches ORDER BY id", {});
                    journal = c.query(
                        db, "SELECT name, commit_id, data FROM journal ORDER BY commit_id, name, seq", {});
                } catch (...) {
                    rollbackQuietly(c, db);
                    throw;
                }
                c.exec(db, "COMMIT");
            },
            options_.timeout, true);
    } catch (const dqlite::Error& e) {
        fail("backup: cannot read", e);
    }
    // Written as the file backend writes: records and patches per datastore in their order, the
    // journal per commit, then the meta rows as they are (schema version, commit id, modules).
    std::map<std::uint64_t, RecordSet> sets;
    for (const auto& row : records.rows) {
        auto& set = sets[integerOf(row.at(0))];
        set.ds = static_cast<Datastore>(integerOf(row.at(0)));
        set.ops.push_back(
            {RecordOp::Kind::Upsert, bytesOf(row.at(1)), bytesOf(row.at(2)), bytesOf(row.at(3))});
    }
    for (const auto& row : patches.rows) {
        auto& set = sets[integerOf(row.at(0))];
        set.ds = static_cast<Datastore>(integerOf(row.at(0)));
        set.ops.push_back({RecordOp::Kind::Patch, bytesOf(row.at(1)), {}, bytesOf(row.at(2))});
    }
    std::map<std::uint64_t, RecordSet> commits;
    for (const auto& row : journal.rows) {
        auto& set = commits[integerOf(row.at(1))];
        set.ds = Datastore::Running;
        set.commitId = integerOf(row.at(1));
        set.journal.emplace_back(bytesOf(row.at(0)), bytesOf(row.at(2)));
    }
    std::vector<const RecordSet*> batch;
    for (const auto& [ds, set] : sets) {
        batch.push_back(&set);
    }
    for (const auto& [id, set] : commits) {
        batch.push_back(&set);
    }
    SqliteBackend file(dest, Durability::Full);
    file.apply(batch);
    for (const auto& row : meta.rows) {
        file.setMeta(bytesOf(row.at(0)), bytesOf(row.at(1)));
    }
}

} // namespace ncstore::ds::detail
