#include "locks.hpp"

namespace ncstore::ds::detail {

namespace {

constexpr Datastore kAll[] = {Datastore::Running, Datastore::Startup, Datastore::Candidate};

} // namespace

LockOutcome LockTable::lock(Datastore ds, std::uint32_t session, bool candidateModifiedByOther) {
    auto& h = holders_[index(ds)];
    if (h != 0) {
        return {LockResult::HeldByOther, h};
    }
    if (ds == Datastore::Candidate && candidateModifiedByOther) {
        return {LockResult::CandidateModified, 0};
    }
    h = session;
    since_[index(ds)] = std::chrono::system_clock::now();
    return {LockResult::Granted, session};
}

UnlockResult LockTable::unlock(Datastore ds, std::uint32_t session) {
    auto& h = holders_[index(ds)];
    if (h == 0) {
        return UnlockResult::NotLocked;
    }
    if (h != session) {
        return UnlockResult::HeldByOther;
    }
    h = 0;
    return UnlockResult::Released;
}

std::vector<Datastore> LockTable::releaseAll(std::uint32_t session) {
    std::vector<Datastore> out;
    for (auto ds : kAll) {
        if (holders_[index(ds)] == session) {
            holders_[index(ds)] = 0;
            out.push_back(ds);
        }
    }
    return out;
}

std::vector<LockInfo> LockTable::held() const {
    std::vector<LockInfo> out;
    for (auto ds : kAll) {
        if (holders_[index(ds)] != 0) {
            out.push_back({ds, holders_[index(ds)], since_[index(ds)]});
        }
    }
    return out;
}

} // namespace ncstore::ds::detail
