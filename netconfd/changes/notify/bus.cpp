#include "bus.hpp"

#include <algorithm>

namespace ncstore::netconfd::notify {

std::vector<EventPtr> Subscription::take() {
    std::lock_guard lock(mutex_);
    std::vector<EventPtr> out(std::make_move_iterator(queue_.begin()), std::make_move_iterator(queue_.end()));
    queue_.clear();
    bytes_ = 0;
    return out;
}

bool Subscription::overflowed() const {
    std::lock_guard lock(mutex_);
    return overflowed_;
}

void Subscription::offer(const std::vector<EventPtr>& events) {
    bool wake = false;
    bool overflow = false;
    {
        std::lock_guard lock(mutex_);
        if (overflowed_) {
            return;
        }
        const bool wasEmpty = queue_.empty();
        for (const auto& event : events) {
            if (queue_.size() >= maxEvents_ || bytes_ + event->bytes() > maxBytes_) {
                overflowed_ = overflow = true;
                break;
            }
            queue_.push_back(event);
            bytes_ += event->bytes();
        }
        wake = overflow || (wasEmpty && !queue_.empty());
    }
    if (wake && wake_) {
        wake_(overflow);
    }
}

void Subscription::fail() {
    {
        std::lock_guard lock(mutex_);
        if (overflowed_) {
            return;
        }
        overflowed_ = true;
    }
    if (wake_) {
        wake_(true);
    }
}

std::shared_ptr<Subscription> Bus::subscribe(std::size_t maxEvents, std::size_t maxBytes,
                                             Subscription::Wake wake) {
    auto s = std::make_shared<Subscription>(maxEvents, maxBytes, std::move(wake));
    std::lock_guard lock(mutex_);
    subscriptions_.push_back(s);
    return s;
}

void Bus::unsubscribe(const Subscription* s) {
    std::lock_guard lock(mutex_);
    std::erase_if(subscriptions_, [s](const auto& p) { return p.get() == s; });
}

void Bus::publish(const std::vector<EventPtr>& events) {
    if (events.empty()) {
        return;
    }
    // Offered under the bus lock: a subscription is either in the list for all the events or
    // for none, and unsubscribe() returns only once no offer to it is running.
    std::lock_guard lock(mutex_);
    lastId_ = std::max(lastId_, events.back()->id);
    for (const auto& s : subscriptions_) {
        s->offer(events);
    }
}

void Bus::failAll() {
    std::lock_guard lock(mutex_);
    for (const auto& s : subscriptions_) {
        s->fail();
    }
}

std::uint64_t Bus::lastId() const {
    std::lock_guard lock(mutex_);
    return lastId_;
}

std::size_t Bus::subscriptions() const {
    std::lock_guard lock(mutex_);
    return subscriptions_.size();
}

} // namespace ncstore::netconfd::notify
