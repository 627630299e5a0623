// Test-only interleaving hooks, as RocksDB's TEST_SYNC_POINT: a named point in the datastore's
// code runs the callback a test installed for that name, so that a test can order threads
// deterministically (hold a commit between two steps, let another write run, inject a failure).
// Private to the datastore and its tests.
//
// Promises: with no callback installed a point costs one relaxed atomic load; callbacks run on
// the thread that reaches the point, may block and may throw (the exception leaves the point as
// if the code there had thrown).
#pragma once

#include <atomic>
#include <functional>
#include <string>

namespace ncstore::ds::detail {

extern std::atomic<bool> syncPointsOn;
void runSyncPoint(const char* name);

/// The test side. Callbacks stay installed until clear().
struct SyncPoints {
    static void set(const std::string& name, std::function<void()> callback);
    static void clear();
};

} // namespace ncstore::ds::detail

#define NCS_SYNC_POINT(name)                                                                                 \
    do {                                                                                                     \
        if (::ncstore::ds::detail::syncPointsOn.load(std::memory_order_relaxed)) {                           \
            ::ncstore::ds::detail::runSyncPoint(name);                                                       \
        }                                                                                                    \
    } while (0)
