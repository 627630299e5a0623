#include "service.hpp"

#include "ncstore/log.hpp"
#include "ncstore/threadname.hpp"

#include <algorithm>

namespace ncstore::netconfd::notify {

namespace {

using Clock = std::chrono::system_clock;

std::string row(Clock::time_point time, const std::string& content) {
    std::string out = dateAndTime(time);
    out.reserve(out.size() + 1 + content.size());
    out += '\n';
    out += content;
    return out;
}

/// About the memory a change set holds: its strings, and its trees at a typical libyang node size.
std::size_t footprint(const ds::ChangeSet& changes) {
    constexpr std::size_t kNodeBytes = 160;
    std::size_t bytes = sizeof(ds::ChangeSet);
    auto nodes = [](const Tree& tree) {
        std::size_t n = 0;
        if (tree) {
            const lyd_node* elem = nullptr;
            LYD_TREE_DFS_BEGIN(tree.get(), elem) {
                ++n;
                LYD_TREE_DFS_END(tree.get(), elem);
            }
        }
        return n;
    };
    for (const ds::Change& c : changes.changes) {
        bytes += sizeof(ds::Change) + c.path.size() + (c.oldValue ? c.oldValue->size() : 0) +
                 (c.newValue ? c.newValue->size() : 0) + kNodeBytes * (nodes(c.oldTree) + nodes(c.newTree));
    }
    return bytes;
}

} // namespace

std::optional<Event> Service::parseRow(std::uint64_t id, const std::string& text) {
    const auto nl = text.find('\n');
    if (nl == std::string::npos) {
        return std::nullopt;
    }
    const auto time = parseDateAndTime(std::string_view(text).substr(0, nl));
    if (!time) {
        return std::nullopt;
    }
    return Event{id, *time, text.substr(nl + 1)};
}

Service::Service(ds::Store& store, const ly_ctx* ctx, Options options)
    : store_(store), ctx_(ctx), options_(options) {
    store_.addJournal(kJournal, [this](const ds::ChangeSet& changes) -> std::vector<std::string> {
        // Under the store's exclusive lock, on the commit path: one pass over the change set.
        // Nothing here may refuse the write: an event that cannot be made is logged as missing.
        try {
            const Actor by{changes.session, changes.user, changes.host};
            return {row(Clock::now(), configChange(changes, by, ctx_))};
        } catch (const std::exception& e) {
            NCS_LOG(error) << "notifications: no netconf-config-change for commit " << changes.commitId
                           << ": " << e.what();
            return {};
        }
    });
    const std::uint64_t after = store_.addListener(*this);
    // The events logged before this start are indexed (id, time) off the start-up path.
    indexer_ = std::thread([this, after] {
        nameThisThread("ncs-notify-idx");
        std::deque<std::pair<std::uint64_t, Clock::time_point>> old;
        try {
            store_.readJournal(kJournal, 0, [&](const ds::JournalRow& r) {
                if (r.commitId > after) {
                    return;
                }
                if (auto e = parseRow(r.commitId, r.data)) {
                    old.emplace_back(e->id, e->time);
                }
            });
        } catch (const std::exception& e) {
            NCS_LOG(error) << "notifications: cannot index the replay log: " << e.what();
        }
        std::lock_guard lock(mutex_);
        index_.insert(index_.begin(), old.begin(), old.end());
        indexed_ = true;
    });
}

Service::~Service() {
    if (indexer_.joinable()) {
        indexer_.join();
    }
    store_.removeListener(*this);
    // The store outlives this object: its hook must not call into it any more.
    store_.addJournal(kJournal, [](const ds::ChangeSet&) { return std::vector<std::string>{}; });
}

void Service::raise(const std::string& content) {
    store_.appendJournal(kJournal, row(Clock::now(), content));
}

void Service::raise(const std::string& content, std::chrono::system_clock::time_point eventTime) {
    store_.appendJournal(kJournal, row(eventTime, content));
}

std::shared_ptr<void> Service::follow() {
    // Not between publish()'s look at the count and its publication: an event is either on the
    // bus before the caller subscribes, or carries its change set.
    std::lock_guard lock(publishing_);
    followers_.fetch_add(1, std::memory_order_acq_rel);
    return std::shared_ptr<void>(nullptr,
                                 [this](void*) { followers_.fetch_sub(1, std::memory_order_acq_rel); });
}

void Service::changed(const ds::ChangeSet& changes) {
    std::vector<EventPtr> events;
    std::lock_guard lock(publishing_);
    eventsOf(changes, nullptr, events);
    bus_.publish(events);
}

void Service::published(const std::shared_ptr<const ds::ChangeSet>& changes) {
    publishedBatch({changes});
}

void Service::publishedBatch(const std::vector<std::shared_ptr<const ds::ChangeSet>>& batch) {
    std::vector<EventPtr> events;
    std::lock_guard lock(publishing_);
    for (const auto& changes : batch) {
        eventsOf(*changes, changes, events);
    }
    bus_.publish(events);
}

void Service::eventsOf(const ds::ChangeSet& changes, const std::shared_ptr<const ds::ChangeSet>& shared,
                       std::vector<EventPtr>& out) {
    for (const auto& [name, text] : changes.journal) {
        if (name != kJournal) {
            continue;
        }
        auto event = parseRow(changes.commitId, text);
        if (!event) {
            NCS_LOG(error) << "notifications: unreadable event at commit " << changes.commitId;
            continue;
        }
        remember(event->id, event->time);
        if (shared && changes.origin != ds::Origin::Event && followers_.load(std::memory_order_acquire) > 0) {
            event->changes = shared;
            event->changesBytes = footprint(changes);
        }
        out.push_back(std::make_shared<const Event>(std::move(*event)));
    }
}

void Service::lost(std::uint64_t through) {
    NCS_LOG(warning) << "notifications: the publisher dropped change sets through commit " << through
                     << ": every live subscription ends (its subscriber can replay from the log)";
    bus_.failAll();
}

void Service::remember(std::uint64_t id, Clock::time_point time) {
    std::lock_guard lock(mutex_);
    index_.emplace_back(id, time);
}

std::uint64_t Service::replay(Clock::time_point start, std::optional<Clock::time_point> stop,
                              const std::function<void(const Event&)>& fn) const {
    std::uint64_t after = 0;
    {
        std::lock_guard lock(mutex_);
        if (indexed_) {
            // The last event before `start`: the log is read from the one after it.
            auto it =
                std::lower_bound(index_.begin(), index_.end(), start,
                                 [](const auto& entry, Clock::time_point t) { return entry.second < t; });
            if (it != index_.begin()) {
                after = std::prev(it)->first;
            }
        }
    }
    std::uint64_t last = after;
    store_.readJournal(kJournal, after, [&](const ds::JournalRow& r) {
        last = r.commitId;
        auto event = parseRow(r.commitId, r.data);
        if (!event || event->time < start || (stop && event->time > *stop)) {
            return;
        }
        fn(*event);
    });
    return last;
}

Clock::time_point Service::logCreationTime() const {
    std::lock_guard lock(mutex_);
    return indexed_ && !index_.empty() ? std::min(index_.front().second, started_) : started_;
}

void Service::trim() {
    std::uint64_t through = 0;
    {
        std::lock_guard lock(mutex_);
        if (!indexed_) {
            return;
        }
        const auto cutoff = Clock::now() - options_.maxAge;
        while (!index_.empty() && (index_.size() > options_.maxEvents || index_.front().second < cutoff)) {
            through = index_.front().first;
            index_.pop_front();
        }
    }
    if (through != 0) {
        store_.trimJournal(kJournal, through);
    }
}

} // namespace ncstore::netconfd::notify
