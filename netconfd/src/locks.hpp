// The NETCONF lock table (RFC 6241 7.5, 7.6) and who modified the candidate.
//
// Promises: thread-safe; a datastore has at most one holder; a session id is never 0 (0 means
// "nobody"). Pure bookkeeping: the caller turns the answers into rpc-errors and performs the
// discard-changes that RFC 6241 8.3.5.2 asks for when a candidate lock holder goes away.
#pragma once

#include "ncstore/datastore.hpp"

#include <array>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <set>
#include <vector>

namespace ncstore::netconfd {

class LockTable {
public:
    using Datastore = ds::Datastore;

    enum class LockResult {
        Granted,
        HeldByOther,       ///< `holder` says by whom (may be the caller itself: RFC says lock-denied)
        CandidateModified, ///< candidate has uncommitted changes from another session
    };
    struct Outcome {
        LockResult result = LockResult::Granted;
        std::uint32_t holder = 0;
    };
    enum class UnlockResult { Released, NotLocked, HeldByOther };

    struct Held {
        Datastore ds;
        std::uint32_t sid;
        std::chrono::system_clock::time_point since;
    };

    /// `candidateDirty`: whether the candidate currently differs from running.
    Outcome lock(Datastore ds, std::uint32_t sid, bool candidateDirty);
    UnlockResult unlock(Datastore ds, std::uint32_t sid);
    /// 0 when unlocked.
    std::uint32_t holder(Datastore ds) const;
    /// True when `sid` may write `ds` (unlocked, or locked by `sid`).
    bool mayWrite(Datastore ds, std::uint32_t sid) const;
    /// Releases every lock of `sid` (session end); returns the datastores released.
    std::vector<Datastore> releaseAll(std::uint32_t sid);
    std::vector<Held> held() const;

    /// Records that `sid` changed the candidate.
    void candidateEditedBy(std::uint32_t sid);
    /// After commit / discard-changes: nobody has pending candidate changes.
    void candidateClean();
    /// True when someone other than `sid` has changed the candidate since the last clean.
    bool candidateEditedByOther(std::uint32_t sid) const;

private:
    static std::size_t index(Datastore ds) { return static_cast<std::size_t>(ds); }

    mutable std::mutex mutex_;
    std::array<std::uint32_t, 3> holders_{};
    std::array<std::chrono::system_clock::time_point, 3> since_{};
    std::set<std::uint32_t> candidateEditors_;
};

} // namespace ncstore::netconfd
