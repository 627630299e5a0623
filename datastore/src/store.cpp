// The store: the write paths (edit, replace, commit) and the read path, on top of the loader
// (loader.hpp), the record-level change sets (recordset.hpp), the candidate (candidate.hpp), the
// validation planner (validation.hpp) and the writer (writer.hpp).
#include "backend.hpp"
#include "candidate.hpp"
#include "changebuilder.hpp"
#include "combiner.hpp"
#include "edit.hpp"
#include "leafref.hpp"
#include "loader.hpp"
#include "locks.hpp"
#include "publisher.hpp"
#include "recordset.hpp"
#include "rwlock.hpp"
#include "sqlitebackend.hpp"
#include "syncpoint.hpp"
#include "trees.hpp"
#include "validation.hpp"
#include "writer.hpp"

#include "ncstore/changes.hpp"
#include "ncstore/datastore.hpp"
#include "ncstore/log.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <shared_mutex>

namespace ncstore::ds {

using detail::Clock;
using detail::RawTree;
using detail::RecordCollector;
using detail::RecordSet;
using detail::usSince;

namespace {

/// Thrown from a write's critical section when verifiers concern themselves with its change set
/// (rule 10): the section's own failure paths put memory back, and StoreImpl::verified() catches
/// it. Not an Error: a write on its way to verification has not failed.
struct NeedsVerification {};
/// Thrown from the final pass of a verified write when running is not as it was verified.
struct RunningMoved {};

/// What a verified write carries from its capture to its final pass.
struct VerifyState {
    bool verified = false;  ///< the final pass: every concerned verifier accepted `captured`
    std::uint64_t base = 0; ///< the commit id of running's last write when it was captured
    std::shared_ptr<const ChangeSet> captured;
    std::vector<Verifier*> concerned; ///< in priority order
};

/// An edit applied again to a copy, for a verifier's after-view: nothing to observe.
class NoObserver : public detail::ChangeObserver {
public:
    void created(const lyd_node*) override {}
    void changed(const lyd_node*, const std::string&, bool) override {}
    void moved(const lyd_node*, const std::string&) override {}
    void deleting(const lyd_node*) override {}
};

class LazyView : public Verification {
public:
    explicit LazyView(std::function<Tree()> build) : build_(std::move(build)) {}
    const lyd_node* after() const override {
        const std::lock_guard lock(mutex_);
        if (!built_) {
            tree_ = build_();
            built_ = true;
        }
        return tree_.get();
    }

private:
    std::function<Tree()> build_;
    mutable std::mutex mutex_;
    mutable bool built_ = false;
    mutable Tree tree_;
};

bool samePosition(const std::optional<Position>& a, const std::optional<Position>& b) {
    return a.has_value() == b.has_value() && (!a || (a->where == b->where && a->anchor == b->anchor));
}

bool sameTree(const Tree& a, const Tree& b) {
    if (!a || !b) {
        return !a && !b;
    }
    return lyd_compare_single(a.get(), b.get(), LYD_COMPARE_FULL_RECURSION) == LY_SUCCESS;
}

/// Whether two change sets make the same changes (the final pass of a verified write against
/// what was verified). Cost: the size of the change sets.
bool sameChanges(const ChangeSet& a, const ChangeSet& b) {
    if (a.changes.size() != b.changes.size()) {
        return false;
    }
    for (std::size_t i = 0; i < a.changes.size(); ++i) {
        const Change& x = a.changes[i];
        const Change& y = b.changes[i];
        if (x.op != y.op || x.path != y.path || x.oldValue != y.oldValue || x.newValue != y.newValue ||
            !samePosition(x.position, y.position) || !sameTree(x.newTree, y.newTree) ||
            !sameTree(x.oldTree, y.oldTree)) {
            return false;
        }
    }
    return true;
}

} // namespace

class StoreImpl {
public:
    StoreImpl(const ly_ctx* ctx, const StoreOptions& options)
        : ctx_(ctx), options_(options), loader_(ctx, options.verifyOnOpen) {
        auto backend = detail::openBackend(options);
        backend_ = backend.get();
        install(loader_.load(*backend));
        appliedSeq_ = backend->lastCommitId();
        runningWrittenAt_ = appliedSeq_;
        writer_ = std::make_unique<detail::Writer>(
            std::move(backend), options, publisher_,
            [this](detail::Backend& p, const std::function<void()>& drain, std::uint64_t firstFailed) {
                std::unique_lock lock(mutex_);
                const std::lock_guard sequence(sequence_); // no journal row slips in either
                drain();
                NCS_SYNC_POINT("store:reloading");
                NCS_LOG(warning) << "datastore: reloading " << p.describe() << " after a failed commit";
                install(loader_.load(p));
                ++runningGeneration_;
                runningWrittenAt_ = appliedSeq_;
                if (candidate_.own() && candidate_.baseSeq() >= firstFailed) {
                    // Copied from running while a write that failed was in it.
                    NCS_LOG(warning) << "datastore: candidate was copied from running while a failed write "
                                        "was in it: its changes are discarded";
                    candidate_.reset();
                }
            });
        NCS_LOG(info) << backend_->describe() << " open ("
                      << (options.dqlite ? std::string("durable on a Raft majority")
                                         : std::string("durability ") + toString(options.durability))
                      << "; " << leafrefs_.counters().planned << " leafrefs checked by key lookups)";
    }

