// Flat combining for the store's writes: each write's critical section runs under the tree lock,
// in the order the writes arrived, on whichever thread is combining. Private to the datastore.
//
// Why: with 50 sessions writing, each write held the tree lock ~90 us and the lock then sat idle
// ~115 us on average until the next waiter was woken and scheduled (measured on a 2-core VM):
// the lock, not the CPU, bounded throughput, and waiting for it was most of the tail latency.
// Here the thread that finds nobody combining runs its own section and then those queued behind
// it, back to back, each under its own exclusive acquisition of the lock (so readers still get
// in between two writes, as the fair lock promises); the others sleep until theirs has run.
//
// Promises:
//  - sections run one at a time, each holding `mutex` exclusively, in the order run() was called;
//  - run() returns once its own section has run, rethrowing what the section threw;
//  - a combiner runs at most kMaxRun sections, its own first; then it hands combining to the
//    owner of the next queued section, so that no caller serves others indefinitely;
//  - with nobody else writing, a section runs on its caller's thread with no hand-off, and is
//    told so: section(alone) is called with alone = true when it runs on its caller's thread
//    with nothing queued behind it. Its caller is then free as soon as it returns: sections
//    queued meanwhile are combined by the first one's owner (the store's write then commits
//    on its own thread, at once, as a lone write does).
// A section must not depend on the thread it runs on (libyang's error state is per thread:
// read it inside the section) and must not call run() itself.
#pragma once

#include "rwlock.hpp"

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <mutex>

namespace ncstore::ds::detail {

class Combiner {
public:
    static constexpr std::size_t kMaxRun = 64;

    explicit Combiner(FairSharedMutex& mutex) : mutex_(mutex) {}
    Combiner(const Combiner&) = delete;
    Combiner& operator=(const Combiner&) = delete;

    template <class Section> void run(Section& section) {
        Job job;
        job.section = &section;
        job.call = [](void* s, bool alone) { (*static_cast<Section*>(s))(alone); };
        run(job);
    }

private:
    struct Job {
        void* section = nullptr;
        void (*call)(void*, bool alone) = nullptr;
        std::exception_ptr error;
        // Guarded by queueMutex_. A condition variable, not a semaphore: libstdc++'s semaphore
        // spins and yields before it sleeps, CPU that the combiner needs on a busy machine.
        bool done = false;    ///< the section ran
        bool combine = false; ///< handed the combining instead
        std::condition_variable woken;
    };

    void run(Job& job);
    void combine(Job& own);

    FairSharedMutex& mutex_;
    std::mutex queueMutex_;
    std::deque<Job*> queue_; ///< waiting to run; empty whenever nobody is combining
    bool combining_ = false;
};

} // namespace ncstore::ds::detail
