// The datastore's records in a database of a dqlite cluster (Raft-replicated SQLite, issue 17),
// reached through our client of dqlite's wire protocol (ncstore/dqlite/client.hpp). Private to
// the datastore; backend.hpp says what every backend promises.
//
// Beyond the Backend contract:
//  - a batch is one explicit transaction on the leader (BEGIN, its row writes, COMMIT): one Raft
//    entry, durable once a majority of the voters has it;
//  - the leader is found among DqliteStoreOptions::nodes and again whenever it changes. A batch
//    the old leader refused or lost before COMMIT (nothing of it committed) is run again on the
//    new one, within the timeout;
//  - a batch whose COMMIT got no answer (leader killed or cut off, leadership lost) is resolved
//    by reading the last commit id back from the leader then in office, which has every entry
//    that can still commit (dqlite runs a barrier before a new leader serves): at least the
//    batch's own commit id means committed (there is one writer per database), less means
//    never, and it is run again. A batch with no commit id cannot be told: it fails.
//  - opening takes the database's write lock once before loading (a transaction that writes the
//    schema version): a commit that a writer which went away still had in flight lands before
//    the load, never after it (the kill -9 crash test found that);
//  - backup() and integrityCheck() read through the leader.
#pragma once

#include "backend.hpp"

#include "ncstore/dqlite/client.hpp"

namespace ncstore::ds::detail {

class DqliteBackend final : public Backend {
public:
    /// Finds the leader, opens the database, creates or migrates the schema. Throws
    /// Error(OperationFailed) naming the nodes and what they answered.
    explicit DqliteBackend(DqliteStoreOptions options);

    std::string describe() const override;
    std::string recoveryHint() const override { return ""; }
    void load(Datastore ds, const std::function<void(const std::string& path, const std::string& parent,
                                                     const std::string& data)>& fn) override;
    void
    loadPatches(Datastore ds,
                const std::function<void(const std::string& path, const std::string& value)>& fn) override;
    std::string meta(const std::string& key) override;
    void setMeta(const std::string& key, const std::string& value) override;
    bool writable() const override { return !options_.reader; }
    std::uint64_t lastCommitId() override { return lastCommitId_; }
    std::pair<std::uint64_t, std::uint64_t> apply(const std::vector<const RecordSet*>& batch) override;
    /// Through a connection of its own, 500 rows per request. Not one snapshot: a trim that lands
    /// between two pages can skip rows the first page did not reach (each row given was
    /// committed, and they come in commit order).
    void readJournal(const std::string& name, std::uint64_t after,
                     const std::function<void(const JournalRow&)>& fn) const override;
    /// Copies every table into a new SQLite file `dest` (which the file backend opens).
    void backup(const std::filesystem::path& dest) const override;
    std::string integrityCheck() const override;

private:
    /// The rows of `sql` on the leader (a read: retried on a new leader within the timeout).
    dqlite::Rows query(const std::string& sql, const std::vector<dqlite::Value>& params);
    /// A read through a cluster connection of its own (any thread).
    dqlite::Rows queryApart(const std::string& sql, const std::vector<dqlite::Value>& params) const;
    void migrate();
    /// A reader's open: the schema must be the current one (read, no transaction).
    void checkSchema();
    /// Throws when the store was opened as a reader.
    void checkWritable(const std::string& what) const;
    [[noreturn]] void fail(const std::string& what, const std::exception& e) const;

    DqliteStoreOptions options_;
    dqlite::Cluster cluster_; // the committing thread's
    std::uint64_t patches_ = 0;
    std::uint64_t lastCommitId_ = 0;
};

} // namespace ncstore::ds::detail
