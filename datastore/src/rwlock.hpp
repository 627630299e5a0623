// The store's tree lock: a shared mutex that is fair between readers and writers. Private to
// the datastore.
//
// libstdc++'s std::shared_mutex lets new readers in while a writer waits, so overlapping long
// reads (a 0.6 s print of 3000 devices) can keep every write out indefinitely. Here, once a
// writer waits, new readers wait behind it; when it releases, every reader that waited meanwhile
// goes in before the next writer (phase-fair). A writer waits at most for the reads in progress
// when it arrived; a reader at most for the writers that were waiting when it arrived.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace ncstore::ds::detail {

class FairSharedMutex {
public:
    void lock();
    void unlock();
    void lock_shared();
    void unlock_shared();

private:
    std::mutex mutex_;
    std::condition_variable readersGo_;
    std::condition_variable writersGo_;
    unsigned readers_ = 0;        // holding it shared
    bool writer_ = false;         // holding it exclusively
    unsigned writersWaiting_ = 0; // new readers wait while this is not 0
    unsigned readersWaiting_ = 0;
    unsigned admitted_ = 0;   // readers let in by the last exclusive release, not in yet
    std::uint64_t phase_ = 0; // counts exclusive releases
};

} // namespace ncstore::ds::detail
