// The datastore locks of RFC 6241 7.5 / 7.6: which session holds which datastore. Private to the
// datastore: the store consults it in the same critical section as the write it guards.
//
// Pure bookkeeping, not thread-safe (the store's lock guards it). A session id is never 0 here
// (0 means "nobody").
#pragma once

#include "ncstore/datastore.hpp"

#include <array>
#include <chrono>
#include <cstdint>
#include <vector>

namespace ncstore::ds::detail {

class LockTable {
public:
    /// `candidateModifiedByOther`: candidate holds changes not made by `session` (RFC 6241 7.5).
    LockOutcome lock(Datastore ds, std::uint32_t session, bool candidateModifiedByOther);
    UnlockResult unlock(Datastore ds, std::uint32_t session);
    /// 0 when unlocked.
    std::uint32_t holder(Datastore ds) const { return holders_[index(ds)]; }
    /// Releases every lock of `session`; returns the datastores released.
    std::vector<Datastore> releaseAll(std::uint32_t session);
    std::vector<LockInfo> held() const;

private:
    static std::size_t index(Datastore ds) { return static_cast<std::size_t>(ds); }

    std::array<std::uint32_t, 3> holders_{};
    std::array<std::chrono::system_clock::time_point, 3> since_{};
};

} // namespace ncstore::ds::detail
