// :confirmed-commit:1.1 (RFC 6241 8.4): a commit of candidate that running forgets by itself
// unless it is confirmed in time.
//
// Promises:
//  - A confirmed <commit> keeps running's content from before it (the rollback point) and a
//    deadline (confirm-timeout, 600 s by default). Unless a confirming <commit> comes first,
//    running is restored to the rollback point when the deadline passes, when <cancel-commit>
//    asks for it, and, for a confirmed commit without <persist>, when the session that issued it
//    ends. A follow-up confirmed commit commits again and sets a new deadline; the rollback point
//    stays that of the first one, and so does the persist token unless it gives a new one.
//  - Who may follow up: without <persist>, only the issuing session; with <persist>, any session
//    that gives the same <persist-id>. Anyone else gets in-use (a commit) and nothing changes;
//    a <persist-id> that matches no pending confirmed commit gets invalid-value.
//  - Durable: the pending state (rollback point, issuer, persist token) is in the store's
//    journal before the confirmed commit is applied, in order with it, and its end is written
//    after the confirming commit or the rollback is durable. So a server killed or restarted
//    while a confirmed commit is pending restores the rollback point when it starts again (the
//    confirmed commit was never confirmed), and an acknowledged confirming commit is never
//    undone. The only state the restart cannot tell apart: killed after the pending state was
//    written but before the confirmed commit was, the restart restores the content the commit
//    started from, i.e. running as it was.
//  - Cost: while no confirmed commit is pending, a commit takes one uncontended mutex and
//    nothing else (commits of many sessions are not serialized here); a confirmed commit writes
//    the rollback point (a copy of running, LYB) once, a follow-up writes it again. While one is
//    pending, commits go one at a time (each may be the confirming one).
//  - A rollback is a write of the server itself (session 0: no datastore lock blocks it, no
//    NACM rule applies, RFC 8341 3.2), validated like any write; if it fails (the rollback point
//    no longer validates under changed models), the confirmed commit stays pending, the log says
//    why, and it is tried again a minute later.
//  - Not here: the NETCONF encoding of requests and errors, NACM, the notification's content:
//    the server passes the commit itself (commitFn) and the rollback write (restoreFn), and
//    hears of every event through Notice.
#pragma once

#include "ncstore/datastore.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

namespace ncstore::netconfd::confirm {

/// The journal of the store that holds the pending state.
inline constexpr const char* kJournal = "confirmed-commit";
inline constexpr std::uint32_t kDefaultTimeout = 600;

/// The confirmed-commit parameters of one <commit>.
struct CommitParams {
    bool confirmed = false;
    std::uint32_t timeout = kDefaultTimeout; ///< seconds, >= 1
    std::optional<std::string> persist;
    std::optional<std::string> persistId;
};

/// RFC 6470 confirm-event.
enum class Event { Start, Extend, Complete, Cancel, Timeout };
const char* toString(Event e);

/// What happened, for the netconf-confirmed-commit notification.
struct Notice {
    Event event;
    std::uint32_t session = 0; ///< the session that caused it (for a rollback: the issuer)
    std::string user;
    std::string host;
    std::uint32_t timeout = 0; ///< with Start and Extend
};

class ConfirmedCommit {
public:
    using Clock = std::chrono::steady_clock;
    /// Commits candidate as the requesting session (the server's commit, NACM included).
    using CommitFn = std::function<ds::WriteTiming()>;
    /// Replaces running with `config` as the server itself.
    using RestoreFn = std::function<void(const lyd_node* config)>;
    using NoticeFn = std::function<void(const Notice&)>;

    ConfirmedCommit(ds::Store& store, const ly_ctx* ctx, RestoreFn restore, NoticeFn notice);

    /// At start-up, before any session: a confirmed commit that was pending when the server
    /// stopped is rolled back. Throws when the journal cannot be read or the rollback fails.
    void recover();

    /// A <commit> of session `who` with `params`: plain, confirmed, follow-up or confirming.
    /// Throws ds::Error (InUse, InvalidValue) when the session may not, or what `commit` throws.
    ds::WriteTiming commit(const ds::WriteContext& who, const CommitParams& params, const CommitFn& commit);
    /// <cancel-commit>. Throws ds::Error when none is pending or the session may not cancel it.
    void cancel(const ds::WriteContext& who, const std::optional<std::string>& persistId);
    /// The session ended: its pending confirmed commit without persist is rolled back.
    void sessionEnded(std::uint32_t session);
    /// Rolls back a confirmed commit whose deadline passed (called often by the server).
    void tick(Clock::time_point now = Clock::now());

    bool pending() const;

private:
    struct Pending {
        std::uint32_t session = 0;
        std::string user;
        std::string host;
        std::optional<std::string> persist;
        std::uint32_t timeout = 0;
        Clock::time_point deadline;
        std::string rollbackPoint; ///< running before the first confirmed commit, LYB
    };
    static std::string encode(const Pending& p);
    static std::optional<Pending> decode(const std::string& row);
    /// Checks that `who` with `persistId` may act on the pending confirmed commit.
    void checkMayFollow(const ds::WriteContext& who, const std::optional<std::string>& persistId,
                        const char* what) const;
    /// Restores the rollback point, then ends the pending state durably. Under mutex_.
    void rollBack(Event why);
    /// Writes that nothing is pending, and drops the journal's older rows. Under mutex_.
    void writeEnded();

    ds::Store& store_;
    const ly_ctx* ctx_;
    RestoreFn restore_;
    NoticeFn notice_;
    mutable std::mutex mutex_; // one confirmed-commit operation at a time; guards pending_
    std::optional<Pending> pending_;
    Clock::time_point retryAt_{}; // after a failed rollback
};

} // namespace ncstore::netconfd::confirm
