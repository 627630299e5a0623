// The commit history's operation (ncstore-commits): rollback to the state right after a commit.
// The history itself is netconfd/history; its listing is state data (state.cpp).
#include "rpcargs.hpp"
#include "server.hpp"

#include "ncstore/log.hpp"

namespace ncstore::netconfd {

Reply Server::opRollback(Request& r) {
    const lyd_node* idNode = rpcargs::child(r.op, "id"); // mandatory: the schema checked it is there
    if (!idNode) {
        throw RpcError(ErrorTag::MissingElement, ErrorType::Protocol, "rollback needs <id>")
            .withBadElement("id");
    }
    const std::uint64_t id = reinterpret_cast<const lyd_node_term*>(idNode)->value.uint64;
    std::string comment = rpcargs::valueOf(rpcargs::child(r.op, "comment"));
    if (comment.empty()) {
        comment = "rollback to commit " + std::to_string(id);
    }

    // A copy of running and the commit it is at; every write up to it is durable (Store::read),
    // so its history rows are in the journal.
    Tree running;
    const std::uint64_t runningId = store_->read(ds::Datastore::Running, [&](const lyd_node* tree) {
        running.reset();
        lyd_node* copy = nullptr;
        if (tree &&
            lyd_dup_siblings(tree, nullptr, LYD_DUP_RECURSIVE | LYD_DUP_WITH_FLAGS, &copy) != LY_SUCCESS) {
            throw YangError("copying running for a rollback", ctx_.get());
        }
        running.reset(copy);
    });
    const Tree target = history_->stateAfter(id, std::move(running), runningId);

    // One write of running by the requesting user, as a copy-config with inline content: NACM
    // write checks, other sessions' locks (in-use) and validation apply. A write made meanwhile
    // by someone else is undone as well: the result is running as it was right after `id`.
    WriteCheck check = writeCheck(r, true);
    ds::WriteContext who = check.context(writer(r.session));
    who.comment = comment;
    const ds::WriteTiming timing =
        check.run(*store_, [&] { return store_->replace(who, ds::Datastore::Running, target.get()); });
    NCS_LOG(info) << "session " << r.session.id << " (" << r.session.user << "): rollback to commit " << id
                  << (timing.commitId ? " as commit " + std::to_string(timing.commitId) : std::string());
    Reply reply;
    // No new id when nothing changed (the write made no history entry).
    if (timing.commitId && history_->contains(timing.commitId)) {
        reply = Reply::output("<id xmlns=\"urn:ncstore:yang:ncstore-commits\">" +
                              std::to_string(timing.commitId) + "</id>");
    }
    reply.write = timing;
    return reply;
}

} // namespace ncstore::netconfd
