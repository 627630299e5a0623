// ncstore datastore: the running, startup and candidate configuration trees, kept in memory as
// libyang trees and made durable in SQLite with group commits.
//
// The rules, numbered so that code and reviews can cite them ("rule 3"):
//
//  1. Locks, always taken in this order: the store's tree lock (phase-fair shared/exclusive),
//     then the sequence lock, then the writer's queue lock, then the publisher's. A slot in the
//     writer's queue (rule 8) is taken before the tree lock, never under it. No callback (a read
//     function, a listener, a journal hook, an access policy) may call the Store.
//  2. The tree lock guards the trees, the candidate and the datastore locks; the sequence lock
//     the commit ids and the order of the writes. A write checks the datastore locks (RFC 6241,
//     kept here so that the check and the write are one critical section), applies and validates
//     the change, builds its change sets, asks the access policy and the journals, takes the next
//     commit id and is queued, all in ONE exclusive critical section (holding the sequence lock
//     from asking the journals to queuing). Reads hold the tree lock shared, many at once, and
//     never touch SQLite. A journal row of its own (appendJournal: an event such as a session's start)
//     takes only the sequence lock: it never waits for a reader.
//  3. Visible: a write is visible in memory once its critical section ends, before it is durable
//     (so that many sessions' writes share one fsync). But a read only returns durable state:
//     read() and snapshot() wait, after releasing the lock, until every write they saw is
//     durable, and run again on reloaded memory if one of them failed. No caller ever gets data
//     that then disappears; a reader waits at most one group commit while writes are in flight.
//     On a dqlite cluster a read also returns only once this node is known to have led the
//     cluster after the read began: a commit it sent since, or within the read lease before,
//     reached a majority; else the read queues a write of its own (one Raft round, shared by
//     the reads waiting at that moment). A node cut off from its majority answers no read from
//     memory once its lease ran out, while a new leader may already have changed the data.
//  4. Durable: one writer at a time (the thread of the write at the head of the queue, or the
//     writer thread) puts every change set queued at that moment (rule 8) into ONE SQLite
//     transaction, with their journal rows and the last commit id; each write returns once
//     its transaction is durable at the configured Durability. Commit ids increase in the order
//     the writes were applied, which is the order they are queued and committed in.
//  5. Published: then each write's logical change set (ncstore/changes.hpp) goes to the
//     listeners, in commit order, on the publisher thread. A commit never waits for a listener.
//  6. A write that fails before it is queued (bad edit, invalid result, in-use, access denied, a
//     journal hook that throws) puts memory back: nothing of it reached readers, listeners or
//     the disk. It throws Error.
//  7. A transaction that fails (disk full, I/O error) is rolled back; its writes and every write
//     queued after them fail with Error(OperationFailed); memory is reloaded from the file under
//     the exclusive lock (readers that saw those writes read again, rule 3), and a candidate
//     copied from running while they were in it is reset. The next write works as before. If
//     memory cannot be reloaded, the store is out of service: every call throws until it is
//     opened again.
//  8. Bounded: a transaction carries at most maxBatchChangeSets change sets and maxBatchBytes;
//     the WAL file holds about maxWalBytes at most (the writer restarts it between transactions);
//     at most maxQueuedWrites writes are applied but not yet durable, and at most maxQueuedBytes
//     of change sets wait for the writer: a further write waits (back-pressure) before it takes
//     any lock, readers are not held up. At most maxUnpublished change sets wait for listeners:
//     a slower listener loses the oldest and is told (ChangeListener::lost). A waiting write
//     waits only for the reads in progress when it came; a read only for the writes waiting
//     when it came.
//  9. Candidate lives in memory only: its writes are never queued, have no commit id and are not
//     published (the access policy still sees them); a commit is a write of running.
// 10. Verified: a write of running that a registered Verifier (ncstore/changes.hpp) concerns
//     itself with is verified before anything of it is visible, with NO lock of the store held
//     while the verifiers think: its change set is captured and memory put back, the verifiers
//     accept or refuse it outside the lock, and it is applied again only if running was not
//     written meanwhile (else started over, Store::kVerifyRounds times at most). Verified writes
//     run one at a time; readers and the writes no verifier concerns never wait for a verifier.
//
// What notifications and NACM get from this: a listener (RFC 6470 config-change, YANG-Push)
// hears only of durable changes, in commit order, so it never announces a change that then
// fails, and a receiver that reads the datastore after a notification sees that state or a
// later one; read() returns the commit id of what it saw, so a receiver can start from a read
// and apply exactly the change sets with higher ids. The access policy (NACM write access) sees
// a write's change set before anything of it is visible or durable, and a refusal leaves
// nothing behind. The commit history and the notification replay log are journals: their rows
// are in the same transaction as the change, no more and no less durable.
//
// The datastore knows NETCONF edit semantics (operations, default-operation, insert) because
// they define what a change is, but it never sees NETCONF messages: callers pass libyang trees.
#pragma once

