// The candidate datastore's operations (RFC 6241 8.3, 8.4): commit (confirmed or not),
// cancel-commit, discard-changes.
#include "rpcargs.hpp"
#include "server.hpp"

#include "ncstore/log.hpp"

namespace ncstore::netconfd {

Reply Server::opCommit(Request& r) {
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
    WriteCheck check = writeCheck(r, true);
    ds::WriteContext who = check.context(writer(r.session));
    // ncstore-commits' augment: the history's comment
    who.comment = rpcargs::valueOf(rpcargs::child(r.op, "comment"));
    reply.write = confirm_->commit(writer(r.session), params,
                                   [&] { return check.run(*store_, [&] { return store_->commit(who); }); });
    return reply;
}

Reply Server::opCancelCommit(Request& r) {
    std::optional<std::string> persistId;
    if (const lyd_node* id = rpcargs::child(r.op, "persist-id")) {
        persistId = rpcargs::valueOf(id);
    }
    confirm_->cancel(writer(r.session), persistId);
    return Reply::ok();
}

Reply Server::opDiscardChanges(Request& r) {
    store_->discardChanges(writer(r.session));
    return Reply::ok();
}

} // namespace ncstore::netconfd
