// The one writer of the backend (backend.hpp): group commit of every change set pending at a time, one batch
// at a time. Private to the datastore.
//
// Who commits: the turn to commit the next batch goes to the submitter of the change set at the
// head of the queue when that submitter waits for it (Ticket::wait(), a write that answers its
// client once durable), else to the writer thread. A lone session's commit thus runs on its own
// thread, with no hand-off to the writer thread and back (two wake-ups and context switches per
// commit); with many sessions, the one whose write is first commits everybody's pending ones, the
// others sleep until theirs is resolved. Exactly one turn is held or given at any time.
//
// The rules it keeps are numbered in ncstore/datastore.hpp:
//  - its queue lock (mutex_) comes after the store's tree lock, never before (rule 1): submit()
//    is called under the tree lock; reserve() and Ticket::wait() before or after it, never
//    under it; the failure handler takes the tree lock on whichever thread holds the turn,
//    holding no writer lock;
//  - change sets are committed in the order they were submitted, batched (rule 4), published
//    once durable (rule 5), failed together with everything queued after them (rule 7);
//  - slots bound the writes not yet durable and the bytes queued (rule 8).
#pragma once

#include "backend.hpp"
#include "publisher.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace ncstore::ds::detail {

class Writer {
public:
    /// Called by the holder of the turn after a transaction failed and was rolled back. The handler
    /// must, while no write can reach memory, call `drain` (which takes every change set still
    /// queued: they are failed too) and put memory back to what SQLite holds. `firstFailed` is
    /// the sequence number of the first failed write: every later one failed too.
    using FailureHandler =
        std::function<void(Backend&, const std::function<void()>& drain, std::uint64_t firstFailed)>;

    /// Bounds from `options`: maxBatchChangeSets / maxBatchBytes per transaction,
    /// maxQueuedWrites / maxQueuedBytes for the queue (see reserve()).
    Writer(std::unique_ptr<Backend> backend, const StoreOptions& options, Publisher& publisher,
           FailureHandler onFailure);
    /// Drains the queue (every submitted change set is committed or failed), then stops.
    ~Writer();

    /// Room for one write in the queue, taken before the write takes the store's lock and given
    /// back when the write is durable or failed, or when the slot is dropped unused.
    class Slot {
    public:
        Slot() = default;
        Slot(Slot&& other) noexcept : writer_(std::exchange(other.writer_, nullptr)) {}
        Slot& operator=(Slot&&) = delete;
        ~Slot() {
            if (writer_) {
                writer_->release(1, 0);
            }
        }

    private:
        friend class Writer;
        explicit Slot(Writer* writer) : writer_(writer) {}
        Writer* writer_ = nullptr;
    };
    /// Back-pressure: waits while maxQueuedWrites writes hold slots, or while the queued change
    /// sets hold maxQueuedBytes (a single write of any size still goes through alone).
    Slot reserve();

    struct Pending;
    /// A submitted change set. wait() returns once it is durable and throws Error when its
    /// transaction failed; a ticket dropped without wait() leaves its change set to the writer
    /// thread (it is committed all the same).
    class Ticket {
    public:
        Ticket() = default;
        Ticket(Ticket&& other) noexcept
            : writer_(std::exchange(other.writer_, nullptr)), pending_(std::move(other.pending_)) {}
        Ticket& operator=(Ticket&& other) noexcept;
        ~Ticket() { drop(); }
        bool valid() const { return pending_ != nullptr; }
        /// Blocks until the change set is resolved, committing the batch it is in (and the
        /// batches before it, when their turn comes to this thread). Not under the tree lock.
        void wait();

    private:
        friend class Writer;
        Ticket(Writer* writer, std::shared_ptr<Pending> pending)
            : writer_(writer), pending_(std::move(pending)) {}
        void drop() noexcept;
        Writer* writer_ = nullptr;
        std::shared_ptr<Pending> pending_;
    };
    /// Whether the submitter will wait for the change set (and may then commit it itself).
    enum class Waiter { Caller, None };

    /// Queues a change set. `records.commitId` numbers the writes in the order they were
    /// applied in memory, which is the order they are submitted in (0: not a datastore write).
    /// Once durable, `changes` (may be null) goes to the publisher. Throws Error when the writer
    /// is out of service.
    Ticket submit(Slot slot, RecordSet records, std::shared_ptr<const ChangeSet> changes,
                  Waiter waiter = Waiter::Caller);