    void install(detail::Loader::Loaded loaded) {
        trees_[index(Datastore::Running)] = std::move(loaded.running);
        trees_[index(Datastore::Startup)] = std::move(loaded.startup);
    }

    static std::size_t index(Datastore ds) { return static_cast<std::size_t>(ds); }

    /// The tree a write to `ds` changes.
    Tree& tree(Datastore ds) { return ds == Datastore::Candidate ? candidate_.tree() : trees_[index(ds)]; }

    /// The tree a datastore shows (candidate tracks running until it is edited).
    const lyd_node* view(Datastore ds) const {
        if (ds == Datastore::Candidate) {
            return candidate_.view(trees_[index(Datastore::Running)].get());
        }
        return trees_[index(ds)].get();
    }

    /// Runs `fn` on what `ds` shows, and returns only once that is durable: a write is seen by
    /// readers as soon as it is applied in memory (so that writes need not wait for readers and
    /// many writes share one fsync), but a read waits, after releasing the lock, until every
    /// write it saw is durable; when one of them failed, memory was reloaded and `fn` runs again.
    /// Returns the sequence number of the last write seen.
    std::uint64_t read(Datastore ds, const std::function<void(const lyd_node*)>& fn) const {
        const auto began = std::chrono::steady_clock::now();
        for (;;) {
            std::uint64_t seen = 0;
            std::uint64_t generation = 0;
            bool durableView = true;
            {
                std::shared_lock lock(mutex_);
                writer_->checkInService();
                seen = appliedSeq_;
                generation = writer_->failureGeneration();
                durableView = ds != Datastore::Candidate || !candidate_.own();
                fn(view(ds));
            }
            if (!durableView || writer_->waitDurable(seen, generation)) {
                checkLeadership(began);
                return seen;
            }
        }
    }

    /// Rule 3 on a dqlite cluster: returns once a commit begun at or after `began`, or one begun
    /// within the read lease, reached a majority; else queues a leader check (shared with the
    /// reads and writes of its batch) and waits for it.
    void checkLeadership(std::chrono::steady_clock::time_point began) const {
        if (!options_.dqlite || options_.dqlite->reader) {
            return;
        }
        const auto last = writer_->lastCommitBegun();
        const bool leased = last.time_since_epoch().count() > leaseRevoked_.load(std::memory_order_acquire) &&
                            std::chrono::steady_clock::now() - last < options_.dqlite->readLease;
        if (last >= began || leased) {
            return;
        }
        detail::RecordSet check{Datastore::Running, {}};
        check.leaderCheck = true;
        detail::Writer::Slot slot = writer_->reserve();
        try {
            writer_->submit(std::move(slot), std::move(check), nullptr).wait();
        } catch (const Error& e) {
            throw Error(ErrorTag::OperationFailed,
                        std::string("this server could not show that its dqlite node still leads the "
                                    "cluster, so it answers no read from memory: ") +
                            e.what());
        }
    }

    Tree snapshot(Datastore ds) const {
        Tree copy;
        read(ds, [&](const lyd_node* tree) { copy = detail::dupForest(tree); });
        return copy;
    }

    /// Room in the writer's queue for a write to `ds` (candidate writes do not go there).
    detail::Writer::Slot reserve(Datastore ds) {
        return ds == Datastore::Candidate ? detail::Writer::Slot() : writer_->reserve();
    }

    /// Whether `who` may write `ds` now; called in the write's critical section, so that no
    /// lock can be taken between this check and the write.
    void checkWritable(const WriteContext& who, Datastore ds) const {
        writer_->checkInService();
        const auto holder = locks_.holder(ds);
        if (who.session != 0 && holder != 0 && holder != who.session) {
            throw Error(ErrorTag::InUse, std::string("the ") + toString(ds) +
                                             " datastore is locked by session " + std::to_string(holder));
        }
        NCS_SYNC_POINT("write:checked");
    }

    /// Whether a write by `who` to `ds` needs its logical change set: for the access policy,
    /// the listeners or the journals. Otherwise none is built: that seam costs nothing.
    bool wantsChanges(const WriteContext& who, Datastore ds) const {
        return who.policy || (ds != Datastore::Candidate && (publisher_.listening() || !journals_.empty())) ||
               (ds == Datastore::Running && !verifiers_.empty());
    }

