// The commit history's operations (ncstore-commits): rollback to the state right after a commit,
// and compare two states. The history itself is history/; its listing is state data
// (state.cpp).
#include "rpcargs.hpp"
#include "server.hpp"

#include "ncstore/log.hpp"

namespace ncstore::netconfd {

namespace {

std::uint64_t commitIdOf(const lyd_node* leaf) {
    return reinterpret_cast<const lyd_node_term*>(leaf)->value.uint64;
}

Tree copyOf(const lyd_node* tree, const char* why) {
    lyd_node* copy = nullptr;
    if (tree &&
        lyd_dup_siblings(tree, nullptr, LYD_DUP_RECURSIVE | LYD_DUP_WITH_FLAGS, &copy) != LY_SUCCESS) {
        throw YangError(why, LYD_CTX(tree));
    }
    return Tree{copy};
}

void requireHistory(const history::History& h, const char* op) {
    if (!h.enabled()) {
        throw RpcError(ErrorTag::OperationNotSupported, ErrorType::Application,
                       std::string(op) +
                           ": the commit history is off on this server (--history-max-commits 0)");
    }
}

} // namespace

std::uint64_t Server::copyRunning(Tree& out, const char* why) const {
    // Every write up to the commit the copy is at is durable (Store::read), so the history rows
    // of all of them are in the journal.
    return store_->read(ds::Datastore::Running, [&](const lyd_node* tree) { out = copyOf(tree, why); });
}

Reply Server::opCompare(Request& r) {
    requireHistory(*history_, "compare");
    const lyd_node* fromNode = rpcargs::child(r.op, "from"); // mandatory: the schema checked it is there
    if (!fromNode) {
        throw RpcError(ErrorTag::MissingElement, ErrorType::Protocol, "compare needs <from>")
            .withBadElement("from");
    }
    const lyd_node* toNode = rpcargs::child(r.op, "to");
    constexpr const char* why = "copying running for a comparison";
    Tree running;
    const std::uint64_t runningId = copyRunning(running, why);
    Tree from = history_->stateAfter(commitIdOf(fromNode), copyOf(running.get(), why), runningId);
    Tree to =
        toNode ? history_->stateAfter(commitIdOf(toNode), std::move(running), runningId) : std::move(running);
    if (r.access) {
        // Only what the user may read is compared (RFC 8341 3.4.5: left out silently).
        r.access->pruneUnreadable(from);
        r.access->pruneUnreadable(to);
    }
    const std::string edit = history::editBetween(ctx_.get(), from.get(), to.get());
    return Reply::output(edit.empty()
                             ? std::string()
                             : "<config xmlns=\"urn:ncstore:yang:ncstore-commits\">" + edit + "</config>");
}

Reply Server::opRollback(Request& r) {
    requireHistory(*history_, "rollback");
    const lyd_node* idNode = rpcargs::child(r.op, "id"); // mandatory: the schema checked it is there
    if (!idNode) {
        throw RpcError(ErrorTag::MissingElement, ErrorType::Protocol, "rollback needs <id>")
            .withBadElement("id");
    }
    const std::uint64_t id = commitIdOf(idNode);
    std::string comment = rpcargs::valueOf(rpcargs::child(r.op, "comment"));
    if (comment.empty()) {
        comment = "rollback to commit " + std::to_string(id);
    }

    Tree running;
    const std::uint64_t runningId = copyRunning(running, "copying running for a rollback");
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
