// The CPU time of the calling process, for the tools that report what their own side of a
// measurement cost (ncstore-client, benchmarks' subscribers): a timing client must show it is not
// the bottleneck.
#pragma once

#include <sys/resource.h>

#include <stdexcept>

namespace ncstore {

/// User plus system CPU seconds of this process so far. Throws std::runtime_error.
inline double processCpuSeconds() {
    rusage usage{};
    if (getrusage(RUSAGE_SELF, &usage) != 0) {
        throw std::runtime_error("getrusage failed");
    }
    auto seconds = [](const timeval& tv) {
        return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
    };
    return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

} // namespace ncstore
