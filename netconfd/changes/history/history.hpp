// The commit history (issue 14): every change of running, with who made it, when, why (a
// comment), and what it takes to undo it; and the rollback to the state right after any commit
// still kept.
//
// Promises:
//  - Complete and exactly as durable as the change: the history is a journal of the store
//    (ncstore/datastore.hpp, Store::addJournal), so the row of a change set of running is in the
//    same SQLite transaction as the change. An acknowledged commit is in the history, after a
//    restart or a kill -9 too; a commit that never became durable is not in the journal. Every
//    origin counts: edit-config, copy-config, commit from candidate, the rollback of a confirmed
//    commit, a rollback, the server's own writes (the NACM defaults of a first start).
//  - Bytes proportional to the change (a row holds, per change, its operation, its path and
//    only what was there before): a Create costs its path, an Update its old value, a Delete
//    its old value or old subtree, a Move or the Delete of an ordered-by-user instance also its
//    old position. The old subtrees of a commit go into one document with their parents (LYB,
//    printed once per commit, parses back as a top-level document). Rows are versioned (first
//    byte) and length-prefixed.
//  - Cheap on the commit path: the hook (under the store's exclusive lock) encodes the change
//    set, appends one entry to the in-memory index and never calls the Store; the journal's
//    old rows go in the transaction of a commit (ds::JournalWrite::trimThrough), a batch at a
//    time: no transaction, thread or wake-up of their own.
//  - Retention: at most Options::maxCommits commits and Options::maxBytes bytes of rows are
//    listed; the oldest go first, the newest always stays (a single commit larger than maxBytes
//    is kept alone until the next one). The file holds at most trimBatch() more rows than are
//    listed, deleted with a later commit. Applied at start too, when the options shrank.
//  - Off (Options::maxCommits 0): nothing is recorded and the commit path carries no hook at
//    all; a history left in the file by an earlier start is dropped at once, because a later
//    start with the history on could not know which commits it missed meanwhile, and a rollback
//    across them would be wrong.
//  - Rollback to N (stateAfter()): running as it was right after commit N is running now with
//    the rows of every later commit inverted, newest commit first and, within a commit, last
//    change first (changes.hpp promise 2 makes that exact, ordered-by-user order included; the
//    order of system-ordered entries is not configuration: a re-created one comes after its
//    siblings). Only commits still in the index can be rolled back to. The server writes the
//    result as ONE new commit of running by the requesting user, an edit validated and checked
//    like an edit-config, on exactly the state it was computed from.
//  - A rollback costs what it undoes (rollbackEdit()): the later commits' rows are undone on a copy
//    of only the part of running they touch. compare (stateAfter()) still works on whole copies
//    of running, at a cost that grows with its size.
//  - Known limits: a row that no longer decodes under the current models (a module removed or
//    changed), or an inversion that no longer applies, fails the rollback with the commit and
//    path named; nothing is written. An ordered-by-user instance that validation removed (a
//    `when` turned false) has no old position (changes.hpp): undoing that puts it last in its
//    list. After a failed transaction (datastore rule 7: disk full, I/O error) the index may list
//    the commits that failed until the next change set is published (the index's entries are
//    confirmed by the store's listener; their rows are not in the file, and rollbackEdit() and
//    stateAfter() read the file and are not misled meanwhile).
#pragma once

#include "ncstore/changes.hpp"
#include "ncstore/datastore.hpp"
#include "ncstore/yang.hpp"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace ncstore::netconfd::history {

/// The store's journal that holds the history.
inline constexpr const char* kJournal = "history";
/// The row format written by this version.
inline constexpr unsigned char kRowVersion = 2;

struct Options {
    std::uint64_t maxCommits = 1000; ///< 0: the history is off
    std::uint64_t maxBytes = 64u << 20;
};

/// One commit of running, as the index keeps it (no undo data).
struct Entry {
    std::uint64_t id = 0;
    std::int64_t timeUs = 0; ///< microseconds since the epoch (system clock)
    std::uint32_t session = 0;
    std::string user;
    std::string host;
    ds::Origin origin = ds::Origin::Edit;
    std::string comment;
    std::uint32_t changes = 0;
    std::uint64_t bytes = 0; ///< the row's size
};

/// What undoes one change.
struct Undo {
    ds::ChangeOp op = ds::ChangeOp::Create;
    std::string path;
    std::optional<std::string> oldValue; ///< terminals: Update, Delete
    /// Delete of an inner node, Replace (anydata): the node's old subtree is in a document (LYB,
    /// with its parents): Row::oldSubtrees, or this one (`oldTree`) when it could not go there
    /// (its node was in it already: an ancestor deleted earlier in the same commit).
    bool subtree = false;
    std::string oldTree;
    std::optional<ds::Position> oldPosition;
    bool leafList = false; ///< Delete of a leaf-list instance (its value is in the path)
};

/// A decoded row: the entry (id and bytes not in the row) and its undo data, in change order.
struct Row {
    Entry entry;
    std::vector<Undo> undo;
    /// The old subtrees of the row's changes, in ONE document (LYB, each with its parents): one
    /// print per commit, however many subtrees it deleted.
    std::string oldSubtrees;
};

/// The row of `changes` (a change set of running) made at `timeUs`. Throws YangError when a
/// subtree cannot be copied or printed.
std::string encode(const ds::ChangeSet& changes, std::int64_t timeUs);
/// Decodes a row; `headerOnly` leaves Row::undo empty. Throws std::runtime_error on a damaged
/// row or an unknown version.
Row decode(std::string_view data, bool headerOnly = false);