    /// Rule 10, under the exclusive lock, for a write of running that will be persisted: its
    /// first pass hands its change set to verification (throws NeedsVerification) when a
    /// verifier concerns itself with it; its final pass goes on only with exactly the change set
    /// that was verified (throws RunningMoved).
    void checkVerification(ChangeSet& changes, VerifyState* vs) {
        if (!vs || changes.changes.empty()) {
            return;
        }
        if (vs->verified) {
            if (!sameChanges(changes, *vs->captured)) {
                throw RunningMoved{};
            }
            return;
        }
        std::vector<Verifier*> concerned;
        for (const auto& [priority, verifier] : verifiers_) {
            if (verifier->concerns(changes)) {
                concerned.push_back(verifier);
            }
        }
        if (concerned.empty()) {
            return;
        }
        vs->concerned = std::move(concerned);
        vs->base = runningWrittenAt_;
        vs->captured = std::make_shared<const ChangeSet>(std::move(changes)); // the write goes no further
        throw NeedsVerification{};
    }

    /// The final pass of a verified write goes on only on the running it was verified against.
    void checkUnmoved(const VerifyState* vs) const {
        if (vs && vs->verified && runningWrittenAt_ != vs->base) {
            throw RunningMoved{};
        }
    }

    /// Runs the write `attempt` (a write of `ds`) under rule 10: with no verifier concerned it
    /// is one pass, as without verifiers; else captured, verified outside every lock of the
    /// store's, and applied again on an unmoved running. `after` builds running as the write
    /// would leave it, for the verifiers that ask (Verification::after).
    template <class Attempt>
    WriteTiming verified(Datastore ds, Attempt&& attempt, std::function<Tree()> after) {
        if (ds != Datastore::Running) {
            return attempt(nullptr);
        }
        VerifyState vs;
        std::unique_lock serial(verifySerial_, std::defer_lock);
        auto finish = [&](std::uint64_t commitId) {
            if (commitId != 0) {
                for (Verifier* v : vs.concerned) {
                    v->finished(*vs.captured, commitId);
                }
            } else {
                for (auto it = vs.concerned.rbegin(); it != vs.concerned.rend(); ++it) {
                    (*it)->finished(*vs.captured, 0);
                }
            }
        };
        for (int round = 0;;) {
            try {
                WriteTiming timing = attempt(&vs);
                if (vs.verified) {
                    finish(timing.commitId);
                }
                return timing;
            } catch (const NeedsVerification&) {
            } catch (const RunningMoved&) {
                finish(0);
                if (++round >= Store::kVerifyRounds) {
                    ++failed_;
                    throw Error(ErrorTag::OperationFailed,
                                "running was written " + std::to_string(round) +
                                    " times while applications verified this change; nothing was written, "
                                    "try again");
                }
                vs = VerifyState{};
                continue;
            } catch (...) {
                if (vs.verified) {
                    finish(0);
                }
                throw;
            }
            if (!serial.owns_lock()) {
                // In turn behind the verified writes before it; captured again only if running
                // moved while it waited.
                serial.lock();
                std::shared_lock lock(mutex_);
                if (runningWrittenAt_ != vs.base) {
                    vs = VerifyState{};
                    continue;
                }
            }
            NCS_SYNC_POINT("verify:begin");
            LazyView view(after);
            std::size_t asked = 0;
            try {
                for (; asked < vs.concerned.size(); ++asked) {
                    vs.concerned[asked]->verify(*vs.captured, view);
                }
            } catch (const Error&) {
                vs.concerned.resize(asked + 1); // the refusing one and those before it
                finish(0);
                ++failed_;
                throw;
            } catch (const std::exception& e) {
                vs.concerned.resize(asked + 1);
                finish(0);
                ++failed_;
                throw Error(ErrorTag::OperationFailed, std::string("verification failed: ") + e.what());
            }
            vs.verified = true;
        }
    }

    void addVerifier(Verifier& verifier, int priority) {
        const std::lock_guard serial(verifySerial_);
        std::unique_lock lock(mutex_);
        auto at = std::find_if(verifiers_.begin(), verifiers_.end(),
                               [&](const auto& entry) { return entry.first > priority; });
        verifiers_.insert(at, {priority, &verifier});
    }

    void removeVerifier(Verifier& verifier) {
        const std::lock_guard serial(verifySerial_); // no verification in progress
        std::unique_lock lock(mutex_);
        std::erase_if(verifiers_, [&](const auto& entry) { return entry.second == &verifier; });
    }

    /// Running as `edit` would leave it, for Verification::after(): a copy with the edit applied
    /// again and validated (an edit that no longer applies leaves what it could).
    Tree runningAfterEdit(const lyd_node* editTree, DefaultOperation defaultOperation) const {
        Tree copy = snapshot(Datastore::Running);
        detail::UndoLog undo;
        NoObserver none;
        RawTree raw(copy);
        try {
            detail::applyEdit(raw.ptr(), editTree, defaultOperation, undo, none);
        } catch (const Error&) {
            // What error-option stop-on-error keeps; the write itself reports the error.
        }
        if (raw.get()) {
            (void)lyd_validate_all(raw.ptr(), ctx_, detail::kValidateOpts, nullptr); // defaults, `when`
        }
        return copy;
    }

    std::shared_ptr<ChangeSet> newChangeSet(const WriteContext& who, Datastore ds, Origin origin) const {
        NCS_SYNC_POINT("changes:building");
        auto changes = std::make_shared<ChangeSet>();
        changes->datastore = ds;
        changes->origin = origin;
        changes->session = who.session;
        changes->user = who.user;
        changes->host = who.host;
        changes->comment = who.comment;
        return changes;
    }

