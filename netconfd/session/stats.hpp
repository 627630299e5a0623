// Server-side counters: per NETCONF operation (count, errors, time, and where write time went)
// and the ietf-netconf-monitoring global statistics.
#pragma once

#include "ncstore/datastore.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace ncstore::netconfd {

struct OpCounters {
    std::uint64_t count = 0;
    std::uint64_t errors = 0;
    std::uint64_t totalUs = 0;
    std::uint64_t maxUs = 0;
    std::uint64_t parseUs = 0;
    std::uint64_t lockWaitUs = 0;
    std::uint64_t applyUs = 0;
    std::uint64_t validateUs = 0;
    std::uint64_t commitWaitUs = 0;
};

class Stats {
public:
    /// Records one RPC; `write` carries the datastore's timing for writes.
    void record(const std::string& op, std::uint64_t us, bool error, std::uint64_t parseUs = 0,
                const ds::WriteTiming* write = nullptr);
    std::map<std::string, OpCounters> operations() const;
    /// One line: "get-config n=.. err=.. avg=..us max=..us; edit-config ..."
    std::string summary() const;

    // ietf-netconf-monitoring /netconf-state/statistics
    const std::chrono::system_clock::time_point startTime = std::chrono::system_clock::now();
    std::atomic<std::uint64_t> inBadHellos{0};
    std::atomic<std::uint64_t> inSessions{0};
    std::atomic<std::uint64_t> droppedSessions{0};
    std::atomic<std::uint64_t> inRpcs{0};
    std::atomic<std::uint64_t> inBadRpcs{0};
    std::atomic<std::uint64_t> outRpcErrors{0};
    std::atomic<std::uint64_t> outNotifications{0};

private:
    mutable std::mutex mutex_;
    std::map<std::string, OpCounters> ops_;
};

} // namespace ncstore::netconfd