#include "ncstore/errortag.hpp"
#include "ncstore/yang.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace ncstore::ds {

enum class Datastore { Running, Startup, Candidate };

struct ChangeSet;
struct JournalRow;
class ChangeListener;
class AccessPolicy;
class Verifier;
/// What a journal hook (ncstore/changes.hpp) adds to the write it is called for, in the same
/// SQLite transaction: rows to persist and, for the journal's retention, the commit id through
/// which its older rows go (0: none). Riding the write, a trim costs no transaction of its own.
struct JournalWrite {
    JournalWrite() = default;
    // Implicit: a hook that only adds rows returns them as they are.
    JournalWrite(std::vector<std::string> r) : rows(std::move(r)) {} // NOLINT(google-explicit-constructor)
    std::vector<std::string> rows;
    std::uint64_t trimThrough = 0;
};
using JournalHook = std::function<JournalWrite(const ChangeSet& changes)>;
/// "running", "startup", "candidate".
const char* toString(Datastore ds);

/// What an acknowledged write survives.
enum class Durability {
    Full,   ///< SQLite WAL + synchronous=FULL: survives power loss as far as fsync promises.
    Normal, ///< WAL + synchronous=NORMAL: survives a crash of the process; the last commits may
            ///< roll back on power loss (the file stays consistent).
    Off,    ///< UNSAFE, for tests: no fsync at all; a crash of the OS may corrupt the file.
};
Durability parseDurability(const std::string& text); ///< "full" | "normal" | "off"
const char* toString(Durability d);

/// Classification of a failure: the RFC 6241 error-tag the NETCONF layer sends for it (one enum
/// and one spelling for both, ncstore/errortag.hpp).
using ncstore::ErrorTag;
using ncstore::toString;

/// A failed datastore operation. `path` is the data path of the offending node when known
/// (usable as NETCONF error-path); `appTag` is an error-app-tag when one applies (e.g.
/// "must-violation", "instance-required", "data-not-unique", "too-many-elements"); `info` is
/// error-info content (XML elements) when a verifier gave some (ncstore/changes.hpp).
class Error : public std::runtime_error {
public:
    Error(ErrorTag tag, const std::string& message, std::string path = {}, std::string appTag = {},
          std::string info = {})
        : std::runtime_error(message), tag_(tag), path_(std::move(path)), appTag_(std::move(appTag)),
          info_(std::move(info)) {}
    ErrorTag tag() const noexcept { return tag_; }
    const std::string& path() const noexcept { return path_; }
    const std::string& appTag() const noexcept { return appTag_; }
    const std::string& info() const noexcept { return info_; }

private:
    ErrorTag tag_;
    std::string path_;
    std::string appTag_;
    std::string info_;
};

/// A write computed from what an earlier read returned, refused because the datastore was written
/// since (EditOptions::unchangedSince): nothing changed; read again and recompute.
class StaleRead : public Error {
public:
    explicit StaleRead(const std::string& message) : Error(ErrorTag::OperationFailed, message) {}
};

enum class DefaultOperation { Merge, Replace, None };
enum class TestOption { TestThenSet, Set, TestOnly };
enum class ErrorOption {
    RollbackOnError, ///< any error: nothing changes
    StopOnError,     ///< the edits before the failing node stay, if the result validates
};

struct EditOptions {
    DefaultOperation defaultOperation = DefaultOperation::Merge;
    TestOption testOption = TestOption::TestThenSet;
    ErrorOption errorOption = ErrorOption::RollbackOnError;
    /// The commit id a read of running returned (Store::read): the edit applies only if running
    /// has not been written since, else throws StaleRead. For writes computed from a read.
    std::optional<std::uint64_t> unchangedSince;
};