    /// What the journals' hooks add to one write.
    struct JournalRows {
        std::vector<std::pair<std::string, std::string>> rows;    // (journal, row)
        std::vector<std::pair<std::string, std::uint64_t>> trims; // (journal, through)
    };

    /// What must hold before a write becomes visible, under the exclusive lock: the access
    /// policy accepts its change set (and `result`, the tree the write leaves); for a write that
    /// will be persisted (`persisted`), the journals' rows for it, made with the commit id it
    /// will get: `sequence` is then locked, and stays so until submit() (rule 2). Throws to
    /// refuse the write (counted as failed); the caller then puts memory back.
    JournalRows admit(const WriteContext& who, ChangeSet& changes, const lyd_node* result, bool persisted,
                      std::unique_lock<std::mutex>& sequence, VerifyState* vs = nullptr) {
        try {
            if (who.policy) {
                who.policy->checkWrite(changes, result);
            }
        } catch (...) {
            ++failed_;
            throw;
        }
        if (persisted) {
            checkVerification(changes, vs);
        }
        try {
            JournalRows rows;
            if (persisted && !changes.changes.empty()) {
                if (!sequence.owns_lock()) {
                    sequence.lock();
                }
                changes.commitId = appliedSeq_ + 1; // what submit() will give it
                for (const auto& [name, hook] : journals_) {
                    JournalWrite w = hook(changes);
                    for (auto& row : w.rows) {
                        rows.rows.emplace_back(name, std::move(row));
                    }
                    if (w.trimThrough > 0) {
                        rows.trims.emplace_back(name, w.trimThrough);
                    }
                }
            }
            return rows;
        } catch (...) {
            ++failed_;
            throw;
        }
    }

    /// Hands a write to the writer under the sequence lock (locked here unless admit() did, and
    /// released): its commit id, `commitId`, is the next number, so that commit ids follow the
    /// order of the writes in memory and in the queue (rule 2).
    detail::Writer::Ticket submit(std::unique_lock<std::mutex>& sequence, std::uint64_t& commitId,
                                  detail::Writer::Slot slot, RecordSet records,
                                  std::shared_ptr<ChangeSet> changes, JournalRows journal,
                                  detail::Writer::Waiter waiter = detail::Writer::Waiter::Caller) {
        if (!sequence.owns_lock()) {
            sequence.lock();
        }
        records.commitId = commitId = ++appliedSeq_;
        if (changes) {
            changes->commitId = records.commitId;
        }
        if (changes && ((changes->changes.empty() && journal.rows.empty()) || !publisher_.listening())) {
            changes.reset(); // nothing to publish
        } else if (changes) {
            changes->journal = journal.rows; // what a listener that publishes a journal needs
        }
        records.journal = std::move(journal.rows);
        records.trims = std::move(journal.trims);
        auto ticket = writer_->submit(std::move(slot), std::move(records), std::move(changes), waiter);
        sequence.unlock();
        return ticket;
    }