/// Undoes the changes of `row` on `forest` (a datastore's whole tree, any top-level sibling or
/// null; it may become null), last change first. Throws ds::Error (OperationFailed) naming the
/// change that does not apply or does not decode under `ctx`.
void invert(const ly_ctx* ctx, Tree& forest, const Row& row);

/// The part of `running` (a datastore's whole tree, any top-level sibling, or null) that undoing
/// changes at `paths` (data paths as change sets name them) reads and writes, as a new forest in
/// running's order: the node at each path that exists, with its subtree; for a path that does not
/// exist, its deepest existing ancestor; the ancestors of all these; and every instance of the
/// ordered-by-user lists and leaf-lists these belong to or go back into, so that positions undo
/// exactly (nodes copied only for their place hold their keys and nothing else). Undoing the
/// changes on a copy of it and comparing (editBetween) gives the edit that undoes them on running.
/// Safe beside other readers of `running` (no libyang lookup that touches its hash tables' state).
/// Cost: the size of what it copies (an ordered-by-user list around a path is copied whole, keys
/// only). Throws std::runtime_error for a path the models loaded now do not have.
struct RegionOf {
    Tree tree;
    /// Non-presence containers of the region that hold, in running, explicit nodes outside it:
    /// they stay whatever undoing does inside the region, though their copy may end up empty
    /// (libyang then flags it a default node, and a comparison would take it for removed).
    std::vector<std::string> kept;
};
RegionOf regionOf(const ly_ctx* ctx, const lyd_node* running, const std::vector<std::string>& paths);

/// What changed from `from` to `to` (two whole states of running, either may be null) as the
/// content of an edit-config <config> that makes `from` into `to` when applied to it (default
/// operation merge): created nodes whole with nc:operation="create", deleted ones by their keys
/// with nc:operation="remove" (a create in another case of a choice may take them away first),
/// changed leaves with their new value, moves of ordered-by-user
/// instances with yang:insert; nodes holding their default value are left out. XML, the
/// namespaces declared on each top element; "" when the two states are the same. Throws YangError.
std::string editBetween(const ly_ctx* ctx, const lyd_node* from, const lyd_node* to);

class History final : private ds::ChangeListener {
public:
    /// Reads the journal into the index (applying retention), then registers the hook: before
    /// any write of the server. Throws when the journal cannot be read.
    History(ds::Store& store, const ly_ctx* ctx, Options options);
    ~History() override; ///< unregisters the hook and the listener
    History(const History&) = delete;
    History& operator=(const History&) = delete;

    /// Whether commits are recorded (Options::maxCommits > 0).
    bool enabled() const noexcept { return options_.maxCommits > 0; }
    /// The commits kept, oldest first (none when off).
    std::vector<Entry> entries() const;
    /// Whether commit `id` is kept.
    bool contains(std::uint64_t id) const;

    /// What a rollback to commit `id` writes: the content of an edit-config <config> (editBetween's
    /// form, "" when running is that state already) that makes running as it was right after
    /// commit `id`, computed at the cost of what it undoes: the rows of the later commits, undone
    /// on a copy of only the region of running they touch (regionOf). `base` is the commit of
    /// running it was computed from: apply it with ds::EditOptions::unchangedSince = base, so that
    /// it lands on exactly that state or not at all. Throws ds::Error as stateAfter() does.
    struct RollbackEdit {
        std::string edit;
        std::uint64_t base = 0;
        std::size_t commits = 0; ///< commits undone
    };
    RollbackEdit rollbackEdit(std::uint64_t id) const;

    /// Running as it was right after commit `id`, from `running` (a copy of running, whose last
    /// write is commit `runningId`, as Store::read() returns it): the rows of the commits in
    /// (id, runningId] inverted onto it. Throws ds::Error: InvalidValue when `id` is not kept,
    /// OperationFailed when a row does not decode or apply.
    Tree stateAfter(std::uint64_t id, Tree running, std::uint64_t runningId) const;

private:
    ds::JournalWrite hook(const ds::ChangeSet& changes);
    /// Rows dropped from the index that wait in the file for a commit to delete them: one
    /// delete per this many commits (a 16th of maxCommits) keeps the cost off every commit.
    std::uint64_t trimBatch() const { return std::max<std::uint64_t>(1, options_.maxCommits / 16); }
    // ds::ChangeListener: durable change sets, in commit order (the index's entries confirmed).
    void changed(const ds::ChangeSet& changes) override;
    void lost(std::uint64_t through) override;
    /// Drops the oldest entries past the limits; returns the last id dropped (0: none). Under mutex_.
    std::uint64_t retain();

    ds::Store& store_;
    const ly_ctx* ctx_;
    const Options options_;

    mutable std::mutex mutex_; // guards everything below
    std::deque<Entry> index_;
    // Entries the hook added whose change set was not published yet (not known durable). The
    // store publishes every durable change set in commit order: one still pending when a later
    // one arrives was in a transaction that failed (datastore rule 7) and leaves the index.
    std::set<std::uint64_t> pending_;
    std::uint64_t bytes_ = 0;     // of the rows in index_
    std::uint64_t untrimmed_ = 0; // entries dropped from index_ since the last trim was asked for
};

} // namespace ncstore::netconfd::history
