// NACM (RFC 8341) in the server: the policy in force, what a session may do, the check the
// datastore runs on every write, and the counters. The decisions are the engine's
// (netconfd/nacm/nacm.hpp); this is where the server asks for them.
//
// Promises:
//  - One compiled Policy is in force at a time (AccessControl). It changes only through a write of
//    running that changes /nacm: the write's WriteCheck validates and compiles the configuration
//    the write leaves, inside the store's critical section, so that a bad configuration (a
//    rule-list naming an undefined group, a rule path naming nothing, ...) refuses the write with
//    invalid-value and changes nothing; once the store returns (the write is durable), WriteCheck
//    installs the compiled policy, before the write's reply is sent. So the next RPC of every
//    session, the writer's own included, is decided by the new rules. A listener could not
//    promise that: it runs after the commit, on another thread. Policies compiled by concurrent
//    writes are installed in the order of the writes, never an older one over a newer one.
//  - A user whose rules permit everything (permitsAll), NACM disabled, and the recovery user's
//    sessions (RFC 8341 3.3.3: --nacm-recovery-user) take the NACM-off path: no check at all,
//    no change set built for their writes, except for a write that may change /nacm itself,
//    whose new configuration is validated whoever writes it.
//  - Write checks (RFC 8341 3.4.5) work on the logical change set (ncstore/changes.hpp): every
//    create, update and delete the write makes, checked before anything is visible; the first
//    denied node (in change order, then document order within a created or deleted subtree) is
//    the error-path of the access-denied error, and nothing changes. Nodes that hold their
//    default value are not written (changes.hpp rule 1) and are not checked, nor are non-presence
//    containers, which come and go with their children (those are checked). A move of an
//    ordered-by-user entry and a changed anydata value are updates.
//  - Counters: one denied-operations per refused RPC, one denied-data-writes per refused write,
//    one denied-notifications per notification a session is not sent; kept across policy
//    changes, shown in the /nacm state data of <get>.
//  - A stored configuration that no longer compiles (e.g. a rule path into a module no longer
//    loaded) puts the server into lockdown: every request is denied but the recovery user's,
//    and the log says why and how to recover. Never silently more permissive.
#pragma once

#include "nacm.hpp"

#include "ncstore/changes.hpp"
#include "ncstore/datastore.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

namespace ncstore::netconfd {

class AccessControl {
public:
    /// `recoveryUser`: the user whose sessions bypass NACM ("" for none).
    AccessControl(const ly_ctx* ctx, std::string recoveryUser);

    /// Compiles running's /nacm as the policy in force (at start-up; logs what is in force).
    void load(const ds::Store& store);

    /// The policy in force.
    std::shared_ptr<const nacm::Policy> policy() const;
    /// What `user` may do under the policy in force (the recovery user: everything).
    std::shared_ptr<const nacm::Access> forUser(const std::string& user) const;
    bool isRecoveryUser(const std::string& user) const { return !recovery_.empty() && user == recovery_; }
    /// Whether the stored configuration did not compile and everything but recovery is denied.
    bool lockdown() const { return lockdown_.load(); }

    nacm::Counters& counters() noexcept { return counters_; }
    const nacm::Counters& counters() const noexcept { return counters_; }
    const ly_ctx* context() const noexcept { return ctx_; }

    /// A sequence number for a policy about to be compiled: taken in the order of the writes.
    std::uint64_t reserve() { return nextSeq_.fetch_add(1) + 1; }
    /// Makes `policy` the one in force unless one compiled later already is. `lockdown`: it is
    /// the lockdown policy standing in for a stored configuration that does not compile.
    void install(std::shared_ptr<const nacm::Policy> policy, std::uint64_t seq, bool lockdown = false);
    /// Compiles running's /nacm as durable now and installs it (after a write that may have
    /// changed /nacm failed in a way that leaves open whether it is durable).
    void reload(const ds::Store& store);

private:
    std::shared_ptr<const nacm::Policy> compileStored(const ds::Store& store, bool& lockdown) const;