    WriteTiming edit(const WriteContext& who, Datastore ds, const lyd_node* editTree,
                     const EditOptions& options, VerifyState* vs) {
        WriteTiming timing;
        detail::Writer::Ticket durable;
        std::optional<Error> stopError;
        auto t0 = Clock::now();
        detail::Writer::Slot slot = reserve(ds);
        auto section = [&](bool alone) {
            timing.lockWaitUs = usSince(t0);
            checkWritable(who, ds);
            checkUnmoved(vs);
            if (options.unchangedSince && ds == Datastore::Running &&
                runningWrittenAt_ > *options.unchangedSince) {
                ++failed_;
                throw StaleRead("running was written (commit " + std::to_string(runningWrittenAt_) +
                                ") since the read this edit was computed from (commit " +
                                std::to_string(*options.unchangedSince) + ")");
            }
            const bool hadOwnCandidate = candidate_.own();
            if (ds == Datastore::Candidate) {
                candidate_.branch(trees_[index(Datastore::Running)].get(), runningGeneration_, appliedSeq_);
            }
            Tree& target = tree(ds);
            RecordCollector collector(&planner_);
            std::optional<detail::ChangeBuilder> builder;
            std::shared_ptr<ChangeSet> changes;
            if (wantsChanges(who, ds)) {
                builder.emplace();
                changes = newChangeSet(who, ds, Origin::Edit);
            }
            detail::ObserverPair observer(collector, builder ? &*builder : nullptr);
            detail::UndoLog undo;
            Tree validationDiff;
            auto undoAll = [&] {
                detail::rollback(target, validationDiff.get(), undo);
                candidate_.unbranch(hadOwnCandidate);
            };
            t0 = Clock::now();
            try {
                RawTree raw(target);
                detail::applyEdit(raw.ptr(), editTree, options.defaultOperation, undo, observer);
            } catch (const Error& e) {
                if (options.errorOption == ErrorOption::StopOnError &&
                    options.testOption != TestOption::TestOnly && !undo.empty()) {
                    stopError = e;
                } else {
                    undoAll();
                    ++failed_;
                    throw;
                }
            }
            timing.applyUs = usSince(t0);

            t0 = Clock::now();
            if (options.testOption != TestOption::Set) {
                const bool localOk =
                    !collector.needFullValidation() &&
                    !planner_.referrersMayDangle(target.get(), collector.deletedReferenced()) &&
                    detail::validateLocally(ctx_, planner_, target.get(), collector.localChecks(target.get()),
                                            options.testOption != TestOption::TestOnly);
                lyd_node* diff = nullptr;
                LY_ERR rc = LY_SUCCESS;
                timing.wholeTreeValidation = !localOk;
                if (!localOk) {
                    RawTree raw(target);
                    rc = raw.get() ? lyd_validate_all(raw.ptr(), ctx_, detail::kValidateOpts, &diff)
                                   : LY_SUCCESS;
                }
                validationDiff.reset(diff);
                if (rc != LY_SUCCESS) {
                    Error err = detail::validationError(ctx_, "");
                    undoAll();
                    ++failed_;
                    throw err;
                }
                collector.addValidationDiff(diff, target.get());
                if (builder) {
                    builder->addValidationDiff(diff);
                }
            } else {
                // test-option "set": no validation; defaults still belong in the tree.
                try {
                    RawTree raw(target);
                    loader_.addDefaults(raw.ptr());
                } catch (const Error&) {
                    undoAll();
                    ++failed_;
                    throw;
                }
            }
            timing.validateUs = usSince(t0);

            JournalRows journal;
            std::unique_lock sequence(sequence_, std::defer_lock);
            if (builder) {
                changes->changes = builder->take();
                try {
                    journal = admit(who, *changes, target.get(),
                                    ds != Datastore::Candidate && options.testOption != TestOption::TestOnly,
                                    sequence, vs);
                } catch (...) {
                    undoAll();
                    throw;
                }
            }
            if (options.testOption == TestOption::TestOnly) {
                undoAll();
                return;
            }
            if (ds == Datastore::Candidate) {
                candidate_.edited(collector, options.testOption != TestOption::Set, who.session);
            } else if (!collector.empty()) {
                ++runningGeneration_;
                t0 = Clock::now();
                RecordSet records = collector.build(ds, target.get());
                timing.changedRecords = records.ops.size();
                timing.serializeUs = usSince(t0);
                // A combined write's turn to commit is the writer thread's: the combiner is busy
                // with the writes behind it, the others are asleep.
                durable = submit(sequence, timing.commitId, std::move(slot), std::move(records),
                                 std::move(changes), std::move(journal),
                                 alone ? detail::Writer::Waiter::Caller : detail::Writer::Waiter::None);
                if (ds == Datastore::Running) {
                    runningWrittenAt_ = timing.commitId;
                }
            }
        };
        writes_.run(section);
        if (durable.valid()) {
            t0 = Clock::now();
            durable.wait();
            timing.commitWaitUs = usSince(t0);
        }
        if (stopError) {
            throw *stopError;
        }
        return timing;
    }

    void validateTree(Tree& tree) const {
        RawTree raw(tree);
        if (raw.get() && lyd_validate_all(raw.ptr(), ctx_, detail::kValidateOpts, nullptr) != LY_SUCCESS) {
            throw detail::validationError(ctx_, "");
        }
    }

    /// Replaces a whole datastore with `content` (validated here, before the lock is taken).
    WriteTiming replace(const WriteContext& who, Datastore ds, Tree& content, Origin origin,
                        VerifyState* vs) {
        WriteTiming timing;
        auto t0 = Clock::now();
        validateTree(content);
        timing.validateUs = usSince(t0);
        timing.wholeTreeValidation = true;
        detail::Writer::Ticket durable;
        Tree old; // freed once the lock is released
        detail::Writer::Slot slot = reserve(ds);
        {
            std::unique_lock lock(mutex_);
            checkWritable(who, ds);
            checkUnmoved(vs);
            std::shared_ptr<ChangeSet> changes;
            JournalRows journal;
            std::unique_lock sequence(sequence_, std::defer_lock);
            if (wantsChanges(who, ds)) {
                t0 = Clock::now();
                changes = newChangeSet(who, ds, origin);
                detail::diffForests(view(ds), content.get(), changes->changes);
                timing.serializeUs += usSince(t0);
                journal = admit(who, *changes, content.get(), ds != Datastore::Candidate, sequence, vs);
            }
            if (ds == Datastore::Candidate) {
                old = std::move(candidate_.tree());
                candidate_.replaced(std::move(content), who.session);
                return timing;
            }
            if (ds == Datastore::Running) {
                ++runningGeneration_;
            }
            t0 = Clock::now();
            RecordSet records = detail::fullRecordSet(ds, content.get());
            timing.changedRecords = records.ops.size();
            timing.serializeUs += usSince(t0);
            old = std::move(trees_[index(ds)]);
            trees_[index(ds)] = std::move(content);
            durable = submit(sequence, timing.commitId, std::move(slot), std::move(records),
                             std::move(changes), std::move(journal));
            if (ds == Datastore::Running) {
                runningWrittenAt_ = timing.commitId;
            }
        }
        old.reset();
        t0 = Clock::now();
        durable.wait();
        timing.commitWaitUs = usSince(t0);
        return timing;
    }

