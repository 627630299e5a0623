#include "publisher.hpp"

#include "ncstore/log.hpp"
#include "ncstore/threadname.hpp"

#include <algorithm>

namespace ncstore::ds::detail {

Publisher::Publisher(std::size_t maxUnpublished)
    : maxUnpublished_(std::max<std::size_t>(1, maxUnpublished)), thread_([this] { loop(); }) {}

Publisher::~Publisher() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
}

void Publisher::add(ChangeListener* listener, std::uint64_t after) {
    std::lock_guard lock(mutex_);
    subscribers_.push_back({listener, after});
    listening_ = true;
}

void Publisher::remove(ChangeListener* listener) {
    {
        std::lock_guard lock(mutex_);
        std::erase_if(subscribers_, [&](const Subscriber& s) { return s.listener == listener; });
        listening_ = !subscribers_.empty();
    }
    std::lock_guard wait(delivering_); // a delivery that still had it in its copy ends first
}

void Publisher::publish(std::vector<std::shared_ptr<const ChangeSet>> changes) {
    {
        std::lock_guard lock(mutex_);
        for (auto& c : changes) {
            if (queue_.size() >= maxUnpublished_) {
                lostThrough_ = queue_.front()->commitId;
                queue_.pop_front();
                ++dropped_;
            }
            queue_.push_back(std::move(c));
        }
    }
    wake_.notify_one();
}

std::uint64_t Publisher::dropped() const {
    std::lock_guard lock(mutex_);
    return dropped_;
}

void Publisher::loop() {
    nameThisThread("ncs-publisher");
    for (;;) {
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
            if (queue_.empty()) {
                return; // stopping, and everything delivered
            }
        }
        // Everything queued now, in one go: one wake-up for many commits.
        std::lock_guard delivery(delivering_);
        std::deque<std::shared_ptr<const ChangeSet>> batch;
        std::uint64_t lost = 0;
        std::vector<Subscriber> subscribers;
        {
            std::lock_guard lock(mutex_);
            batch.swap(queue_);
            lost = std::exchange(lostThrough_, 0);
            subscribers = subscribers_;
        }
        // Listener by listener, each with its part of the batch in one call.
        std::vector<std::shared_ptr<const ChangeSet>> mine;
        for (const Subscriber& s : subscribers) {
            mine.clear();
            for (const auto& next : batch) {
                if (next->commitId > s.after) {
                    mine.push_back(next);
                }
            }
            try {
                if (lost > s.after) {
                    s.listener->lost(lost);
                }
                if (!mine.empty()) {
                    s.listener->publishedBatch(mine);
                }
            } catch (const std::exception& e) {
                NCS_LOG(error) << "datastore: a change listener failed on "
                               << (mine.empty() ? std::string("lost change sets")
                                                : "commits " + std::to_string(mine.front()->commitId) + ".." +
                                                      std::to_string(mine.back()->commitId))
                               << ": " << e.what();
            }
        }
    }
}

} // namespace ncstore::ds::detail
