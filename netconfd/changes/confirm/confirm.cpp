#include "confirm.hpp"

#include "ncstore/changes.hpp"
#include "ncstore/fields.hpp"
#include "ncstore/log.hpp"

#include <string_view>
#include <utility>
#include <vector>

namespace ncstore::netconfd::confirm {

namespace {

constexpr std::string_view kPending = "pending\n";
constexpr std::string_view kEnded = "ended\n";

using fields::number;
using fields::put;
using fields::take;

} // namespace

const char* toString(Event e) {
    switch (e) {
    case Event::Start:
        return "start";
    case Event::Extend:
        return "extend";
    case Event::Complete:
        return "complete";
    case Event::Cancel:
        return "cancel";
    case Event::Timeout:
        return "timeout";
    }
    return "?";
}

ConfirmedCommit::ConfirmedCommit(ds::Store& store, const ly_ctx* ctx, RestoreFn restore, NoticeFn notice)
    : store_(store), ctx_(ctx), restore_(std::move(restore)), notice_(std::move(notice)) {}

std::string ConfirmedCommit::encode(const Pending& p) {
    std::string out(kPending);
    put(out, std::to_string(p.session));
    put(out, p.user);
    put(out, p.host);
    put(out, p.persist ? "1" : "0");
    put(out, p.persist.value_or(""));
    put(out, std::to_string(p.timeout));
    put(out, p.rollbackPoint);
    return out;
}

std::optional<ConfirmedCommit::Pending> ConfirmedCommit::decode(const std::string& row) {
    std::string_view in(row);
    if (!in.starts_with(kPending)) {
        return std::nullopt;
    }
    in.remove_prefix(kPending.size());
    std::vector<std::string_view> f;
    for (int i = 0; i < 7; ++i) {
        auto field = take(in);
        if (!field) {
            throw std::runtime_error("the confirmed-commit journal holds a damaged row");
        }
        f.push_back(*field);
    }
    Pending p;
    const auto session = number<std::uint32_t>(f[0]);
    const auto timeout = number<std::uint32_t>(f[5]);
    if (!session || !timeout) {
        throw std::runtime_error("the confirmed-commit journal holds a damaged row");
    }
    p.session = *session;
    p.user = f[1];
    p.host = f[2];
    if (f[3] == "1") {
        p.persist = std::string(f[4]);
    }
    p.timeout = *timeout;
    p.rollbackPoint = f[6];
    return p;
}

void ConfirmedCommit::recover() {
    std::lock_guard lock(mutex_);
    std::optional<Pending> last;
    store_.readJournal(kJournal, 0, [&](const ds::JournalRow& r) { last = decode(r.data); });
    if (!last) {
        return;
    }
    NCS_LOG(warning) << "a confirmed commit of session " << last->session << " (" << last->user
                     << ") was pending when the server stopped: running is restored to its content "
                        "before it (RFC 6241 8.4)";
    pending_ = std::move(last);
    rollBack(Event::Cancel);
}

void ConfirmedCommit::checkMayFollow(const ds::WriteContext& who, const std::optional<std::string>& persistId,
                                     const char* what) const {
    if (persistId) {
        if (!pending_ || !pending_->persist || *pending_->persist != *persistId) {
            throw ds::Error(ds::ErrorTag::InvalidValue,
                            std::string("no confirmed commit with this persist-id is pending (") + what + ")",
                            "", "");
        }
        return;
    }
    if (pending_->persist) {
        if (pending_->session == who.session) {
            return; // the issuer itself, still connected
        }
        throw ds::Error(ds::ErrorTag::InUse, std::string("a persistent confirmed commit is pending: ") +
                                                 what + " must give its persist-id");
    }
    if (pending_->session != who.session) {
        throw ds::Error(ds::ErrorTag::InUse, "a confirmed commit of session " +
                                                 std::to_string(pending_->session) +
                                                 " is pending: only that session may " + what);
    }
}

ds::WriteTiming ConfirmedCommit::commit(const ds::WriteContext& who, const CommitParams& params,
                                        const CommitFn& commitFn) {
    std::unique_lock lock(mutex_);
    if (!pending_) {
        if (params.persistId) {
            throw ds::Error(ds::ErrorTag::InvalidValue,
                            "no confirmed commit with this persist-id is pending");
        }
        if (!params.confirmed) {
            // The ordinary commit: nothing to remember, and not serialized here, so that the
            // commits of many sessions still share the store's group commits.
            lock.unlock();
            return commitFn();
        }
    } else {
        checkMayFollow(who, params.persistId, "commit");
    }

    if (!params.confirmed) {
        // The confirming commit. Its end is written once the commit is durable: killed before
        // that, the restart rolls back, and the client never had its reply.
        const ds::WriteTiming timing = commitFn();
        writeEnded();
        Notice n{Event::Complete, who.session, who.user, who.host, 0};
        pending_.reset();
        notice_(n);
        return timing;
    }

    Pending next;
    next.session = who.session;
    next.user = who.user;
    next.host = who.host;
    // A follow-up without <persist> keeps the token it was given (by persist-id or by the issuer).
    next.persist = params.persist ? params.persist : (pending_ ? pending_->persist : std::nullopt);
    next.timeout = params.timeout;
    if (pending_) {
        next.rollbackPoint = pending_->rollbackPoint;
    } else {
        const Tree running = store_.snapshot(ds::Datastore::Running);
        next.rollbackPoint = running ? print(running.get(), LYD_LYB, LYD_PRINT_WD_EXPLICIT) : std::string();
    }
    // Durable before the commit is applied (rule 4: in order with it).
    const std::uint64_t row = store_.appendJournalDurable(kJournal, encode(next));
    ds::WriteTiming timing;
    try {
        timing = commitFn();
    } catch (...) {
        // Put back what the journal said before: the earlier pending state, or none.
        try {
            if (pending_) {
                store_.appendJournalDurable(kJournal, encode(*pending_));
            } else {
                writeEnded();
            }
        } catch (const std::exception& e) {
            NCS_LOG(error) << "confirmed commit: cannot record that a commit failed: " << e.what();
        }
        throw;
    }
    const Event event = pending_ ? Event::Extend : Event::Start;
    try {
        // The rows before this one (a follow-up's predecessors) are not needed any more: many
        // follow-ups keep one copy of the rollback point on disk, not one each.
        store_.trimJournal(kJournal, row - 1);
    } catch (const std::exception& e) {
        NCS_LOG(warning) << "confirmed commit: older journal rows not trimmed: " << e.what();
    }
    next.deadline = Clock::now() + std::chrono::seconds(next.timeout);
    pending_ = std::move(next);
    NCS_LOG(info) << "confirmed commit by session " << who.session << " (" << who.user
                  << "): " << toString(event) << ", rolled back in " << params.timeout
                  << " s unless confirmed" << (params.persist ? " (persistent)" : "");
    notice_(Notice{event, who.session, who.user, who.host, params.timeout});
    return timing;
}

void ConfirmedCommit::cancel(const ds::WriteContext& who, const std::optional<std::string>& persistId) {
    std::lock_guard lock(mutex_);
    if (!pending_) {
        throw ds::Error(ds::ErrorTag::OperationFailed, "no confirmed commit is pending");
    }
    checkMayFollow(who, persistId, "cancel it");
    NCS_LOG(info) << "confirmed commit of session " << pending_->session << " cancelled by session "
                  << who.session;
    rollBack(Event::Cancel);
}

void ConfirmedCommit::sessionEnded(std::uint32_t session) {
    std::lock_guard lock(mutex_);
    if (!pending_ || pending_->persist || pending_->session != session) {
        return;
    }
    NCS_LOG(info) << "session " << session << " ended with its confirmed commit pending: rolled back";
    try {
        rollBack(Event::Cancel);
    } catch (const std::exception& e) {
        NCS_LOG(error) << "confirmed commit: rollback after the end of session " << session
                       << " failed: " << e.what();
    }
}

void ConfirmedCommit::tick(Clock::time_point now) {
    std::lock_guard lock(mutex_);
    if (!pending_ || now < pending_->deadline || now < retryAt_) {
        return;
    }
    NCS_LOG(info) << "confirmed commit of session " << pending_->session << " not confirmed within "
                  << pending_->timeout << " s: rolled back";
    try {
        rollBack(Event::Timeout);
    } catch (const std::exception& e) {
        NCS_LOG(error) << "confirmed commit: rollback on timeout failed, tried again in a minute: "
                       << e.what();
        retryAt_ = now + std::chrono::minutes(1);
    }
}

bool ConfirmedCommit::pending() const {
    std::lock_guard lock(mutex_);
    return pending_.has_value();
}

void ConfirmedCommit::rollBack(Event why) {
    Tree point;
    if (!pending_->rollbackPoint.empty()) {
        point = parseData(ctx_, pending_->rollbackPoint, LYD_LYB, LYD_PARSE_ONLY | LYD_PARSE_STRICT, 0);
    }
    restore_(point.get());
    writeEnded();
    const Notice n{why, pending_->session, pending_->user, pending_->host, 0};
    pending_.reset();
    notice_(n);
}

void ConfirmedCommit::writeEnded() {
    const std::uint64_t id = store_.appendJournalDurable(kJournal, std::string(kEnded));
    // Nothing before the end row is needed any more, nor the end row itself.
    store_.trimJournal(kJournal, id);
}

} // namespace ncstore::netconfd::confirm
