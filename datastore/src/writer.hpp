// The one thread that writes SQLite: group commit of every change set pending at a time.
// Private to the datastore.
#pragma once

#include "persistence.hpp"

#include <condition_variable>
#include <deque>
#include <exception>
#include <future>
#include <mutex>
#include <thread>

namespace ncstore::ds::detail {

class Writer {
public:
    /// Called on the writer thread after a transaction failed and was rolled back. The handler
    /// must, while no write can reach memory, call `drain` (which takes every change set still
    /// queued: they are failed too) and put memory back to what SQLite holds.
    using FailureHandler = std::function<void(Persistence&, const std::function<void()>& drain)>;

    Writer(std::unique_ptr<Persistence> persistence, std::size_t maxBatchChangeSets,
           std::size_t maxBatchBytes, FailureHandler onFailure);
    /// Drains the queue (every submitted change set is committed or failed), then stops.
    ~Writer();

    /// Queues a change set; the future is ready once it is durable, or holds the error.
    std::future<void> submit(ChangeSet changeSet);

    Stats stats() const;

private:
    struct Pending {
        ChangeSet changeSet;
        std::promise<void> done;
    };
    void loop();
    void maybeCheckpoint();
    void checkpointLoop();

    std::unique_ptr<Persistence> persistence_;
    std::size_t maxBatch_;
    std::size_t maxBytes_;
    FailureHandler onFailure_;
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::unique_ptr<Pending>> queue_;
    bool stopping_ = false;
    Stats stats_;
    std::uint64_t pendingCheckpointBytes_ = 0; // writer thread only
    Checkpointer checkpointer_;
    std::mutex checkpointMutex_;
    std::condition_variable checkpointWake_;
    bool checkpointWanted_ = false;
    bool checkpointStop_ = false;
    std::thread thread_;
    std::thread checkpointThread_;
};

} // namespace ncstore::ds::detail
