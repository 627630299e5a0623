#include "locks.hpp"

namespace ncstore::netconfd {

LockTable::Outcome LockTable::lock(Datastore ds, std::uint32_t sid, bool candidateDirty) {
    std::lock_guard guard(mutex_);
    auto& h = holders_[index(ds)];
    if (h != 0) {
        return {LockResult::HeldByOther, h};
    }
    if (ds == Datastore::Candidate && candidateDirty) {
        // RFC 6241 7.5: the candidate cannot be locked while it holds changes not made by the
        // requester. A dirty candidate with no recorded editor (changes survived a session)
        // counts as someone else's.
        const bool onlyMine = candidateEditors_.size() == 1 && candidateEditors_.count(sid) == 1;
        if (!onlyMine) {
            return {LockResult::CandidateModified, 0};
        }
    }
    h = sid;
    since_[index(ds)] = std::chrono::system_clock::now();
    return {LockResult::Granted, sid};
}

LockTable::UnlockResult LockTable::unlock(Datastore ds, std::uint32_t sid) {
    std::lock_guard guard(mutex_);
    auto& h = holders_[index(ds)];
    if (h == 0) {
        return UnlockResult::NotLocked;
    }
    if (h != sid) {
        return UnlockResult::HeldByOther;
    }
    h = 0;
    return UnlockResult::Released;
}

std::uint32_t LockTable::holder(Datastore ds) const {
    std::lock_guard guard(mutex_);
    return holders_[index(ds)];
}

bool LockTable::mayWrite(Datastore ds, std::uint32_t sid) const {
    std::lock_guard guard(mutex_);
    const auto h = holders_[index(ds)];
    return h == 0 || h == sid;
}

std::vector<LockTable::Datastore> LockTable::releaseAll(std::uint32_t sid) {
    std::lock_guard guard(mutex_);
    std::vector<Datastore> out;
    for (auto ds : {Datastore::Running, Datastore::Startup, Datastore::Candidate}) {
        if (holders_[index(ds)] == sid) {
            holders_[index(ds)] = 0;
            out.push_back(ds);
        }
    }
    return out;
}

std::vector<LockTable::Held> LockTable::held() const {
    std::lock_guard guard(mutex_);
    std::vector<Held> out;
    for (auto ds : {Datastore::Running, Datastore::Startup, Datastore::Candidate}) {
        if (holders_[index(ds)] != 0) {
            out.push_back({ds, holders_[index(ds)], since_[index(ds)]});
        }
    }
    return out;
}

void LockTable::candidateEditedBy(std::uint32_t sid) {
    std::lock_guard guard(mutex_);
    candidateEditors_.insert(sid);
}

void LockTable::candidateClean() {
    std::lock_guard guard(mutex_);
    candidateEditors_.clear();
}

bool LockTable::candidateEditedByOther(std::uint32_t sid) const {
    std::lock_guard guard(mutex_);
    for (auto s : candidateEditors_) {
        if (s != sid) {
            return true;
        }
    }
    return false;
}

} // namespace ncstore::netconfd
