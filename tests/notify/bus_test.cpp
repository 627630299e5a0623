// The live bus: ordered delivery, wake-ups only when needed, a bounded queue per subscriber.
#include "bus.hpp"

#include <gtest/gtest.h>

#include <atomic>

using namespace ncstore::netconfd::notify;

namespace {

EventPtr event(std::uint64_t id, std::size_t size = 10) {
    return std::make_shared<const Event>(Event{id, std::chrono::system_clock::now(), std::string(size, 'x')});
}

} // namespace

TEST(Bus, EverySubscriberGetsEveryLaterEventInOrder) {
    Bus bus;
    bus.publish(event(1)); // before anyone subscribed: nobody gets it
    auto a = bus.subscribe(100, 1 << 20, nullptr);
    auto b = bus.subscribe(100, 1 << 20, nullptr);
    for (std::uint64_t id = 2; id <= 5; ++id) {
        bus.publish(event(id));
    }
    for (auto* s : {a.get(), b.get()}) {
        std::vector<std::uint64_t> ids;
        for (const auto& e : s->take()) {
            ids.push_back(e->id);
        }
        EXPECT_EQ(ids, (std::vector<std::uint64_t>{2, 3, 4, 5}));
        EXPECT_TRUE(s->take().empty());
    }
    EXPECT_EQ(bus.lastId(), 5u);
    bus.unsubscribe(a.get());
    bus.publish(event(6));
    EXPECT_TRUE(a->take().empty());
    EXPECT_EQ(b->take().size(), 1u);
}

TEST(Bus, ASubscriberIsWokenOnlyWhenItsQueueWasEmpty) {
    Bus bus;
    int wakes = 0;
    auto s = bus.subscribe(100, 1 << 20, [&](bool overflowed) {
        EXPECT_FALSE(overflowed);
        ++wakes;
    });
    bus.publish(event(1));
    bus.publish(event(2));
    bus.publish(event(3));
    EXPECT_EQ(wakes, 1);
    s->take();
    bus.publish(event(4));
    EXPECT_EQ(wakes, 2);
}

TEST(Bus, EventsPublishedTogetherWakeASubscriberOnce) {
    Bus bus;
    int wakes = 0;
    auto s = bus.subscribe(100, 1 << 20, [&](bool) { ++wakes; });
    bus.publish({event(1), event(2), event(3)});
    EXPECT_EQ(wakes, 1);
    EXPECT_EQ(s->take().size(), 3u);
    EXPECT_EQ(bus.lastId(), 3u);
    // A queue that fills up in the middle of a batch keeps what fit and is told once.
    int overflows = 0;
    auto small = bus.subscribe(2, 1 << 20, [&](bool overflowed) { overflows += overflowed; });
    bus.publish({event(4), event(5), event(6)});
    EXPECT_TRUE(small->overflowed());
    EXPECT_EQ(small->take().size(), 2u);
    EXPECT_EQ(overflows, 1);
    EXPECT_EQ(s->take().size(), 3u);
}

TEST(Bus, AFullQueueEndsOnlyItsSubscription) {
    Bus bus;
    std::atomic<int> overflows{0};
    auto slow = bus.subscribe(3, 1 << 20, [&](bool overflowed) { overflows += overflowed; });
    auto bytes = bus.subscribe(100, 25, [&](bool overflowed) { overflows += overflowed; });
    auto fine = bus.subscribe(100, 1 << 20, nullptr);
    for (std::uint64_t id = 1; id <= 10; ++id) {
        bus.publish(event(id));
    }
    EXPECT_TRUE(slow->overflowed());
    EXPECT_EQ(slow->take().size(), 3u); // what was queued before it overflowed
    EXPECT_TRUE(bytes->overflowed());   // 25 bytes hold two events of 10
    EXPECT_EQ(bytes->take().size(), 2u);
    EXPECT_EQ(overflows.load(), 2); // each told once
    EXPECT_FALSE(fine->overflowed());
    EXPECT_EQ(fine->take().size(), 10u);
    bus.publish(event(11));
    EXPECT_TRUE(slow->take().empty()); // over: nothing more
    bus.failAll();
    EXPECT_TRUE(fine->overflowed());
}