/// Who writes; every write takes one. The datastore locks are checked against `session` in the
/// same critical section as the write itself.
struct WriteContext {
    std::uint32_t session = 0; ///< NETCONF session id; 0 is the server itself, which no lock blocks
    std::string user;          ///< the user behind the session
    /// Checks the write's change set before anything of it is visible (ncstore/changes.hpp);
    /// null: every write is allowed. Must outlive the call.
    const AccessPolicy* policy = nullptr;
    std::string host; ///< where the session comes from (the client's address), if known
    /// What the writer says the write is for (a commit comment, the commit history's): passed
    /// on in the change set untouched; "" for none.
    std::string comment;
};

/// RFC 6241 7.5 <lock>.
enum class LockResult {
    Granted,
    HeldByOther,       ///< `holder` says by whom (the caller itself included: RFC 6241 says lock-denied)
    CandidateModified, ///< candidate holds changes made by another session and not committed
};
struct LockOutcome {
    LockResult result = LockResult::Granted;
    std::uint32_t holder = 0;
};
/// RFC 6241 7.6 <unlock>.
enum class UnlockResult { Released, NotLocked, HeldByOther };
struct LockInfo {
    Datastore ds;
    std::uint32_t session;
    std::chrono::system_clock::time_point since;
};

/// Where the time of one write went (microseconds), for server-side statistics.
struct WriteTiming {
    std::uint64_t lockWaitUs = 0;   ///< waiting for room in the commit queue and for the store's lock
    std::uint64_t applyUs = 0;      ///< applying the edit to the in-memory tree
    std::uint64_t validateUs = 0;   ///< YANG validation of the result
    std::uint64_t serializeUs = 0;  ///< building the change set
    std::uint64_t commitWaitUs = 0; ///< waiting for the durable group commit
    std::uint64_t changedRecords = 0;
    /// The commit id the write got (ChangeSet::commitId); 0 when nothing was persisted (candidate,
    /// test-only, an edit that changed nothing).
    std::uint64_t commitId = 0;
    /// Validation read the whole datastore, not just what the edit touched (docs/datastore.md
    /// says which edits need that).
    bool wholeTreeValidation = false;
};

/// A database of a dqlite cluster (Raft-replicated SQLite, issue 17) in place of the local file.
struct DqliteStoreOptions {
    /// "a.b.c.d:port" of the cluster's nodes (IPv4, as dqlite 1.11 serves): the leader is found
    /// among them, and again among them whenever it changes.
    std::vector<std::string> nodes;
    std::string database = "ncstore.db";
    /// Bounds finding the leader and each request; a commit may take up to twice this when the
    /// leader changes under it (finding out whether it committed).
    std::chrono::milliseconds timeout{5000};
    /// A reader beside the cluster's servers (ncstore-db): opening takes no write lock (a
    /// writer's open does, which makes the servers' commits of that moment wait), the schema
    /// must be the current one, and every write is refused.
    bool reader = false;
    /// How long after this store sent a commit that a majority then acknowledged it may still
    /// answer reads from memory (Store::read): at most half the Raft election timeout, within
    /// which no other node can be elected. A read that no such commit covers first makes a
    /// write of its own reach a majority. Zero: every read that began before the last such
    /// commit was sent does that.
    std::chrono::milliseconds readLease{0};
};

struct StoreOptions {
    std::filesystem::path file; ///< the SQLite database; created when missing
    /// When set, the data lives in this dqlite database instead of `file` (durability, the WAL
    /// and cache options are then dqlite's business: a commit is durable on a Raft majority).
    std::optional<DqliteStoreOptions> dqlite;
    Durability durability = Durability::Full;
    std::size_t maxBatchChangeSets = 4096;          ///< change sets per SQLite transaction
    std::size_t maxBatchBytes = 256u * 1024 * 1024; ///< bytes per SQLite transaction
    /// Back-pressure: a write to running or startup (or a commit) waits, before it takes any
    /// lock, while this many writes are applied but not yet durable...
    std::size_t maxQueuedWrites = 1024;
    /// ... or while the change sets waiting for the writer hold this many bytes.
    std::size_t maxQueuedBytes = 256u * 1024 * 1024;
    /// The WAL file is bounded by about this much: once a commit leaves more in it, the writer
    /// checkpoints it whole and starts it again from its beginning (commits wait meanwhile; most
    /// of it was copied back already, off the commit path), and a restarted WAL is truncated to it.
    std::uint64_t maxWalBytes = 64u * 1024 * 1024;
    /// SQLite's page cache, the file's pages the writer keeps in memory (reads never use it:
    /// they read the trees). It fills up to this as the file is written and read, the journals'
    /// rows included, and stays there: part of the server's steady memory, not a leak.
    std::uint64_t cacheBytes = 16u * 1024 * 1024;
    /// A listener that falls further behind loses change sets (ChangeListener::lost): commits
    /// never wait for listeners, so this bounds the memory they hold.
    std::size_t maxUnpublished = 65536;
    /// Validate the whole stored data at open even when it was written under the same modules
    /// (otherwise only a changed module set triggers whole-tree validation at open).
    bool verifyOnOpen = false;
};

