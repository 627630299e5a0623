#include "writer.hpp"

#include "syncpoint.hpp"

#include "ncstore/log.hpp"
#include "ncstore/threadname.hpp"

#include <chrono>

namespace ncstore::ds::detail {

Writer::Writer(std::unique_ptr<Backend> backend, const StoreOptions& options, Publisher& publisher,
               FailureHandler onFailure)
    : backend_(std::move(backend)), maxBatch_(std::max<std::size_t>(1, options.maxBatchChangeSets)),
      maxBytes_(options.maxBatchBytes), maxQueued_(std::max<std::size_t>(1, options.maxQueuedWrites)),
      maxQueuedBytes_(options.maxQueuedBytes), publisher_(publisher), onFailure_(std::move(onFailure)),
      durableSeq_(backend_->lastCommitId()), thread_([this] { loop(); }) {}

Writer::~Writer() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
}

Writer::Slot Writer::reserve() {
    std::unique_lock lock(mutex_);
    if (full()) {
        ++stats_.queueFullWaits;
        lock.unlock();
        NCS_SYNC_POINT("writer:queue-full");
        lock.lock();
        room_.wait(lock, [this] { return !full() || stopping_; });
    }
    ++inFlight_;
    return Slot(this);
}

void Writer::release(std::size_t writes, std::size_t bytes) {
    {
        std::lock_guard lock(mutex_);
        inFlight_ -= writes;
        queuedBytes_ -= bytes;
    }
    room_.notify_all();
}

Writer::Ticket Writer::submit(Slot slot, RecordSet records, std::shared_ptr<const ChangeSet> changes,
                              Waiter waiter) {
    auto pending = std::make_shared<Pending>();
    pending->records = std::move(records);
    pending->changes = std::move(changes);
    pending->byCaller = waiter == Waiter::Caller;
    {
        std::lock_guard lock(mutex_);
        if (stopping_) {
            throw Error(ErrorTag::OperationFailed, "the datastore is shutting down");
        }
        checkInService();
        queuedBytes_ += pending->records.bytes();
        queue_.push_back(pending);
        slot.writer_ = nullptr; // given back when the write is resolved
        if (!turnTaken_) {
            handOff(); // to this caller (nobody to wake: it commits in wait()), or the thread
        }
    }
    return Ticket(this, std::move(pending));
}

Writer::Ticket& Writer::Ticket::operator=(Ticket&& other) noexcept {
    if (this != &other) {
        drop();
        writer_ = std::exchange(other.writer_, nullptr);
        pending_ = std::move(other.pending_);
    }
    return *this;
}

void Writer::Ticket::wait() {
    Writer& w = *writer_;
    std::unique_lock lock(w.mutex_);
    while (!pending_->resolved) {
        if (pending_->lead) {
            pending_->lead = false;
            w.takeTurn(lock);
            continue;
        }
        pending_->cv.wait(lock);
    }
    pending_->byCaller = false;
    const std::exception_ptr error = pending_->error;
    lock.unlock();
    writer_ = nullptr;
    pending_.reset();
    if (error) {
        std::rethrow_exception(error);
    }
}

void Writer::Ticket::drop() noexcept {
    if (!pending_) {
        return;
    }
    // Nobody will wait for it: the turn, if it has it or gets it, is the writer thread's.
    std::lock_guard lock(writer_->mutex_);
    pending_->byCaller = false;
    if (pending_->lead) {
        pending_->lead = false;
        writer_->threadTurn_ = true;
        writer_->wake_.notify_one();
    }
    pending_.reset();
}

void Writer::handOff() {
    if (queue_.empty()) {
        turnTaken_ = false;
        if (stopping_) {
            wake_.notify_one(); // the thread waits for the last turn to end before it stops
        }
        return;
    }
    turnTaken_ = true;
    const auto& next = queue_.front();
    if (next->byCaller) {
        next->lead = true;
        next->cv.notify_one();
    } else {
        threadTurn_ = true;
        wake_.notify_one();
    }
}

bool Writer::waitDurable(std::uint64_t seq, std::uint64_t generation) const {
    std::unique_lock lock(mutex_);
    durableChanged_.wait(lock, [&] { return durableSeq_ >= seq || failures_.load() != generation; });
    return failures_.load() == generation;
}

void Writer::resolved(std::uint64_t seq, bool failed) {
    {
        std::lock_guard lock(mutex_);
        durableSeq_ = std::max(durableSeq_, seq);
        if (failed) {
            failures_.fetch_add(1, std::memory_order_acq_rel);
        }
    }
    durableChanged_.notify_all();
}

void Writer::throwOutOfService() const {
    throw Error(ErrorTag::OperationFailed, outOfServiceReason_);
}

