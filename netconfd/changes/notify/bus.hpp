// Live delivery of events to subscribed sessions, off every other path.
//
// Promises:
//  - publish() never blocks on a subscriber and never waits for I/O: it appends a shared pointer
//    to each subscription's bounded queue and wakes the subscriber only when its queue was empty
//    (once for all the events of one call). Its cost is O(subscriptions) pointer copies per
//    event, whatever the event's size.
//  - A subscription whose queue is full when an event arrives is over (overflowed()): it gets no
//    further events, so a subscriber that cannot keep up costs bounded memory and slows nobody;
//    its session ends it and says why. What it missed is in the replay log.
//  - Events reach every subscription in publish() order; publish() is called in event-id order
//    (the store's commit order), so ids increase along every queue.
//  - Thread-safe: publish() from the publisher thread, take() from the subscriber's own thread,
//    subscribe()/unsubscribe() from any.
#pragma once

#include "ncstore/changes.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace ncstore::netconfd::notify {

/// One event of the NETCONF stream, as logged and sent.
struct Event {
    std::uint64_t id = 0; ///< position in the stream (the commit id of its journal entry)
    std::chrono::system_clock::time_point time;
    std::string content; ///< the event's XML element (events.hpp)
    /// The durable change of data the event describes (a netconf-config-change's change set),
    /// shared with the store's publisher: what YANG-Push subscribers read. Null for other events,
    /// for events read back from the log, and while nobody follows changes (Service::follow()).
    std::shared_ptr<const ds::ChangeSet> changes;
    /// About what `changes` holds in memory, counted in a queue's bytes with the content.
    std::size_t changesBytes = 0;

    std::size_t bytes() const { return content.size() + changesBytes; }
};
using EventPtr = std::shared_ptr<const Event>;

class Subscription {
public:
    /// `wake(overflowed)` is called (from the publisher thread) when an event lands in an empty
    /// queue (false) or the queue overflows (true); quick, and never calling back into the bus.
    using Wake = std::function<void(bool overflowed)>;
    Subscription(std::size_t maxEvents, std::size_t maxBytes, Wake wake)
        : maxEvents_(maxEvents), maxBytes_(maxBytes), wake_(std::move(wake)) {}

    /// The events queued so far, oldest first (emptied).
    std::vector<EventPtr> take();
    /// The queue overflowed: no event after the ones take() returns will come.
    bool overflowed() const;

private:
    friend class Bus;
    void offer(const std::vector<EventPtr>& events);
    void fail();

    const std::size_t maxEvents_;
    const std::size_t maxBytes_;
    const Wake wake_;
    mutable std::mutex mutex_;
    std::deque<EventPtr> queue_;
    std::size_t bytes_ = 0;
    bool overflowed_ = false;
};

class Bus {
public:
    /// A new subscription receiving every event published after this call.
    std::shared_ptr<Subscription> subscribe(std::size_t maxEvents, std::size_t maxBytes,
                                            Subscription::Wake wake);
    void unsubscribe(const Subscription* s);
    /// `events` in this order, ids increasing.
    void publish(const std::vector<EventPtr>& events);
    void publish(const EventPtr& event) { publish(std::vector<EventPtr>{event}); }
    /// Every subscription now is over, as if its queue overflowed (the publisher lost events).
    void failAll();
    /// The id of the last event published (0: none yet).
    std::uint64_t lastId() const;
    std::size_t subscriptions() const;

private:
    mutable std::mutex mutex_;
    std::vector<std::shared_ptr<Subscription>> subscriptions_;
    std::uint64_t lastId_ = 0;
};

} // namespace ncstore::netconfd::notify