/// Counters since the store was opened.
struct Stats {
    std::uint64_t writes = 0;         ///< acknowledged writes (change sets)
    std::uint64_t transactions = 0;   ///< SQLite transactions that carried them
    std::uint64_t recordsWritten = 0; ///< records upserted
    std::uint64_t recordsDeleted = 0; ///< records deleted (range deletes count 1)
    std::uint64_t bytesWritten = 0;   ///< payload bytes handed to SQLite
    std::uint64_t failedWrites = 0;   ///< writes refused or failed
    std::uint64_t maxBatch = 0;       ///< largest number of change sets in one transaction
    std::uint64_t queueFullWaits = 0; ///< writes that waited for room in the writer queue
    std::uint64_t changeSetsLost = 0; ///< change sets dropped for slow listeners
};

/// Online backup of the store file `file` to `dest` through SQLite's backup API: consistent while
/// a server writes to it. Needs no models. Throws Error.
void backupStore(const std::filesystem::path& file, const std::filesystem::path& dest);
/// Backup of the database of a dqlite cluster (read as a reader: no write lock) to the SQLite file
/// `dest`, which the file backend opens. Needs no models: the records are copied, not loaded.
/// Throws Error.
void backupStore(const DqliteStoreOptions& cluster, const std::filesystem::path& dest);

class StoreImpl;

/// The three datastores of one server. Thread-safe: any number of threads may call any method.
class Store {
public:
    /// Opens the store at options.file, creating it if missing, and loads running and startup.
    /// `ctx` must hold every module whose data is stored and outlive the Store. Throws Error
    /// (OperationFailed) on a corrupt or unreadable file, naming the file and the newest backup
    /// found beside it; never starts empty over existing data.
    static std::unique_ptr<Store> open(const ly_ctx* ctx, const StoreOptions& options);
    ~Store(); ///< finishes every pending commit, then closes the file

    Store(const Store&) = delete;
    Store& operator=(const Store&) = delete;

    /// Runs `fn` on the datastore's current tree (nullptr when empty) while holding a shared
    /// lock. The tree includes default nodes (flag LYD_DEFAULT). Pointers must not escape `fn`;
    /// `fn` must not call the Store. Returns once everything `fn` saw is durable: when a write
    /// it saw fails instead, `fn` runs again on the reloaded data (so `fn` must replace, not
    /// accumulate, its result). Returns the commit id of the last write `fn` saw.
    /// Other readers run `fn`s on the same tree at the same time, so `fn` must not change it,
    /// and some libyang lookups do for a moment: lyd_find_sibling_val without a key or value,
    /// and XPath or lyd_find_path, which use it, swap the parent's hash-table callback (a keyed
    /// lookup beside them misses). The NETCONF filters (netconfd/filter) avoid or serialize them.
    /// On a dqlite cluster it also returns only once this node is known to have led the cluster
    /// at a moment after the read began (DqliteStoreOptions::readLease): a node that lost its
    /// majority throws Error (OperationFailed) instead of answering from memory what a new
    /// leader may already have changed.
    std::uint64_t read(Datastore ds, const std::function<void(const lyd_node* tree)>& fn) const;
    /// On a dqlite cluster: from now on no read is answered on the strength of the read lease
    /// until a commit begun after this call reached a majority (each read checks leadership
    /// meanwhile). For a server that learned its node may have stopped leading: a leadership
    /// transfer elects the new leader at once, sooner than the lease assumes.
    void revokeReadLease();

    /// A deep copy of the datastore's whole tree (nullptr when empty).
    Tree snapshot(Datastore ds) const;

    /// Applies a NETCONF edit: `edit` is a data forest whose nodes may carry the metadata
    /// ietf-netconf:operation (merge, replace, create, delete, remove) and yang:insert/key/value
    /// for ordered-by-user lists. The result is validated; then made durable (running,
    /// startup). With TestOnly nothing changes. Throws Error; nothing changes on an error
    /// (see ErrorOption for StopOnError); InUse when another session holds the lock of `ds`,
    /// AccessDenied when `who.policy` refuses the change.
    WriteTiming edit(const WriteContext& who, Datastore ds, const lyd_node* edit,
                     const EditOptions& options = {});

