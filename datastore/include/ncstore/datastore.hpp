// ncstore datastore: the running, startup and candidate configuration trees, kept in memory as
// libyang trees and made durable in SQLite with group commits.
//
// Promises:
//  - Reads never touch SQLite: they see the in-memory tree under a shared lock, many at once.
//  - A write (edit, replace, copy, clear, commit) is all or nothing: it is applied, validated,
//    turned into a change set that follows the change (not the tree), and handed to one writer
//    thread that puts every change set pending at that moment into ONE SQLite transaction.
//    The call returns only once that transaction is durable at the configured Durability.
//  - A write that fails at any point (bad edit, invalid result, disk full) leaves memory and disk
//    as they were before it, and throws ncstore::ds::Error.
//  - The candidate datastore lives in memory only; running and startup are persisted.
//
// The datastore knows NETCONF edit semantics (operations, default-operation, insert) because
// they define what a change is, but it never sees NETCONF messages: callers pass libyang trees.
#pragma once

#include "ncstore/yang.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

namespace ncstore::ds {

enum class Datastore { Running, Startup, Candidate };
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

/// Classification of a failure, chosen so that the NETCONF layer can map it 1:1 to an
/// RFC 6241 error-tag.
enum class ErrorTag {
    InvalidValue,
    MissingElement,
    BadElement,
    UnknownElement,
    UnknownNamespace,
    MissingAttribute,
    BadAttribute,
    DataExists,
    DataMissing,
    OperationNotSupported,
    OperationFailed,
    InUse,
    ResourceDenied,
};
/// The RFC 6241 spelling: "invalid-value", "data-exists", ...
const char* toString(ErrorTag tag);

/// A failed datastore operation. `path` is the data path of the offending node when known
/// (usable as NETCONF error-path); `appTag` is an error-app-tag when one applies (e.g.
/// "must-violation", "instance-required", "data-not-unique", "too-many-elements").
class Error : public std::runtime_error {
public:
    Error(ErrorTag tag, const std::string& message, std::string path = {}, std::string appTag = {})
        : std::runtime_error(message), tag_(tag), path_(std::move(path)), appTag_(std::move(appTag)) {}
    ErrorTag tag() const noexcept { return tag_; }
    const std::string& path() const noexcept { return path_; }
    const std::string& appTag() const noexcept { return appTag_; }

private:
    ErrorTag tag_;
    std::string path_;
    std::string appTag_;
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
};

/// Where the time of one write went (microseconds), for server-side statistics.
struct WriteTiming {
    std::uint64_t applyUs = 0;      ///< applying the edit to the in-memory tree
    std::uint64_t validateUs = 0;   ///< YANG validation of the result
    std::uint64_t serializeUs = 0;  ///< building the change set
    std::uint64_t commitWaitUs = 0; ///< waiting for the durable group commit
    std::uint64_t changedRecords = 0;
    /// Validation read the whole datastore, not just what the edit touched (docs/datastore.md
    /// says which edits need that).
    bool wholeTreeValidation = false;
};

struct StoreOptions {
    std::filesystem::path file; ///< the SQLite database; created when missing
    Durability durability = Durability::Full;
    std::size_t maxBatchChangeSets = 4096;          ///< change sets per SQLite transaction
    std::size_t maxBatchBytes = 256u * 1024 * 1024; ///< bytes per SQLite transaction
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
};

/// Online backup of the store file `file` to `dest` through SQLite's backup API: consistent while
/// a server writes to it. Needs no models. Throws Error.
void backupStore(const std::filesystem::path& file, const std::filesystem::path& dest);

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
    /// lock. The tree includes default nodes (flag LYD_DEFAULT). Pointers must not escape `fn`.
    void read(Datastore ds, const std::function<void(const lyd_node* tree)>& fn) const;

    /// A deep copy of the datastore's whole tree (nullptr when empty).
    Tree snapshot(Datastore ds) const;

    /// Applies a NETCONF edit: `edit` is a data forest whose nodes may carry the metadata
    /// ietf-netconf:operation (merge, replace, create, delete, remove) and yang:insert/key/value
    /// for ordered-by-user lists. The result is validated; then made durable (running,
    /// startup). With TestOnly nothing changes. Throws Error; nothing changes on an error
    /// (see ErrorOption for StopOnError).
    WriteTiming edit(Datastore ds, const lyd_node* edit, const EditOptions& options = {});

    /// Replaces the whole content of `ds` with `config` (nullptr: empty). Validated first.
    WriteTiming replace(Datastore ds, const lyd_node* config);
    /// copy-config between datastores.
    WriteTiming copy(Datastore from, Datastore to);
    /// Empties `ds` (delete-config).
    WriteTiming clear(Datastore ds);

    /// Validates the content of `ds`; throws Error describing the first problem.
    void validate(Datastore ds) const;
    /// Validates a complete configuration that is not in any datastore.
    void validate(const lyd_node* config) const;

    /// Makes running equal to candidate (durable), then candidate tracks running again.
    WriteTiming commit();
    /// Candidate := running.
    void discardChanges();
    /// True when candidate differs from running through edits since the last commit/discard.
    bool candidateModified() const;

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
