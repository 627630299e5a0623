// The commit history's operations (ncstore-commits): rollback to the state right after a commit,
// and compare two states. The history itself is history/; its listing is state data
// (state/commits.cpp).
#include "ops.hpp"

#include "edit.hpp"
#include "editcontent.hpp"
#include "rpcargs.hpp"
#include "sessionaccess.hpp"

#include "history.hpp"

#include "ncstore/log.hpp"

namespace ncstore::netconfd {

class HistoryOps {
public:
    explicit HistoryOps(const Services& svc) : svc_(svc) {}
    Reply rollback(Request& r);
    Reply compare(Request& r);
    std::uint64_t copyRunning(Tree& out, const char* why) const;

private:
    Services svc_;
};

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

std::uint64_t HistoryOps::copyRunning(Tree& out, const char* why) const {
    // Every write up to the commit the copy is at is durable (Store::read), so the history rows
    // of all of them are in the journal.
    return svc_.store.read(ds::Datastore::Running, [&](const lyd_node* tree) { out = copyOf(tree, why); });
}

Reply HistoryOps::compare(Request& r) {
    requireHistory(svc_.history, "compare");
    const lyd_node* fromNode = rpcargs::child(r.op, "from"); // mandatory: the schema checked it is there
    if (!fromNode) {
        throw RpcError(ErrorTag::MissingElement, ErrorType::Protocol, "compare needs <from>")
            .withBadElement("from");
    }
    const lyd_node* toNode = rpcargs::child(r.op, "to");
    constexpr const char* why = "copying running for a comparison";
    Tree running;
    const std::uint64_t runningId = copyRunning(running, why);
    Tree from = svc_.history.stateAfter(commitIdOf(fromNode), copyOf(running.get(), why), runningId);
    Tree to = toNode ? svc_.history.stateAfter(commitIdOf(toNode), std::move(running), runningId)
                     : std::move(running);
    if (r.access) {
        // Only what the user may read is compared (RFC 8341 3.4.5: left out silently).
        r.access->pruneUnreadable(from);
        r.access->pruneUnreadable(to);
    }
    const std::string edit = history::editBetween(svc_.ctx, from.get(), to.get());
    return Reply::output(edit.empty()
                             ? std::string()
                             : "<config xmlns=\"urn:ncstore:yang:ncstore-commits\">" + edit + "</config>");
}

Reply HistoryOps::rollback(Request& r) {
    requireHistory(svc_.history, "rollback");
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

    // One edit of running by the requesting user: NACM write checks, other sessions' locks
    // (in-use) and validation apply as to an edit-config. It is computed from one state of
    // running and lands on exactly that state: a write made meanwhile by anyone (undone as well
    // when it came first) makes it computed again.
    constexpr int kAttempts = 5;
    ds::WriteTiming timing;
    for (int attempt = 1;; ++attempt) {
        const history::History::RollbackEdit plan = svc_.history.rollbackEdit(id);
        if (plan.edit.empty()) {
            break; // running is that state already
        }
        const Tree edit = parseEditContent(svc_.ctx, plan.edit);
        WriteCheck check = edit::writeCheck(svc_, r, nacmTop(edit.get()) != nullptr);
        ds::WriteContext who = check.context(writer(r.session));
        who.comment = comment;
        ds::EditOptions options;
        options.unchangedSince = plan.base;
        try {
            timing = check.run(svc_.store, [&] {
                return svc_.store.edit(who, ds::Datastore::Running, edit.get(), options);
            });
            NCS_LOG(debug) << "rollback to commit " << id << ": " << plan.commits
                           << " commits undone, an edit of " << plan.edit.size() << " bytes";
            break;
        } catch (const ds::StaleRead&) {
            if (attempt == kAttempts) {
                throw RpcError(ErrorTag::OperationFailed, ErrorType::Application,
                               "running kept changing while the rollback was computed: try again");
            }
        }
    }
    NCS_LOG(info) << "session " << r.session.id << " (" << r.session.user << "): rollback to commit " << id
                  << (timing.commitId ? " as commit " + std::to_string(timing.commitId) : std::string());
    Reply reply;
    // No new id when nothing changed (the write made no history entry).
    if (timing.commitId && svc_.history.contains(timing.commitId)) {
        reply = Reply::output("<id xmlns=\"urn:ncstore:yang:ncstore-commits\">" +
                              std::to_string(timing.commitId) + "</id>");
    }
    reply.write = timing;
    return reply;
}

void addHistoryOperations(Dispatcher& d, const Services& svc) {
    const auto ops = std::make_shared<HistoryOps>(svc);
    d.add("ncstore-commits", "rollback", handler(ops, &HistoryOps::rollback, true));
    d.add("ncstore-commits", "compare", handler(ops, &HistoryOps::compare));
}

} // namespace ncstore::netconfd