    /// Replaces the whole content of `ds` with `config` (nullptr: empty). Validated first.
    WriteTiming replace(const WriteContext& who, Datastore ds, const lyd_node* config);
    /// copy-config between datastores.
    WriteTiming copy(const WriteContext& who, Datastore from, Datastore to);
    /// Empties `ds` (delete-config).
    WriteTiming clear(const WriteContext& who, Datastore ds);

    /// Validates the content of `ds`; throws Error describing the first problem.
    void validate(Datastore ds) const;
    /// Validates a complete configuration that is not in any datastore.
    void validate(const lyd_node* config) const;

    /// Makes running equal to candidate (durable), then candidate tracks running again. Needs
    /// the locks of running and candidate to be free or `who`'s.
    WriteTiming commit(const WriteContext& who);
    /// Candidate := running. Needs the candidate lock to be free or `who`'s.
    void discardChanges(const WriteContext& who);
    /// True when candidate differs from running through edits since the last commit/discard.
    bool candidateModified() const;

    /// RFC 6241 7.5: candidate cannot be locked while it holds changes another session made.
    LockOutcome lock(Datastore ds, std::uint32_t session);
    /// RFC 6241 7.6; releasing the candidate lock discards candidate's uncommitted changes
    /// (RFC 6241 8.3.5.2).
    UnlockResult unlock(Datastore ds, std::uint32_t session);
    /// The session ended: its locks are released (candidate's changes discarded with its lock).
    /// Returns the datastores it held.
    std::vector<Datastore> releaseSession(std::uint32_t session);
    std::vector<LockInfo> locks() const;

    /// Registers `listener` (ncstore/changes.hpp): from now on every durable change set of
    /// running and startup with a commit id above the returned one reaches it, in commit order,
    /// on the store's publisher thread. The listener must outlive its registration.
    std::uint64_t addListener(ChangeListener& listener);
    /// After this returns the listener is not called again. Not from the listener's callback.
    void removeListener(ChangeListener& listener);

    /// Registers `verifier` (ncstore/changes.hpp, rule 10): from now on writes of running that it
    /// concerns itself with are verified by it; verifiers run in increasing `priority` (equal:
    /// the order they were added). It must outlive its registration.
    void addVerifier(Verifier& verifier, int priority = 0);
    /// After this returns the verifier is not called again; waits for a verification in
    /// progress. Not from the verifier's own callbacks.
    void removeVerifier(Verifier& verifier);
    /// How many times a verified write starts over because running was written meanwhile.
    static constexpr int kVerifyRounds = 8;

    /// Registers the journal `name` (ncstore/changes.hpp): from now on every write to running
    /// and startup with changes persists the rows `hook` returns for its change set, in the
    /// same SQLite transaction. Registering a name again replaces its hook.
    void addJournal(const std::string& name, JournalHook hook);
    /// The rows of journal `name` with commit ids above `after`, in commit order. Reads the
    /// file (not memory): sees only durable rows; callable from any thread.
    void readJournal(const std::string& name, std::uint64_t after,
                     const std::function<void(const JournalRow&)>& fn) const;
    /// Retention: deletes the rows of journal `name` up to commit id `through`, durably, in
    /// order with the writes, in a transaction of its own (a hook trims in the write's own:
    /// JournalWrite::trimThrough).
    void trimJournal(const std::string& name, std::uint64_t through);
    /// Persists `row` in journal `name` under a commit id of its own, without any data change
    /// (an event that belongs in a log beside the changes: a session that started, say): queued
    /// in order with the writes, then published to the listeners as a change set of origin
    /// Event carrying the row. Returns the commit id at once, without waiting for durability.
    std::uint64_t appendJournal(const std::string& name, std::string row);
    /// As appendJournal, but returns once the row is durable (rule 4); throws Error
    /// (OperationFailed) when its transaction failed, and then the row is not in the journal.
    std::uint64_t appendJournalDurable(const std::string& name, std::string row);

    /// Online backup to `dest` through SQLite's backup API (consistent while writes go on).
    void backup(const std::filesystem::path& dest) const;
    /// SQLite's integrity_check plus a check that every record parses: "ok" or the problems.
    std::string integrityCheck() const;

    Stats stats() const;
    const ly_ctx* context() const;

private:
    explicit Store(std::unique_ptr<StoreImpl> impl);
    std::unique_ptr<StoreImpl> impl_;
};

} // namespace ncstore::ds
