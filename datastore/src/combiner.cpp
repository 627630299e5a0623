#include "combiner.hpp"

#include "syncpoint.hpp"

namespace ncstore::ds::detail {

void Combiner::run(Job& job) {
    std::unique_lock lock(queueMutex_);
    queue_.push_back(&job);
    if (combining_) {
        lock.unlock();
        NCS_SYNC_POINT("combiner:waiting");
        lock.lock();
        job.woken.wait(lock, [&] { return job.done || job.combine; });
        if (job.done) {
            lock.unlock();
            if (job.error) {
                std::rethrow_exception(job.error);
            }
            return;
        }
        // Handed the combining: this job is at the head of the queue.
    } else {
        combining_ = true;
    }
    lock.unlock();
    combine(job);
    if (job.error) {
        std::rethrow_exception(job.error);
    }
}

void Combiner::combine(Job& own) {
    bool ownAlone = false;
    Job* ran = nullptr; // the other caller's section that ran last: its caller is woken next
    for (std::size_t count = 0;; ++count) {
        Job* next = nullptr;
        bool alone = false;
        {
            std::lock_guard lock(queueMutex_);
            if (ran) {
                // Under the queue lock, which its caller needs to see `done` and return: the
                // job outlives the notification.
                ran->done = true;
                ran->woken.notify_one();
                ran = nullptr;
            }
            if (queue_.empty()) {
                combining_ = false;
                return;
            }
            next = queue_.front();
            if (count == kMaxRun || ownAlone) {
                // The head's owner combines from here; `own` ran first, so it is done.
                next->combine = true;
                next->woken.notify_one();
                return;
            }
            queue_.pop_front();
            alone = next == &own && queue_.empty();
        }
        {
            std::unique_lock lock(mutex_);
            try {
                next->call(next->section, alone);
            } catch (...) {
                next->error = std::current_exception();
            }
        }
        if (next != &own) {
            ran = next;
        } else {
            ownAlone = alone;
        }
    }
}

} // namespace ncstore::ds::detail
