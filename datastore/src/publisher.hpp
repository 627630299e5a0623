// Hands durable change sets to the registered listeners (ncstore/changes.hpp), in commit order,
// on a thread of its own. Private to the datastore.
//
// Promises:
//  - publish() never waits for a listener: the commit path only queues (once per transaction).
//  - Each listener gets every change set published after it was added whose commit id is above
//    the id it was added with, once, in commit order; or, when more than `maxUnpublished`
//    change sets wait in the queue, lost() for the ones dropped, before the next changed().
//  - After remove() returns, the listener is not called again (remove() waits for a delivery
//    to it in progress: a listener must not remove itself from its own callback).
#pragma once

#include "ncstore/changes.hpp"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace ncstore::ds::detail {

class Publisher {
public:
    explicit Publisher(std::size_t maxUnpublished);
    /// Delivers what is queued, then stops.
    ~Publisher();
    Publisher(const Publisher&) = delete;
    Publisher& operator=(const Publisher&) = delete;

    /// `listener` gets the change sets with commit ids above `after`.
    void add(ChangeListener* listener, std::uint64_t after);
    void remove(ChangeListener* listener);
    /// The change sets of one transaction, in commit order (one wake-up of the publisher).
    void publish(std::vector<std::shared_ptr<const ChangeSet>> changes);
    /// Whether any listener is registered (cheap: the commit path asks it).
    bool listening() const { return listening_.load(std::memory_order_acquire); }
    /// Change sets dropped because the queue was full.
    std::uint64_t dropped() const;

private:
    struct Subscriber {
        ChangeListener* listener;
        std::uint64_t after;
    };
    void loop();

    const std::size_t maxUnpublished_;
    mutable std::mutex mutex_; // guards everything below but delivering_
    std::condition_variable wake_;
    std::deque<std::shared_ptr<const ChangeSet>> queue_;
    std::uint64_t lostThrough_ = 0; // commit id of the last change set dropped, 0: none
    std::uint64_t dropped_ = 0;
    std::vector<Subscriber> subscribers_;
    bool stopping_ = false;
    std::atomic<bool> listening_{false};
    std::mutex delivering_; // held while listeners run; remove() waits on it
    std::thread thread_;    // last: started once everything above exists
};

} // namespace ncstore::ds::detail
