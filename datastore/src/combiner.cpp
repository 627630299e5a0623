#include "combiner.hpp"

#include "syncpoint.hpp"

namespace ncstore::ds::detail {

void Combiner::run(Job& job) {
    {
        std::unique_lock lock(queueMutex_);
        queue_.push_back(&job);
        if (combining_) {
            lock.unlock();
            NCS_SYNC_POINT("combiner:waiting");
            job.woken.acquire();
            if (!job.combine) {
                if (job.error) {
                    std::rethrow_exception(job.error);
                }
                return;
            }
            // Handed the combining: this job is at the head of the queue.
        } else {
            combining_ = true;
        }
    }
    combine(job);
    if (job.error) {
        std::rethrow_exception(job.error);
    }
}

void Combiner::combine(Job& own) {
    bool ownAlone = false;
    for (std::size_t ran = 0;; ++ran) {
        Job* next = nullptr;
        bool alone = false;
        {
            std::lock_guard lock(queueMutex_);
            if (queue_.empty()) {
                combining_ = false;
                return;
            }
            next = queue_.front();
            if (ran == kMaxRun || ownAlone) {
                // The head's owner combines from here; `own` ran first, so it is done.
                next->combine = true;
                next->woken.release();
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
            next->woken.release();
        } else {
            ownAlone = alone;
        }
    }
}

} // namespace ncstore::ds::detail
