// Resume (appserver.hpp): the change sets of running after a commit id, rebuilt from the commit
// history, which keeps per change its path and what undoes it: running now, undone commit by
// commit, newest first, gives the state right after each commit, and so each change's new value.
#include "conn.hpp"

#include "history.hpp"
#include "interest.hpp"

#include "ncstore/log.hpp"

namespace ncstore::netconfd::app {

namespace {

Tree dupNode(const lyd_node* node) {
    lyd_node* copy = nullptr;
    if (lyd_dup_single(node, nullptr, LYD_DUP_RECURSIVE | LYD_DUP_WITH_FLAGS, &copy) != LY_SUCCESS) {
        throw YangError("cannot copy " + pathOf(node), LYD_CTX(node));
    }
    return Tree{copy};
}

const lysc_node* schemaOf(const ly_ctx* ctx, const std::string& path) {
    return lys_find_path(ctx, nullptr, schemaPathOf(path).c_str(), 0);
}

/// The change that `undo` undoes, with its new value or subtree as `after` (running right after
/// the commit) holds it.
ds::Change forward(const ly_ctx* ctx, const history::Undo& undo, const lyd_node* after) {
    ds::Change c;
    c.op = undo.op;
    c.path = undo.path;
    lyd_node* node = nullptr;
    if (after && undo.op != ds::ChangeOp::Delete) {
        (void)lyd_find_path(after, undo.path.c_str(), 0, &node);
    }
    c.schema = node ? node->schema : schemaOf(ctx, undo.path);
    if (undo.op == ds::ChangeOp::Update || undo.op == ds::ChangeOp::Delete) {
        c.oldValue = undo.oldValue;
    }
    if (node && (undo.op == ds::ChangeOp::Create || undo.op == ds::ChangeOp::Update ||
                 undo.op == ds::ChangeOp::Replace)) {
        if (node->schema->nodetype & LYD_NODE_TERM) {
            c.newValue = lyd_get_value(node);
        } else {
            c.newTree = dupNode(node);
        }
    }
    if (node && (undo.op == ds::ChangeOp::Create || undo.op == ds::ChangeOp::Move) &&
        lysc_is_userordered(node->schema)) {
        ds::Position pos;
        const lyd_node* prev = node->prev;
        if (prev != node && prev->next == node && prev->schema == node->schema) {
            pos.where = ds::Position::Where::After;
            pos.anchor = pathOf(prev);
        }
        c.position = pos;
    }
    return c;
}

} // namespace

std::optional<std::vector<std::shared_ptr<const ds::ChangeSet>>>
replayFromHistory(const Parts& p, std::uint64_t since, std::uint64_t& through) {
    if (!p.history.enabled()) {
        return std::nullopt;
    }
    Tree state;
    through = p.store.read(ds::Datastore::Running, [&](const lyd_node* tree) { state = dupForest(tree); });
    std::vector<std::shared_ptr<const ds::ChangeSet>> out;
    if (since >= through) {
        return out;
    }
    // Every commit after `since` must be kept: the oldest kept must come no later than the first
    // commit after it (ids between them may have been events, but that cannot be told apart
    // from a commit the history dropped).
    const auto entries = p.history.entries();
    if (entries.empty() || entries.front().id > since + 1) {
        return std::nullopt;
    }
    std::vector<history::Row> rows;
    p.store.readJournal(history::kJournal, since, [&](const ds::JournalRow& row) {
        if (row.commitId > through) {
            return;
        }
        history::Row decoded = history::decode(row.data);
        decoded.entry.id = row.commitId;
        rows.push_back(std::move(decoded));
    });
    out.resize(rows.size());
    for (std::size_t i = rows.size(); i-- > 0;) {
        const history::Row& row = rows[i];
        auto changes = std::make_shared<ds::ChangeSet>();
        changes->commitId = row.entry.id;
        changes->datastore = ds::Datastore::Running;
        changes->origin = row.entry.origin;
        changes->session = row.entry.session;
        changes->user = row.entry.user;
        changes->host = row.entry.host;
        changes->comment = row.entry.comment;
        for (const auto& undo : row.undo) {
            changes->changes.push_back(forward(p.ctx, undo, state.get()));
        }
        out[i] = std::move(changes);
        history::invert(p.ctx, state, row); // running right before this commit
    }
    NCS_LOG(debug) << "resume after commit " << since << ": " << out.size() << " change sets rebuilt through "
                   << through;
    return out;
}

} // namespace ncstore::netconfd::app