    /// Makes running what candidate shows, in one critical section: the candidate that is
    /// validated and written is the one that becomes running, so no candidate edit acknowledged
    /// meanwhile can be lost.
    WriteTiming commit(const WriteContext& who, VerifyState* vs) {
        WriteTiming timing;
        detail::Writer::Ticket durable;
        Tree oldRunning; // freed once the lock is released
        detail::Writer::Slot slot = reserve(Datastore::Running);
        {
            std::unique_lock lock(mutex_);
            checkWritable(who, Datastore::Running);
            checkWritable(who, Datastore::Candidate);
            checkUnmoved(vs);
            if (!candidate_.own()) {
                return timing; // candidate tracks running: nothing to commit
            }
            const lyd_node* running = trees_[index(Datastore::Running)].get();
            Tree& candidate = candidate_.tree();
            const bool incremental = candidate_.incremental(runningGeneration_);
            Tree validationDiff;
            if (!incremental) {
                // Running moved since candidate was copied, or an edit was not validated.
                auto t0 = Clock::now();
                validationDiff = validateInPlace(candidate);
                timing.validateUs = usSince(t0);
                timing.wholeTreeValidation = true;
                NCS_SYNC_POINT("commit:validated");
            }
            std::shared_ptr<ChangeSet> changes;
            JournalRows journal;
            std::unique_lock sequence(sequence_, std::defer_lock);
            if (wantsChanges(who, Datastore::Running)) {
                auto t0 = Clock::now();
                changes = newChangeSet(who, Datastore::Running, Origin::Commit);
                if (incremental) {
                    detail::diffTouched(running, candidate.get(), candidate_.touched(), changes->changes);
                } else {
                    detail::diffForests(running, candidate.get(), changes->changes);
                }
                timing.serializeUs += usSince(t0);
                try {
                    journal = admit(who, *changes, candidate.get(), true, sequence, vs);
                } catch (...) {
                    detail::UndoLog nothing;
                    detail::rollback(candidate, validationDiff.get(), nothing);
                    throw;
                }
            }
            auto t0 = Clock::now();
            // Incremental: write only what the candidate edits touched.
            RecordSet records = incremental ? candidate_.touched().build(Datastore::Running, candidate.get())
                                            : detail::fullRecordSet(Datastore::Running, candidate.get());
            timing.serializeUs += usSince(t0);
            timing.changedRecords = records.ops.size();
            oldRunning = std::move(trees_[index(Datastore::Running)]);
            trees_[index(Datastore::Running)] = candidate_.reset();
            ++runningGeneration_;
            durable = submit(sequence, timing.commitId, std::move(slot), std::move(records),
                             std::move(changes), std::move(journal));
            runningWrittenAt_ = timing.commitId;
        }
        oldRunning.reset();
        const auto t0 = Clock::now();
        durable.wait();
        timing.commitWaitUs = usSince(t0);
        return timing;
    }

    /// Validates `tree` where it is and returns the validation's diff; on failure puts it back
    /// as it was and throws.
    Tree validateInPlace(Tree& target) {
        lyd_node* diff = nullptr;
        LY_ERR rc = LY_SUCCESS;
        {
            RawTree raw(target);
            rc = raw.get() ? lyd_validate_all(raw.ptr(), ctx_, detail::kValidateOpts, &diff) : LY_SUCCESS;
        }
        Tree diffOwner{diff};
        if (rc != LY_SUCCESS) {
            Error err = detail::validationError(ctx_, "");
            detail::UndoLog nothing;
            detail::rollback(target, diff, nothing);
            ++failed_;
            throw err;
        }
        return diffOwner;
    }

    void discardChanges(const WriteContext& who) {
        Tree old; // freed once the lock is released
        std::unique_lock lock(mutex_);
        checkWritable(who, Datastore::Candidate);
        old = candidate_.reset();
    }

    LockOutcome lock(Datastore ds, std::uint32_t session) {
        std::unique_lock lock(mutex_);
        writer_->checkInService();
        return locks_.lock(ds, session, candidate_.modifiedByOtherThan(session));
    }

    UnlockResult unlock(Datastore ds, std::uint32_t session) {
        Tree old; // freed once the lock is released
        std::unique_lock lock(mutex_);
        const auto result = locks_.unlock(ds, session);
        if (result == UnlockResult::Released && ds == Datastore::Candidate) {
            old = candidate_.reset(); // RFC 6241 8.3.5.2: changes made under the lock go with it
        }
        return result;
    }

    std::vector<Datastore> releaseSession(std::uint32_t session) {
        Tree old; // freed once the lock is released
        std::unique_lock lock(mutex_);
        const auto released = locks_.releaseAll(session);
        if (std::find(released.begin(), released.end(), Datastore::Candidate) != released.end()) {
            old = candidate_.reset();
        }
        return released;
    }

