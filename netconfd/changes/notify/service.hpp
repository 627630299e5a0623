// The NETCONF event stream (RFC 5277 "NETCONF"): what happens in the server, logged for replay
// and delivered to subscribers, off every commit path.
//
// Promises:
//  - Every durable change of running and startup becomes one netconf-config-change event
//    (RFC 6470), logged in the store's journal "notifications" in the SAME SQLite transaction as
//    the change: after a kill -9 the log holds exactly the acknowledged changes, in commit order.
//    Events the server raises (session start and end, confirmed commits) are logged in order with
//    them (Store::appendJournal). An event's id is its commit id.
//  - Events reach the live subscribers (Bus) only once durable, in id order, from the store's
//    publisher thread: no commit waits for a subscriber. A subscriber that started after an
//    event's id was logged, or a replay that read it, sees it once (the caller dedupes by id).
//  - Retention: at most maxEvents events, none older than maxAge once trim() ran (the server's
//    housekeeping calls it); replay() reads the log (the file) from any thread.
#pragma once

#include "bus.hpp"
#include "events.hpp"

#include "ncstore/changes.hpp"
#include "ncstore/datastore.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace ncstore::netconfd::notify {

inline constexpr const char* kJournal = "notifications";

class Service : public ds::ChangeListener {
public:
    struct Options {
        std::size_t maxEvents = 100000;
        std::chrono::seconds maxAge = std::chrono::hours(24 * 7);
    };
    /// Registers the journal hook and the listener on `store`, which must outlive the Service.
    Service(ds::Store& store, const ly_ctx* ctx, Options options);
    ~Service() override;
    Service(const Service&) = delete;
    Service& operator=(const Service&) = delete;

    Bus& bus() { return bus_; }

    /// While the returned token lives, published config-change events carry their change set
    /// (Event::changes): what a YANG-Push subscription reads. Without followers no event holds
    /// one, so a slow RFC 5277 subscriber keeps only text. Take it before subscribing to the bus
    /// and reading the datastore: every event the read did not see then carries its change set.
    std::shared_ptr<void> follow();

    /// Logs `content` (one event element, events.hpp) as an event of now; published once durable.
    void raise(const std::string& content);
    /// The same with the event time its source gave (an application's notification).
    void raise(const std::string& content, std::chrono::system_clock::time_point eventTime);

    /// Calls `fn` for each logged event whose time is in [start, stop] (no stop: every later one),
    /// in id order. Returns the highest id the log held when it was read (0: empty), whether or
    /// not its event was in the window: events above it are yet to be published.
    std::uint64_t replay(std::chrono::system_clock::time_point start,
                         std::optional<std::chrono::system_clock::time_point> stop,
                         const std::function<void(const Event&)>& fn) const;

    /// The time of the oldest event the log keeps (the service's start when it is empty).
    std::chrono::system_clock::time_point logCreationTime() const;

    /// Applies the retention bounds.
    void trim();

    // ds::ChangeListener, on the store's publisher thread.
    void changed(const ds::ChangeSet& changes) override;
    void published(const std::shared_ptr<const ds::ChangeSet>& changes) override;
    /// The events of the whole batch go on the bus at once: a subscriber is woken once for them
    /// and sends them in one write, not once per commit.
    void publishedBatch(const std::vector<std::shared_ptr<const ds::ChangeSet>>& batch) override;
    void lost(std::uint64_t through) override;

    /// A logged row as an Event (exposed for tests).
    static std::optional<Event> parseRow(std::uint64_t id, const std::string& row);

private:
    /// Appends the events of `changes` to `out`; under publishing_.
    void eventsOf(const ds::ChangeSet& changes, const std::shared_ptr<const ds::ChangeSet>& shared,
                  std::vector<EventPtr>& out);
    void indexLog();
    void remember(std::uint64_t id, std::chrono::system_clock::time_point time);

    ds::Store& store_;
    const ly_ctx* ctx_;
    const Options options_;
    const std::chrono::system_clock::time_point started_ = std::chrono::system_clock::now();
    Bus bus_;
    std::atomic<int> followers_{0};
    std::mutex publishing_; ///< publishing on the bus, and follow()

    mutable std::mutex mutex_;
    std::deque<std::pair<std::uint64_t, std::chrono::system_clock::time_point>> index_; ///< id, time
    bool indexed_ = false;
    std::thread indexer_;
};

} // namespace ncstore::netconfd::notify
