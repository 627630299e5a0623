// The sessions the server serves, by id: what kill-session, the monitoring state and the
// server's shutdown look up.
//
// Promises: thread-safe; ids are never reused while the server runs; once closed (close()), no
// session is added any more, so a caller that wakes every session after close() misses none.
#pragma once

#include "session.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace ncstore::netconfd {

class SessionTable {
public:
    /// A new session with the next id, made by `make(id)`; nullptr once closed.
    template <typename Make> std::shared_ptr<Session> add(Make&& make) {
        std::lock_guard lock(mutex_);
        if (closed_) {
            return nullptr;
        }
        std::shared_ptr<Session> s = make(nextId_++);
        sessions_.emplace(s->id, s);
        return s;
    }
    void remove(std::uint32_t id) {
        {
            std::lock_guard lock(mutex_);
            sessions_.erase(id);
        }
        cv_.notify_all();
    }
    std::shared_ptr<Session> find(std::uint32_t id) const {
        std::lock_guard lock(mutex_);
        const auto it = sessions_.find(id);
        return it == sessions_.end() ? nullptr : it->second;
    }
    /// Every session now, by id.
    std::vector<std::shared_ptr<Session>> all() const {
        std::lock_guard lock(mutex_);
        std::vector<std::shared_ptr<Session>> out;
        out.reserve(sessions_.size());
        for (const auto& [id, s] : sessions_) {
            out.push_back(s);
        }
        return out;
    }
    /// Waits up to `timeout` for session `id` to be removed; true when it is gone.
    bool waitGone(std::uint32_t id, std::chrono::milliseconds timeout) const {
        std::unique_lock lock(mutex_);
        return cv_.wait_for(lock, timeout, [&] { return sessions_.count(id) == 0; });
    }
    /// No session is added from now on; wakes every session there is (they see the stop).
    void close() {
        std::lock_guard lock(mutex_);
        closed_ = true;
        for (const auto& [id, s] : sessions_) {
            s->connection().wake();
        }
    }

private:
    mutable std::mutex mutex_;
    mutable std::condition_variable cv_;
    std::map<std::uint32_t, std::shared_ptr<Session>> sessions_;
    std::uint32_t nextId_ = 1;
    bool closed_ = false;
};

} // namespace ncstore::netconfd