    std::vector<LockInfo> locks() const {
        std::shared_lock lock(mutex_);
        return locks_.held();
    }

    bool candidateModified() const {
        std::shared_lock lock(mutex_);
        return candidate_.modified();
    }

    std::uint64_t addListener(ChangeListener& listener) {
        // Under the exclusive lock: every write after this one builds its change set; under the
        // sequence lock: every journal row after this one is published to it.
        std::unique_lock lock(mutex_);
        const std::lock_guard sequence(sequence_);
        publisher_.add(&listener, appliedSeq_);
        return appliedSeq_;
    }

    void removeListener(ChangeListener& listener) { publisher_.remove(&listener); }

    void addJournal(const std::string& name, JournalHook hook) {
        std::unique_lock lock(mutex_);
        for (auto& [existing, h] : journals_) {
            if (existing == name) {
                h = std::move(hook);
                return;
            }
        }
        journals_.emplace_back(name, std::move(hook));
    }

    /// The row's commit id, and the ticket of its transaction: appendJournal() does not wait
    /// for it (a failed transaction loses the row, rule 7), appendJournalDurable() does. Under
    /// the sequence lock alone, not the tree lock (rule 2): a session's start record waits for no
    /// reader, and queues no writer that later readers would wait behind.
    std::pair<std::uint64_t, detail::Writer::Ticket> queueJournal(const std::string& name, std::string row,
                                                                  detail::Writer::Waiter waiter) {
        detail::Writer::Slot slot = writer_->reserve(); // back-pressure, before the lock (rule 8)
        auto changes = std::make_shared<ChangeSet>();
        changes->origin = Origin::Event;
        JournalRows rows;
        rows.rows.emplace_back(name, std::move(row));
        std::unique_lock sequence(sequence_);
        writer_->checkInService();
        std::uint64_t commitId = 0;
        auto durable = submit(sequence, commitId, std::move(slot), RecordSet{Datastore::Running, {}},
                              std::move(changes), std::move(rows), waiter);
        return {commitId, std::move(durable)};
    }

    void trimJournal(const std::string& name, std::uint64_t through) {
        RecordSet trim{Datastore::Running, {}};
        trim.trims.emplace_back(name, through);
        detail::Writer::Slot slot = writer_->reserve();
        // In the writer's queue like any write: after the rows it trims.
        writer_->submit(std::move(slot), std::move(trim), nullptr).wait();
    }

    void revokeReadLease() {
        leaseRevoked_.store(std::chrono::steady_clock::now().time_since_epoch().count(),
                            std::memory_order_release);
    }

    Stats stats() const {
        Stats s = writer_->stats();
        s.changeSetsLost = publisher_.dropped();
        s.failedWrites += failed_.load();
        return s;
    }

    // Set at open, then read-only.
    const ly_ctx* ctx_;
    StoreOptions options_;
    detail::Loader loader_;
    detail::LeafrefAccelerator leafrefs_{ctx_};
    // Caches what it planned per schema node: used under the exclusive lock only.
    detail::ValidationPlanner planner_{ctx_, &leafrefs_};

    // The tree lock (rules 1, 2); everything down to runningWrittenAt_ is guarded by it: read
    // under the shared lock, changed under the exclusive lock.
    mutable detail::FairSharedMutex mutex_;
    detail::Combiner writes_{mutex_}; ///< runs edit()'s critical sections under mutex_
    Tree trees_[2];                   // running, startup
    detail::Candidate candidate_;
    std::vector<std::pair<std::string, JournalHook>> journals_;
    detail::LockTable locks_;
    std::uint64_t runningGeneration_ = 0; // counts running's writes: candidate_'s incremental commit
    std::uint64_t runningWrittenAt_ = 0;  // the commit id of the last write of running (unchangedSince)
    std::vector<std::pair<int, Verifier*>> verifiers_; // rule 10, in priority order

    // The sequence lock (rules 1, 2): commit ids and the order writes enter the writer's queue.
    // A write holds it, under the exclusive tree lock, from asking the journals to queuing; a
    // journal row of its own (appendJournal) alone. appliedSeq_ changes under it; readers read it
    // under the tree lock (a journal row may be counted: it changes no tree).
    std::mutex sequence_;
    std::atomic<std::uint64_t> appliedSeq_{0}; // the commit id of the last write applied in memory

