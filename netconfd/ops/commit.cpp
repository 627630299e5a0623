// The candidate datastore's operations (RFC 6241 8.3, 8.4): commit (confirmed or not),
// cancel-commit, discard-changes.
#include "ops.hpp"

#include "edit.hpp"
#include "rpcargs.hpp"

#include "confirm.hpp"

#include "ncstore/log.hpp"

namespace ncstore::netconfd {

class CommitOps {
public:
    explicit CommitOps(const Services& svc) : svc_(svc) {}
    Reply commit(Request& r);
    Reply cancelCommit(Request& r);
    Reply discardChanges(Request& r);

private:
    Services svc_;
};

Reply CommitOps::commit(Request& r) {
    confirm::CommitParams params;
    params.confirmed = rpcargs::child(r.op, "confirmed") != nullptr;
    if (const lyd_node* timeout = rpcargs::child(r.op, "confirm-timeout")) {
        // uint32 1..max, checked by the schema
        params.timeout = reinterpret_cast<const lyd_node_term*>(timeout)->value.uint32;
    }
    if (const lyd_node* persist = rpcargs::child(r.op, "persist")) {
        params.persist = rpcargs::valueOf(persist);
    }
    if (const lyd_node* persistId = rpcargs::child(r.op, "persist-id")) {
        params.persistId = rpcargs::valueOf(persistId);
    }
    Reply reply;
    // Checked against the committer's rights, whoever edited the candidate.
    WriteCheck check = edit::writeCheck(svc_, r, true);
    ds::WriteContext who = check.context(writer(r.session));
    // ncstore-commits' augment: the history's comment
    who.comment = rpcargs::valueOf(rpcargs::child(r.op, "comment"));
    reply.write = svc_.confirm.commit(writer(r.session), params, [&] {
        return check.run(svc_.store, [&] { return svc_.store.commit(who); });
    });
    return reply;
}

Reply CommitOps::cancelCommit(Request& r) {
    std::optional<std::string> persistId;
    if (const lyd_node* id = rpcargs::child(r.op, "persist-id")) {
        persistId = rpcargs::valueOf(id);
    }
    svc_.confirm.cancel(writer(r.session), persistId);
    return Reply::ok();
}

Reply CommitOps::discardChanges(Request& r) {
    svc_.store.discardChanges(writer(r.session));
    return Reply::ok();
}

void addCommitOperations(Dispatcher& d, const Services& svc) {
    const auto ops = std::make_shared<CommitOps>(svc);
    d.add("ietf-netconf", "commit", handler(ops, &CommitOps::commit, true));
    d.add("ietf-netconf", "cancel-commit", handler(ops, &CommitOps::cancelCommit, true));
    d.add("ietf-netconf", "discard-changes", handler(ops, &CommitOps::discardChanges));
}

} // namespace ncstore::netconfd