    const ly_ctx* ctx_;
    const std::string recovery_;
    mutable std::mutex mutex_; // guards policy_ and installed_
    std::shared_ptr<const nacm::Policy> policy_;
    std::uint64_t installed_ = 0;
    std::atomic<std::uint64_t> nextSeq_{0};
    std::atomic<bool> lockdown_{false}; // written under mutex_
    nacm::Counters counters_;
};

/// What one session may do: asked per RPC by the dispatcher and per notification by the
/// notification sender (thread-safe; always the policy in force at the time of the question).
class SessionAccess {
public:
    SessionAccess(AccessControl& control, std::string user)
        : control_(control), user_(std::move(user)), recovery_(control.isRecoveryUser(user_)) {}

    /// The session user's access under the policy in force.
    std::shared_ptr<const nacm::Access> current() const { return control_.forUser(user_); }
    /// RFC 8341 3.4.6: whether `notification` (a parsed notification: top-level, or nested in
    /// its data nodes) may be sent to this session; a refusal counts one denied-notification.
    bool maySend(const lyd_node* notification) const;
    /// As maySend(notification), for a top-level notification by its module and name under
    /// `access` (current(), taken once for a batch of notifications).
    bool maySend(const nacm::Access& access, std::string_view module, std::string_view name) const;
    /// The recovery session (RFC 8341 3.3.3): not checked.
    bool recovery() const { return recovery_; }

private:
    AccessControl& control_;
    const std::string user_;
    const bool recovery_;
};

/// The datastore's access policy for one write (ds::AccessPolicy): the writer's write access,
/// and the validation and compilation of a changed /nacm.
class WriteCheck final : public ds::AccessPolicy {
public:
    /// `access`: the writer's rights, nullptr when no write of theirs can be denied.
    /// `mayChangeNacm`: the write may change running's /nacm (its new content is then validated
    /// and compiled). `install`: the compiled policy goes into force once the write returns
    /// (false for test-only edits and for offline tools, which have no policy in force).
    WriteCheck(AccessControl& control, const nacm::Access* access, bool mayChangeNacm, bool install = true)
        : control_(control), access_(access), mayChangeNacm_(mayChangeNacm), install_(install) {}

    /// `who` with this check as its policy: none when there is nothing to check, so that the
    /// store builds no change set for it (the NACM-off path).
    ds::WriteContext context(ds::WriteContext who) const {
        who.policy = access_ || mayChangeNacm_ ? this : nullptr;
        return who;
    }

    /// Runs `write` (a call of the store with context()) and puts the NACM configuration it
    /// wrote into force before returning.
    template <class Write> auto run(const ds::Store& store, Write&& write) {
        try {
            auto result = write();
            settle(nullptr);
            return result;
        } catch (...) {
            settle(&store);
            throw;
        }
    }

    void checkWrite(const ds::ChangeSet& changes, const lyd_node* result) const override;

private:
    void checkAccess(const ds::ChangeSet& changes, const lyd_node* result) const;
    void compileNacm(const ds::ChangeSet& changes, const lyd_node* result) const;
    /// After the write: install what it compiled; after a failure (store != nullptr), read back
    /// what is durable, since a stop-on-error edit fails after writing part of itself.
    void settle(const ds::Store* failed);

    AccessControl& control_;
    const nacm::Access* access_;
    const bool mayChangeNacm_;
    const bool install_;
    // Set by checkWrite, under the store's lock, read after the store returned.
    mutable std::shared_ptr<const nacm::Policy> compiled_;
    mutable std::uint64_t seq_ = 0;
};

/// Whether the schema node `node` is /ietf-netconf-acm:nacm or lies below it.
bool isNacmTop(const lysc_node* node);
/// The /ietf-netconf-acm:nacm node among the top-level nodes of `forest`, or nullptr.
const lyd_node* nacmTop(const lyd_node* forest);

} // namespace ncstore::netconfd