Stats Writer::stats() const {
    std::lock_guard lock(mutex_);
    return stats_;
}

void Writer::loop() {
    nameThisThread("ncs-writer");
    std::unique_lock lock(mutex_);
    for (;;) {
        wake_.wait(lock, [this] { return threadTurn_ || (stopping_ && !turnTaken_ && queue_.empty()); });
        if (!threadTurn_) {
            return; // stopping, and every change set resolved
        }
        threadTurn_ = false;
        takeTurn(lock);
    }
}

void Writer::takeTurn(std::unique_lock<std::mutex>& lock) {
    // Group commit: everything pending now, up to the bounds, in one transaction.
    Batch batch;
    std::size_t bytes = 0;
    while (!queue_.empty() && batch.size() < maxBatch_ &&
           (batch.empty() || bytes + queue_.front()->records.bytes() <= maxBytes_)) {
        bytes += queue_.front()->records.bytes();
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
    }
    lock.unlock();
    try {
        commit(batch, bytes);
        backend_->afterCommit();
    } catch (...) {
        lock.lock();
        handOff(); // whatever happened, the next batch still gets its turn
        throw;
    }
    lock.lock();
    handOff();
}

void Writer::commit(Batch& batch, std::size_t bytes) {
    std::vector<const RecordSet*> sets;
    sets.reserve(batch.size());
    for (const auto& p : batch) {
        sets.push_back(&p->records);
    }
    try {
        NCS_SYNC_POINT("writer:committing");
        const auto begun = std::chrono::steady_clock::now();
        auto [written, deleted] = backend_->apply(sets);
        lastCommitBegun_.store(begun.time_since_epoch().count(), std::memory_order_release);
        {
            std::lock_guard lock(mutex_);
            stats_.writes += batch.size();
            stats_.transactions += 1;
            stats_.recordsWritten += written;
            stats_.recordsDeleted += deleted;
            stats_.bytesWritten += bytes;
            stats_.maxBatch = std::max<std::uint64_t>(stats_.maxBatch, batch.size());
        }
        std::uint64_t last = 0;
        std::vector<std::shared_ptr<const ChangeSet>> published;
        for (auto& p : batch) {
            last = std::max(last, p->records.commitId);
            if (p->changes) {
                published.push_back(std::move(p->changes));
            }
        }
        if (!published.empty()) {
            publisher_.publish(std::move(published));
        }
        resolved(last, false);
        release(batch.size(), bytes);
        finish(batch, nullptr);
    } catch (const std::exception& e) {
        NCS_LOG(error) << "datastore commit of " << batch.size() << " change sets failed: " << e.what();
        auto error = std::make_exception_ptr(
            Error(ErrorTag::OperationFailed, std::string("the datastore could not commit: ") + e.what()));
        // Everything queued after the failed batch was applied in memory on top of it: the
        // store drains it (under its tree lock, so nothing new slips in) and reloads memory
        // from what SQLite holds; then all of it fails.
        auto drain = [&] {
            std::lock_guard lock(mutex_);
            while (!queue_.empty()) {
                batch.push_back(std::move(queue_.front()));
                queue_.pop_front();
            }
        };
        try {
            std::uint64_t firstFailed = 0;
            {
                std::lock_guard lock(mutex_);
                firstFailed = durableSeq_ + 1; // every write after the last durable one failed
            }
            onFailure_(*backend_, drain, firstFailed);
        } catch (const std::exception& reloadError) {
            // Memory may still hold the failed writes: refuse everything from now on.
            std::lock_guard lock(mutex_);
            outOfServiceReason_ = "the datastore is out of service: after a failed commit (" +
                                  std::string(e.what()) + ") memory could not be reloaded from " +
                                  backend_->describe() + " (" + reloadError.what() +
                                  "); restart the server to load what is on disk";
            outOfService_.store(true, std::memory_order_release);
            NCS_LOG(fatal) << outOfServiceReason_;
            while (!queue_.empty()) {
                batch.push_back(std::move(queue_.front()));
                queue_.pop_front();
            }
        }
        {
            std::lock_guard lock(mutex_);
            stats_.failedWrites += batch.size();
        }
        // Memory was reloaded: it holds only what is durable.
        std::uint64_t last = 0;
        std::size_t failedBytes = 0;
        for (const auto& p : batch) {
            last = std::max(last, p->records.commitId);
            failedBytes += p->records.bytes();
        }
        resolved(last, true);
        release(batch.size(), failedBytes);
        finish(batch, error);
    }
}

void Writer::finish(Batch& batch, const std::exception_ptr& error) {
    std::lock_guard lock(mutex_);
    for (auto& p : batch) {
        p->error = error;
        p->resolved = true;
        p->cv.notify_one();
    }
}

} // namespace ncstore::ds::detail