    std::atomic<std::uint64_t> failed_{0};
    // Rule 10: held by a verified write from its verification to its final pass, and by
    // addVerifier/removeVerifier; taken before the tree lock, never under it.
    std::mutex verifySerial_;
    // revokeReadLease(): when (steady clock) the read lease was last revoked.
    std::atomic<std::chrono::steady_clock::rep> leaseRevoked_{0};
    detail::Publisher publisher_{options_.maxUnpublished}; // outlives the writer, which feeds it
    // Owned by writer_; readJournal(), backup() and integrityCheck() may be called from any thread.
    detail::Backend* backend_ = nullptr;
    std::unique_ptr<detail::Writer> writer_; // last: stopped (drained) first
};

std::unique_ptr<Store> Store::open(const ly_ctx* ctx, const StoreOptions& options) {
    return std::unique_ptr<Store>(new Store(std::make_unique<StoreImpl>(ctx, options)));
}

Store::Store(std::unique_ptr<StoreImpl> impl) : impl_(std::move(impl)) {}
Store::~Store() = default;

std::uint64_t Store::read(Datastore ds, const std::function<void(const lyd_node*)>& fn) const {
    return impl_->read(ds, fn);
}
void Store::revokeReadLease() {
    impl_->revokeReadLease();
}
Tree Store::snapshot(Datastore ds) const {
    return impl_->snapshot(ds);
}

WriteTiming Store::edit(const WriteContext& who, Datastore ds, const lyd_node* edit,
                        const EditOptions& options) {
    return impl_->verified(
        ds, [&](VerifyState* vs) { return impl_->edit(who, ds, edit, options, vs); },
        [&] { return impl_->runningAfterEdit(edit, options.defaultOperation); });
}

namespace {
/// replace(), copy() and clear(): the new content, whole.
WriteTiming replaceWith(StoreImpl& impl, const WriteContext& who, Datastore ds, Tree content, Origin origin) {
    return impl.verified(
        ds, [&](VerifyState* vs) { return impl.replace(who, ds, content, origin, vs); },
        [&] { return detail::dupForest(content.get()); });
}
} // namespace

WriteTiming Store::replace(const WriteContext& who, Datastore ds, const lyd_node* config) {
    return replaceWith(*impl_, who, ds, detail::dupForest(config), Origin::Replace);
}

WriteTiming Store::copy(const WriteContext& who, Datastore from, Datastore to) {
    if (from == to) {
        return {};
    }
    return replaceWith(*impl_, who, to, impl_->snapshot(from), Origin::Copy);
}

WriteTiming Store::clear(const WriteContext& who, Datastore ds) {
    return replaceWith(*impl_, who, ds, Tree{}, Origin::Clear);
}

void Store::validate(Datastore ds) const {
    Tree copy = impl_->snapshot(ds);
    impl_->validateTree(copy);
}

void Store::validate(const lyd_node* config) const {
    Tree copy = detail::dupForest(config);
    impl_->validateTree(copy);
}

WriteTiming Store::commit(const WriteContext& who) {
    return impl_->verified(
        Datastore::Running, [&](VerifyState* vs) { return impl_->commit(who, vs); },
        [&] { return impl_->snapshot(Datastore::Candidate); });
}

void Store::addVerifier(Verifier& verifier, int priority) {
    impl_->addVerifier(verifier, priority);
}
void Store::removeVerifier(Verifier& verifier) {
    impl_->removeVerifier(verifier);
}
void Store::discardChanges(const WriteContext& who) {
    impl_->discardChanges(who);
}
LockOutcome Store::lock(Datastore ds, std::uint32_t session) {
    return impl_->lock(ds, session);
}
UnlockResult Store::unlock(Datastore ds, std::uint32_t session) {
    return impl_->unlock(ds, session);
}
std::vector<Datastore> Store::releaseSession(std::uint32_t session) {
    return impl_->releaseSession(session);
}
std::vector<LockInfo> Store::locks() const {
    return impl_->locks();
}
bool Store::candidateModified() const {
    return impl_->candidateModified();
}

void backupStore(const std::filesystem::path& file, const std::filesystem::path& dest) {
    detail::backupFile(file, dest);
}

void backupStore(const DqliteStoreOptions& cluster, const std::filesystem::path& dest) {
    StoreOptions options;
    options.dqlite = cluster;
    options.dqlite->reader = true;
    detail::openBackend(options)->backup(dest);
}

void Store::backup(const std::filesystem::path& dest) const {
    impl_->backend_->backup(dest);
}

std::string Store::integrityCheck() const {
    return impl_->backend_->integrityCheck();
}

std::uint64_t Store::addListener(ChangeListener& listener) {
    return impl_->addListener(listener);
}
void Store::removeListener(ChangeListener& listener) {
    impl_->removeListener(listener);
}

void Store::addJournal(const std::string& name, JournalHook hook) {
    impl_->addJournal(name, std::move(hook));
}
void Store::readJournal(const std::string& name, std::uint64_t after,
                        const std::function<void(const JournalRow&)>& fn) const {
    impl_->backend_->readJournal(name, after, fn);
}
void Store::trimJournal(const std::string& name, std::uint64_t through) {
    impl_->trimJournal(name, through);
}
std::uint64_t Store::appendJournal(const std::string& name, std::string row) {
    return impl_->queueJournal(name, std::move(row), detail::Writer::Waiter::None).first;
}
std::uint64_t Store::appendJournalDurable(const std::string& name, std::string row) {
    auto [id, durable] = impl_->queueJournal(name, std::move(row), detail::Writer::Waiter::Caller);
    durable.wait(); // outside the tree lock: throws Error when the transaction failed
    return id;
}

Stats Store::stats() const {
    return impl_->stats();
}
const ly_ctx* Store::context() const {
    return impl_->ctx_;
}

} // namespace ncstore::ds
