// Global datastore locks (RFC 6241 7.5, 7.6).
#include "ops.hpp"

#include "rpcargs.hpp"

#include "ncstore/log.hpp"

namespace ncstore::netconfd {

class LockOps {
public:
    explicit LockOps(const Services& svc) : svc_(svc) {}
    Reply lockOrUnlock(Request& r, bool lock);
    Reply lock(Request& r);
    Reply unlock(Request& r);

private:
    Services svc_;
};

using namespace rpcargs;

Reply LockOps::lockOrUnlock(Request& r, bool lock) {
    const lyd_node* rpc = r.op;
    const auto target = requireDatastore(rpc, "target");
    if (lock) {
        const auto outcome = svc_.store.lock(target, r.session.id);
        switch (outcome.result) {
        case ds::LockResult::Granted:
            NCS_LOG(info) << "session " << r.session.id << " locked " << ds::toString(target);
            return Reply::ok();
        case ds::LockResult::HeldByOther:
            throw RpcError::lockDenied("Lock failed, lock is already held by session " +
                                           std::to_string(outcome.holder),
                                       outcome.holder);
        case ds::LockResult::CandidateModified:
            throw RpcError::lockDenied(
                "the candidate datastore has uncommitted changes made by another session", 0);
        }
    }
    switch (svc_.store.unlock(target, r.session.id)) {
    case ds::UnlockResult::Released:
        // Candidate changes made under the lock went with it (RFC 6241 8.3.5.2, in the store).
        NCS_LOG(info) << "session " << r.session.id << " unlocked " << ds::toString(target);
        return Reply::ok();
    case ds::UnlockResult::NotLocked:
        throw RpcError::operationFailed(
            std::string("the ") + ds::toString(target) + " datastore is not locked", ErrorType::Protocol);
    case ds::UnlockResult::HeldByOther:
        break;
    }
    std::uint32_t holder = 0;
    for (const auto& held : svc_.store.locks()) {
        holder = held.ds == target ? held.session : holder;
    }
    throw RpcError::operationFailed(std::string("the ") + ds::toString(target) + " lock is held by session " +
                                        std::to_string(holder),
                                    ErrorType::Protocol);
}

Reply LockOps::lock(Request& r) {
    return lockOrUnlock(r, true);
}

Reply LockOps::unlock(Request& r) {
    return lockOrUnlock(r, false);
}

void addLockOperations(Dispatcher& d, const Services& svc) {
    const auto ops = std::make_shared<LockOps>(svc);
    d.add("ietf-netconf", "lock", handler(ops, &LockOps::lock));
    d.add("ietf-netconf", "unlock", handler(ops, &LockOps::unlock));
}

} // namespace ncstore::netconfd