    /// Counts the failed transactions: a reader notes it with what it read.
    std::uint64_t failureGeneration() const { return failures_.load(std::memory_order_acquire); }
    /// Waits until every write up to `seq` is durable (true), or a transaction failed since the
    /// reader noted `generation` (false: what it read may have held failed writes).
    bool waitDurable(std::uint64_t seq, std::uint64_t generation) const;

    /// When the transaction that committed last was begun (the clock's epoch when none did yet).
    /// On dqlite that commit reached a majority, so this node led its cluster at that moment.
    std::chrono::steady_clock::time_point lastCommitBegun() const {
        return std::chrono::steady_clock::time_point(
            std::chrono::steady_clock::duration(lastCommitBegun_.load(std::memory_order_acquire)));
    }

    /// Throws Error(OperationFailed) once the failure handler itself failed: memory may then hold
    /// writes that are not on disk, and that state is final until the store is opened again.
    void checkInService() const {
        if (outOfService_.load(std::memory_order_acquire)) {
            throwOutOfService();
        }
    }

    Stats stats() const;

    /// One queued change set; its fields below `changes` are guarded by the queue lock.
    struct Pending {
        RecordSet records;
        std::shared_ptr<const ChangeSet> changes;
        bool byCaller = false; ///< a caller waits in Ticket::wait() and takes the turn when given
        bool lead = false;     ///< the turn was given to that caller
        bool resolved = false;
        std::exception_ptr error;   ///< set when its transaction failed
        std::condition_variable cv; ///< its caller waits here for `resolved` or `lead`
    };

private:
    using Batch = std::vector<std::shared_ptr<Pending>>;
    /// Every write up to `seq` is resolved (durable, or failed and gone from memory).
    void resolved(std::uint64_t seq, bool failed);
    void loop();
    /// Commits the next batch, for the holder of the turn; then gives the turn on (handOff).
    /// Called and returns with `lock` held; releases it meanwhile.
    void takeTurn(std::unique_lock<std::mutex>& lock);
    /// The turn goes to the head of the queue's caller or to the writer thread, or is
    /// released when nothing is queued. Under the queue lock.
    void handOff();
    /// Commits `batch`, whose change sets hold `bytes` (durable or failed, every ticket of it
    /// resolved). Without the queue lock.
    void commit(Batch& batch, std::size_t bytes);
    /// Resolves the tickets of `batch` (failed with `error` unless null). Takes the queue lock.
    void finish(Batch& batch, const std::exception_ptr& error);
    bool full() const {
        return inFlight_ >= maxQueued_ || (queuedBytes_ >= maxQueuedBytes_ && inFlight_ > 0);
    }
    void release(std::size_t writes, std::size_t bytes);
    [[noreturn]] void throwOutOfService() const;

    // The holder of the turn only (the failure handler runs there too).
    std::unique_ptr<Backend> backend_;
    // Set at construction.
    std::size_t maxBatch_;
    std::size_t maxBytes_;
    std::size_t maxQueued_;
    std::size_t maxQueuedBytes_;
    Publisher& publisher_;
    FailureHandler onFailure_;

    // The queue lock: guards everything down to stats_.
    mutable std::mutex mutex_;
    std::condition_variable wake_; // the writer thread: its turn, or stopping_
    std::deque<std::shared_ptr<Pending>> queue_;
    bool turnTaken_ = false;  // a batch is being committed, or the turn was given to someone
    bool threadTurn_ = false; // ... to the writer thread
    bool stopping_ = false;
    std::size_t inFlight_ = 0;    // slots taken (rule 8)
    std::size_t queuedBytes_ = 0; // of the change sets submitted and not resolved
    std::condition_variable room_;
    std::uint64_t durableSeq_ = 0;                   // commit id up to which writes are resolved
    mutable std::condition_variable durableChanged_; // durableSeq_ or failures_ changed
    std::atomic<std::uint64_t> failures_{0};         // read without the lock, changed under it
    std::atomic<bool> outOfService_{false};          // read without the lock, set once under it
    std::atomic<std::chrono::steady_clock::rep> lastCommitBegun_{0}; // the turn's holder writes it
    std::string outOfServiceReason_;                                 // set once, before outOfService_
    Stats stats_;
    std::thread thread_;
};

} // namespace ncstore::ds::detail
