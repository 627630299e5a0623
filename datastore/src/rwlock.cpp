#include "rwlock.hpp"

#include "syncpoint.hpp"

namespace ncstore::ds::detail {

void FairSharedMutex::lock() {
    std::unique_lock lock(mutex_);
    ++writersWaiting_;
    NCS_SYNC_POINT("rwlock:writer-waiting");
    writersGo_.wait(lock, [this] { return !writer_ && readers_ == 0 && admitted_ == 0; });
    --writersWaiting_;
    writer_ = true;
}

void FairSharedMutex::unlock() {
    std::lock_guard lock(mutex_);
    writer_ = false;
    ++phase_;
    admitted_ = readersWaiting_;
    if (admitted_ > 0) {
        readersGo_.notify_all();
    } else {
        writersGo_.notify_one();
    }
}

void FairSharedMutex::lock_shared() {
    std::unique_lock lock(mutex_);
    if (!writer_ && writersWaiting_ == 0) {
        ++readers_;
        return;
    }
    const std::uint64_t arrived = phase_;
    ++readersWaiting_;
    readersGo_.wait(lock, [&] { return phase_ != arrived && !writer_; });
    --readersWaiting_;
    --admitted_;
    ++readers_;
}

void FairSharedMutex::unlock_shared() {
    std::lock_guard lock(mutex_);
    --readers_;
    if (readers_ == 0 && writersWaiting_ > 0) {
        writersGo_.notify_all();
    }
}

} // namespace ncstore::ds::detail
