#include "backend.hpp"

#include "dqlitebackend.hpp"
#include "sqlitebackend.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>

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

const std::vector<std::string>& schemaStep(int step) {
    static const std::vector<std::vector<std::string>> steps = {
        // Version 1: one row per record; the rowid keeps insertion order, which is the order
        // libyang keeps for ordered-by-system list entries, so a reload prints the same.
        {"CREATE TABLE IF NOT EXISTS records("
         " id INTEGER PRIMARY KEY,"
         " ds INTEGER NOT NULL,"
         " path TEXT NOT NULL,"
         " parent TEXT NOT NULL,"
         " data BLOB NOT NULL,"
         " UNIQUE(ds, path))"},
        // Version 2: a leaf merge writes a patch row (leaf path, value) instead of rewriting the
        // record; rewriting or deleting the record drops the patches below it.
        {"CREATE TABLE IF NOT EXISTS patches("
         " id INTEGER PRIMARY KEY,"
         " ds INTEGER NOT NULL,"
         " path TEXT NOT NULL,"
         " value TEXT NOT NULL,"
         " UNIQUE(ds, path))"},
        // Version 3: features' journals (notification replay, commit history), written in the
        // same transaction as the change they describe.
        {"CREATE TABLE IF NOT EXISTS journal("
         " name TEXT NOT NULL,"
         " commit_id INTEGER NOT NULL,"
         " seq INTEGER NOT NULL,"
         " data BLOB NOT NULL,"
         " PRIMARY KEY(name, commit_id, seq)) WITHOUT ROWID"},
        // Version 4: the journal's rows in a rowid table, their key in an index. WITHOUT ROWID
        // kept each whole row in the key's b-tree, and SQLite reads a cell's whole payload to
        // compare keys: once a 14 MB notification row was in the path, each insert of a
        // 300-byte row read it again (~18 ms per commit, measured after B7's 65536 points).
        {"CREATE TABLE journal_v4("
         " id INTEGER PRIMARY KEY,"
         " name TEXT NOT NULL,"
         " commit_id INTEGER NOT NULL,"
         " seq INTEGER NOT NULL,"
         " data BLOB NOT NULL)",
         "INSERT INTO journal_v4(name, commit_id, seq, data)"
         " SELECT name, commit_id, seq, data FROM journal ORDER BY commit_id, name, seq",
         "DROP TABLE journal", "ALTER TABLE journal_v4 RENAME TO journal",
         "CREATE UNIQUE INDEX journal_key ON journal(name, commit_id, seq)"},
        // Later versions: one more entry here, and kSchemaVersion + 1.
    };
    static_assert(kSchemaVersion == 4, "one schema step per version");
    if (step < 1 || step > kSchemaVersion) {
        throw std::out_of_range("no schema step " + std::to_string(step));
    }
    return steps[static_cast<std::size_t>(step - 1)];
}

BatchResult writeBatch(const std::vector<const RecordSet*>& batch, std::uint64_t patches,
                       std::uint64_t lastCommitId, RowWriter& w) {
    BatchResult r;
    for (const RecordSet* cs : batch) {
        const int ds = static_cast<int>(cs->ds);
        for (const RecordOp& op : cs->ops) {
            switch (op.kind) {
            case RecordOp::Kind::Upsert:
                if (patches > 0) {
                    patches -= std::min(patches, w.deletePatches(ds, op.path));
                }
                w.upsertRecord(ds, op.path, op.parent, op.data);
                ++r.written;
                break;
            case RecordOp::Kind::DeleteRange:
                r.deleted += w.deleteRecords(ds, op.path);
                if (patches > 0) {
                    patches -= std::min(patches, w.deletePatches(ds, op.path));
                }
                break;
            case RecordOp::Kind::DeleteAll:
                r.deleted += w.deleteAllRecords(ds);
                patches -= std::min(patches, w.deleteAllPatches(ds));
                break;
            case RecordOp::Kind::Patch:
                w.upsertPatch(ds, op.path, op.data);
                ++patches; // counts a replaced patch twice: only ever too high, never too low
                ++r.written;
                break;
            }
        }
    }
    std::uint64_t commitId = 0;
    bool journalTells = false; // the batch's newest journal row carries its last commit id
    bool trimmed = false;
    // A trim keeps the newest rows, so it reaches none of the rows this batch writes: then all
    // the rows go first (one run, one statement for a backend that sends SQL text) and each
    // journal is trimmed once, through the highest point asked. Should a trim reach a row of the
    // batch, the batch keeps its order, each change set's rows then its trims.
    std::uint64_t firstRow = std::numeric_limits<std::uint64_t>::max();
    std::uint64_t highestTrim = 0;
    for (const RecordSet* cs : batch) {
        if (!cs->journal.empty()) {
            firstRow = std::min(firstRow, cs->commitId);
        }
        for (const auto& trim : cs->trims) {
            highestTrim = std::max(highestTrim, trim.second);
        }
    }
    const bool grouped = highestTrim < firstRow;
    std::map<std::string, std::uint64_t> trims; // grouped: journal name -> through
    for (const RecordSet* cs : batch) {
        if (cs->commitId >= commitId) {
            journalTells = !cs->journal.empty();
        }
        commitId = std::max(commitId, cs->commitId);
        trimmed = trimmed || !cs->trims.empty();
        int seq = 0;
        for (const auto& [name, data] : cs->journal) {
            w.journalRow(name, cs->commitId, seq++, data);
        }
        for (const auto& [name, through] : cs->trims) {
            if (grouped) {
                std::uint64_t& highest = trims[name];
                highest = std::max(highest, through);
            } else {
                w.trimJournal(name, through);
            }
        }
    }
    for (const auto& [name, through] : trims) {
        w.trimJournal(name, through);
    }
    // A trim may delete the rows that held the newest commit id, so a transaction that trims
    // says it in the meta row, as one whose last write has no journal row must.
    r.lastCommitId = std::max(lastCommitId, commitId);
    if ((commitId > 0 && !journalTells) || (trimmed && r.lastCommitId > 0)) {
        w.setCommitId(r.lastCommitId);
    }
    // A leader check must replicate something: when the batch writes nothing else, it rewrites
    // its meta row.
    const auto writesNothing = [](const RecordSet* cs) {
        return cs->ops.empty() && cs->journal.empty() && cs->trims.empty() && cs->commitId == 0;
    };
    if (std::all_of(batch.begin(), batch.end(), writesNothing) &&
        std::any_of(batch.begin(), batch.end(), [](const RecordSet* cs) { return cs->leaderCheck; })) {
        // Nanoseconds since the epoch and a counter: never the value the row already holds.
        static std::atomic<std::uint64_t> checks{0};
        const auto now = std::chrono::system_clock::now().time_since_epoch();
        w.setLeaderCheck(std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(now).count()) +
                         "." + std::to_string(++checks));
    }
    r.patches = patches;
    return r;
}

std::unique_ptr<Backend> openBackend(const StoreOptions& options) {
    if (options.dqlite) {
        return std::make_unique<DqliteBackend>(*options.dqlite);
    }
    return std::make_unique<SqliteBackend>(options.file, options.durability, options.maxWalBytes,
                                           options.cacheBytes);
}

} // namespace ncstore::ds::detail
