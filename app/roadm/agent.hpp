// ncstore-roadm-agent: makes ncstored behave as an Open ROADM 2.2.1 device, over the
// application API (<ncstore/app.hpp>). The guide: docs/roadm-device.md; the man page:
// packaging/ncstore-roadm-agent.8.
//
// What it promises, on one Connection:
//  - Verify: every commit touching org-openroadm-device is checked against rules.hpp; a refusal
//    reaches the NETCONF client with the rule's error-tag, message, error-path and app-tag.
//  - Apply, with resume: every durable change set of org-openroadm-device is applied once, in
//    order; the last commit id applied is kept in the state file (written after the change set
//    was acted on), so that a restart, also after kill -9, starts after it and misses nothing.
//    Each applied change set raises change-notification (target + operation per change, who
//    and when from the server's commit history), sent from a thread of its own: the commit
//    record is an operational read, and the server asks every pull provider for a read whose
//    XPath has predicates, this agent's own included, which could not answer while its callback
//    thread waits for that read. The commit id is recorded once its notification is out.
//  - State: info (profile), shelves, circuit-packs, ports, interfaces, degrees and SRGs with the
//    operational state that follows administrative state are pushed (lifetime: the connection)
//    whenever the configuration changes; current-datetime and current-pm-list are pulled (computed
//    at each read).
//  - Alarms: active-alarm-list is pushed persistent, so an alarm outlives an agent restart until
//    cleared; at start the agent reconciles it with the configuration. A port that is
//    administratively outOfService has an administrativeDown alarm; led-control, disable-automatic-
//    shutoff and faults injected through the control FIFO raise theirs. Every raise and clear
//    sends alarm-notification.
//  - RPCs: led-control, get-connection-port-trail, set-current-datetime, disable-automatic-shutoff,
//    create-tech-info, org-openroadm-de-operations restart, org-openroadm-database db-backup,
//    db-restore, db-activate; the notifications the models pair with them.
#pragma once

#include "device.hpp"
#include "profile.hpp"
#include "state.hpp"

#include "ncstore/yang.hpp"

#include <ncstore/app.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace ncstore::roadm {

struct AgentOptions {
    std::filesystem::path filesDir;  ///< tech-info, db-backup files; created if missing
    std::filesystem::path stateFile; ///< the last commit id applied
};

class Agent {
public:
    /// `ctx` holds the models ncstored serves (for parsing what the server sends).
    Agent(ncstore::app::Connection& nc, const ly_ctx* ctx, Profile profile, AgentOptions options);
    ~Agent();
    Agent(const Agent&) = delete;
    Agent& operator=(const Agent&) = delete;

    /// Reconciles state and alarms, registers providers and RPCs, subscribes (resuming after the
    /// commit in the state file, if any). Throws ncstore::app::Error or std::runtime_error.
    void start();
    /// Whether start() resumed, and after which commit.
    std::optional<std::uint64_t> resumedAfter() const { return since_; }

    /// A control line (docs/roadm-device.md, "Injecting faults"): "raise KIND NAME [PORT] CAUSE
    /// SEVERITY [DETAIL...]" or "clear KIND NAME [PORT] CAUSE". Returns what was done, or throws
    /// std::invalid_argument for a line it cannot read.
    std::string control(const std::string& line);
    /// Periodic work (expiring timed alarms); called by main's loop.
    void tick();

private:
    Device readRunning(ncstore::app::Datastore ds = ncstore::app::Datastore::Running);
    Device parseDevice(const std::string& xml) const;
    void onApply(const ncstore::app::ChangeSet& changes);
    void verify(const ncstore::app::ChangeSet& changes, ncstore::app::Verification& v);
    void publishState();               // caller holds mutex_
    void reconcileAlarms();            // caller holds mutex_
    void raise(const Alarm& a);        // caller holds mutex_
    void clear(const std::string& id); // caller holds mutex_
    void loadAlarms();
    void notifyLoop();
    void changeNotification(const ncstore::app::ChangeSet& changes);
    void saveCommit(std::uint64_t id);
    std::chrono::system_clock::time_point deviceClock() const;
    std::string moduleNamespace(const std::string& module) const;
    void registerRpcs();
    std::filesystem::path fileIn(const std::string& name) const; // throws ncstore::app::Error

    ncstore::app::Connection& nc_;
    const ly_ctx* ctx_;
    const Profile profile_;
    const AgentOptions options_;
    std::optional<std::uint64_t> since_;

    mutable std::mutex mutex_; // everything below
    Device device_;
    std::map<std::string, Alarm> alarms_;
    std::map<std::string, std::chrono::steady_clock::time_point> alarmExpiry_;
    std::map<std::string, std::chrono::system_clock::time_point> unavailableSince_; // "cp/port"
    std::set<std::string> pushedEntries_; // paths of the list entries whose state was pushed
    std::chrono::system_clock::duration clockOffset_{0};
    std::optional<std::filesystem::path> staged_; // db-restore's file, for db-activate

    std::vector<ncstore::app::Registration> registrations_;
    std::mutex queueMutex_; // change sets applied, for notifyLoop
    std::condition_variable queueReady_;
    std::deque<ncstore::app::ChangeSet> queue_;
    bool stopping_ = false;
    std::thread notifier_;
    std::mutex workersMutex_;
    std::vector<std::thread> workers_; // db-activate waiting for its commit
};

} // namespace ncstore::roadm
