#include "writer.hpp"

#include "ncstore/log.hpp"

#include <SQLiteCpp/Exception.h>

namespace ncstore::ds::detail {

Writer::Writer(std::unique_ptr<Persistence> persistence, std::size_t maxBatchChangeSets,
               std::size_t maxBatchBytes, FailureHandler onFailure)
    : persistence_(std::move(persistence)), maxBatch_(std::max<std::size_t>(1, maxBatchChangeSets)),
      maxBytes_(maxBatchBytes), onFailure_(std::move(onFailure)), checkpointer_(persistence_->file()),
      thread_([this] { loop(); }), checkpointThread_([this] { checkpointLoop(); }) {}

Writer::~Writer() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
    {
        std::lock_guard lock(checkpointMutex_);
        checkpointStop_ = true;
    }
    checkpointWake_.notify_all();
    checkpointThread_.join();
}

std::future<void> Writer::submit(ChangeSet changeSet) {
    auto pending = std::make_unique<Pending>();
    pending->changeSet = std::move(changeSet);
    auto future = pending->done.get_future();
    {
        std::lock_guard lock(mutex_);
        if (stopping_) {
            throw Error(ErrorTag::OperationFailed, "the datastore is shutting down");
        }
        queue_.push_back(std::move(pending));
    }
    wake_.notify_one();
    return future;
}

void Writer::maybeCheckpoint() {
    constexpr std::uint64_t kThreshold = 1u << 20;
    pendingCheckpointBytes_ += persistence_->takeBytesSinceCheckpoint();
    if (pendingCheckpointBytes_ < kThreshold) {
        return;
    }
    pendingCheckpointBytes_ = 0;
    {
        std::lock_guard lock(checkpointMutex_);
        checkpointWanted_ = true;
    }
    checkpointWake_.notify_one();
}

void Writer::checkpointLoop() {
    for (;;) {
        {
            std::unique_lock lock(checkpointMutex_);
            checkpointWake_.wait(lock, [this] { return checkpointWanted_ || checkpointStop_; });
            if (checkpointStop_) {
                return;
            }
            checkpointWanted_ = false;
        }
        try {
            checkpointer_.checkpoint();
        } catch (const std::exception& e) {
            NCS_LOG(warning) << "datastore: WAL checkpoint failed (retried after the next commits): "
                             << e.what();
        }
    }
}

Stats Writer::stats() const {
    std::lock_guard lock(mutex_);
    return stats_;
}

void Writer::loop() {
    for (;;) {
        std::vector<std::unique_ptr<Pending>> batch;
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
            if (queue_.empty()) {
                return; // stopping and drained
            }
            // Group commit: everything pending now, up to the bounds, in one transaction.
            std::size_t bytes = 0;
            while (!queue_.empty() && batch.size() < maxBatch_ &&
                   (batch.empty() || bytes + queue_.front()->changeSet.bytes() <= maxBytes_)) {
                bytes += queue_.front()->changeSet.bytes();
                batch.push_back(std::move(queue_.front()));
                queue_.pop_front();
            }
        }
        std::vector<const ChangeSet*> sets;
        sets.reserve(batch.size());
        std::uint64_t bytes = 0;
        for (const auto& p : batch) {
            sets.push_back(&p->changeSet);
            bytes += p->changeSet.bytes();
        }
        try {
            auto [written, deleted] = persistence_->apply(sets);
            {
                std::lock_guard lock(mutex_);
                stats_.writes += batch.size();
                stats_.transactions += 1;
                stats_.recordsWritten += written;
                stats_.recordsDeleted += deleted;
                stats_.bytesWritten += bytes;
                stats_.maxBatch = std::max<std::uint64_t>(stats_.maxBatch, batch.size());
            }
            for (auto& p : batch) {
                p->done.set_value();
            }
            maybeCheckpoint();
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
                onFailure_(*persistence_, drain);
            } catch (const std::exception& reloadError) {
                NCS_LOG(fatal) << "datastore could not reload after a failed commit: " << reloadError.what();
            }
            {
                std::lock_guard lock(mutex_);
                stats_.failedWrites += batch.size();
            }
            for (auto& p : batch) {
                p->done.set_exception(error);
            }
        }
    }
}

} // namespace ncstore::ds::detail
