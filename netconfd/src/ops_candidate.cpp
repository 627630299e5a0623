// The candidate datastore's operations (RFC 6241 8.3): commit, discard-changes.
#include "rpcargs.hpp"
#include "server.hpp"

#include "ncstore/log.hpp"

namespace ncstore::netconfd {

Reply Server::opCommit(Request& r) {
    Reply reply;
    // Checked against the committer's rights, whoever edited the candidate.
    WriteCheck check = writeCheck(r, true);
    const ds::WriteContext who = check.context(writer(r.session));
    reply.write = check.run(*store_, [&] { return store_->commit(who); });
    return reply;
}

Reply Server::opDiscardChanges(Request& r) {
    store_->discardChanges(writer(r.session));
    return Reply::ok();
}

} // namespace ncstore::netconfd
