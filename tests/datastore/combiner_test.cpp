// The store's write combiner (datastore/src/combiner.hpp): order, exclusion, errors and the
// hand-over of combining, with real threads.
#include "combiner.hpp"
#include "syncpoint.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace ncstore::ds::detail {
namespace {

/// Counts the threads that queued behind a combiner; waits for a count.
class Waiting {
public:
    Waiting() {
        SyncPoints::set("combiner:waiting", [this] {
            std::lock_guard lock(mutex_);
            ++count_;
            changed_.notify_all();
        });
    }
    ~Waiting() { SyncPoints::clear(); }
    bool reach(int n) {
        std::unique_lock lock(mutex_);
        return changed_.wait_for(lock, std::chrono::seconds(10), [&] { return count_ >= n; });
    }

private:
    std::mutex mutex_;
    std::condition_variable changed_;
    int count_ = 0;
};

TEST(CombinerTest, ALoneSectionRunsOnItsCallersThreadAndIsToldSo) {
    FairSharedMutex mutex;
    Combiner combiner(mutex);
    std::thread::id ranOn;
    bool wasAlone = false;
    auto section = [&](bool alone) {
        ranOn = std::this_thread::get_id();
        wasAlone = alone;
    };
    combiner.run(section);
    EXPECT_EQ(ranOn, std::this_thread::get_id());
    EXPECT_TRUE(wasAlone);
}

TEST(CombinerTest, QueuedSectionsRunInArrivalOrderOnTheCombinersThreadAndTheirErrorsReachTheirCallers) {
    FairSharedMutex mutex;
    Combiner combiner(mutex);
    Waiting waiting;
    std::atomic<bool> started{false};
    std::atomic<bool> release{false};
    std::vector<int> order;
    std::vector<std::thread::id> threads;
    std::vector<bool> alone;
    auto record = [&](int i, bool a) {
        order.push_back(i);
        threads.push_back(std::this_thread::get_id());
        alone.push_back(a);
    };
    std::thread first([&] {
        auto section = [&](bool a) {
            record(0, a);
            started = true;
            while (!release.load()) {
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            }
        };
        combiner.run(section);
    });
    // Let the first section start, then queue the others one at a time, so that their order is
    // known: the odd ones throw.
    while (!started.load()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    constexpr int kQueued = 6;
    std::vector<std::thread> others;
    std::vector<int> caught(kQueued + 1, 0);
    for (int i = 1; i <= kQueued; ++i) {
        others.emplace_back([&, i] {
            auto section = [&](bool a) {
                record(i, a);
                if (i % 2) {
                    throw std::runtime_error("section " + std::to_string(i));
                }
            };
            try {
                combiner.run(section);
            } catch (const std::runtime_error& e) {
                caught[static_cast<size_t>(i)] = e.what() == "section " + std::to_string(i) ? 1 : -1;
            }
        });
        ASSERT_TRUE(waiting.reach(i));
    }
    release = true;
    first.join();
    for (auto& t : others) {
        t.join();
    }
    ASSERT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5, 6}));
    // The first ran alone (nothing was queued when it started): its caller went its way, and
    // the owner of the next one combined the rest.
    EXPECT_TRUE(alone[0]);
    EXPECT_NE(threads[1], threads[0]);
    for (size_t i = 1; i < threads.size(); ++i) {
        EXPECT_EQ(threads[i], threads[1]) << "section " << i << " did not run on the combiner's thread";
        EXPECT_FALSE(alone[i]);
    }
    EXPECT_EQ(caught, (std::vector<int>{0, 1, 0, 1, 0, 1, 0}));
}

TEST(CombinerTest, ManyWritersRunExclusivelyAndNoCombinerServesMoreThanItsShare) {
    FairSharedMutex mutex;
    Combiner combiner(mutex);
    constexpr int kThreads = 16;
    constexpr int kEach = 400;
    std::atomic<int> inside{0};
    std::atomic<bool> overlapped{false};
    std::mutex seenMutex;
    // (runner, caller) of each section, in the order they ran
    std::vector<std::pair<std::thread::id, std::thread::id>> ranOn;
    std::atomic<bool> readerStop{false};
    std::atomic<int> reads{0};
    std::thread reader([&] {
        while (!readerStop.load()) {
            std::shared_lock lock(mutex);
            if (inside.load() != 0) {
                overlapped = true;
            }
            ++reads;
        }
    });
    std::vector<std::thread> writers;
    for (int t = 0; t < kThreads; ++t) {
        writers.emplace_back([&] {
            const auto caller = std::this_thread::get_id();
            for (int i = 0; i < kEach; ++i) {
                auto section = [&](bool) {
                    if (inside.fetch_add(1) != 0) {
                        overlapped = true;
                    }
                    {
                        std::lock_guard lock(seenMutex);
                        ranOn.emplace_back(std::this_thread::get_id(), caller);
                    }
                    inside.fetch_sub(1);
                };
                combiner.run(section);
            }
        });
    }
    for (auto& w : writers) {
        w.join();
    }
    readerStop = true;
    reader.join();
    EXPECT_FALSE(overlapped) << "two sections, or a section and a reader, held the lock together";
    ASSERT_EQ(ranOn.size(), static_cast<size_t>(kThreads * kEach));
    // A combining pass: a section of the runner's own, then others' on the same thread.
    size_t longest = 0;
    size_t combined = 0;
    for (size_t i = 0, pass = 0; i < ranOn.size(); ++i) {
        const auto [runner, caller] = ranOn[i];
        const bool continues = i > 0 && runner == ranOn[i - 1].first && caller != runner;
        pass = continues ? pass + 1 : 1;
        combined += caller != runner ? 1 : 0;
        longest = std::max(longest, pass);
    }
    EXPECT_LE(longest, Combiner::kMaxRun);
    EXPECT_GT(combined, 0u) << "16 threads writing at once and no section was combined";
    EXPECT_GT(reads.load(), 0);
}

} // namespace
} // namespace ncstore::ds::detail
