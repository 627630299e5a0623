#include "history.hpp"

#include "datapath.hpp"

#include "ncstore/fields.hpp"
#include "ncstore/log.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <unordered_set>
#include <utility>

namespace ncstore::netconfd::history {

namespace {

using fields::put;

/// The next field of a row (ncstore/fields.hpp); throws on a damaged row.
std::string_view takeField(std::string_view& in) {
    if (const auto value = fields::take(in)) {
        return *value;
    }
    throw std::runtime_error("a damaged history row");
}

template <class T> T number(std::string_view text) {
    if (const auto value = fields::number<T>(text)) {
        return *value;
    }
    throw std::runtime_error("a damaged history row (a number)");
}

// The operation codes of a row: one byte each.
constexpr char kCreate = 'c';
constexpr char kUpdate = 'u';
constexpr char kReplace = 'r';     // anydata: old content (LYB with parents)
constexpr char kDeleteLeaf = 'd';  // leaf: old value
constexpr char kDeleteEntry = 'l'; // leaf-list instance: old value (also in the path's predicate)
constexpr char kDeleteTree = 'D';  // inner node: old subtree (LYB with parents)
constexpr char kMove = 'm';

std::string position(const std::optional<ds::Position>& p) {
    if (!p) {
        return {};
    }
    return p->where == ds::Position::Where::First ? "F" : "A" + p->anchor;
}

std::optional<ds::Position> position(std::string_view text) {
    if (text.empty()) {
        return std::nullopt;
    }
    if (text == "F") {
        return ds::Position{ds::Position::Where::First, {}};
    }
    if (text.front() != 'A' || text.size() < 2) {
        throw std::runtime_error("a damaged history row (a position)");
    }
    return ds::Position{ds::Position::Where::After, std::string(text.substr(1))};
}

ds::Origin origin(std::string_view text) {
    for (ds::Origin o :
         {ds::Origin::Edit, ds::Origin::Replace, ds::Origin::Copy, ds::Origin::Clear, ds::Origin::Commit}) {
        if (text == ds::toString(o)) {
            return o;
        }
    }
    throw std::runtime_error("a damaged history row (origin " + std::string(text) + ")");
}

lyd_node* find(const Tree& forest, const std::string& path) {
    lyd_node* found = nullptr;
    if (!forest || lyd_find_path(forest.get(), path.c_str(), 0, &found) != LY_SUCCESS) {
        return nullptr;
    }
    return found;
}

lyd_node* mustFind(const Tree& forest, const std::string& path) {
    lyd_node* node = find(forest, path);
    if (!node) {
        throw std::runtime_error("it is not in running");
    }
    return node;
}

/// Keeps `forest` owning the first top-level sibling (an insertion may put one before it).
void refirst(Tree& forest) {
    if (forest) {
        forest.reset(lyd_first_sibling(forest.release()));
    }
}

void removeNode(Tree& forest, lyd_node* node) {
    if (node == forest.get()) {
        forest.release();
        forest.reset(node->next);
    }
    lyd_free_tree(node);
}

/// About what `tree` takes in LYB: its values and a few bytes of framing per node (a print into a
/// buffer of the right size is not moved as it grows, see ncstore::print).
std::size_t lybEstimate(const lyd_node* tree) {
    std::size_t bytes = 0;
    const lyd_node* elem = nullptr;
    LYD_TREE_DFS_BEGIN(tree, elem) {
        bytes += 32;
        if (elem->schema && (elem->schema->nodetype & LYD_NODE_TERM)) {
            bytes += std::strlen(lyd_get_value(elem));
        }
        LYD_TREE_DFS_END(tree, elem);
    }
    return bytes;
}

/// The old subtrees of a row (Delete of inner nodes, Replace of anydata) in ONE document, each
/// with its parents (and their keys), printed once from the top (LYB: compact, exact), so that
/// it parses back without the datastore. One print per row, not one per subtree: a commit that
/// deletes thousands of list entries costs one document.
class OldSubtrees {
public:
    /// Adds the old subtree of `c`; false when its node is in the document already (an ancestor
    /// deleted earlier in the change set put it there): it then needs a document of its own.
    /// Cost: a hash lookup and a copy; the parent's path is parsed only when it differs from the
    /// previous subtree's (a commit deleting many entries of one list parses it once).
    bool add(const ds::Change& c) {
        const ly_ctx* ctx = c.schema->module->ctx;
        const std::string path = parentPath(c.path);
        if (path.empty() && !doc_ && !borrowed_ && c.oldTree) {
            // A top-level subtree alone (deleting a top container, B4a): the change set's copy,
            // which outlives this document, is printed as it is instead of copied once more.
            borrowed_ = &c;
            expected_ += lybEstimate(c.oldTree.get());
            return true;
        }
        adoptBorrowed();
        lyd_node* parent = nullptr;
        if (!path.empty()) {
            if (path != lastPath_) {
                lastParent_ = find(doc_, path);
                if (!lastParent_) {
                    lyd_node* first = nullptr;
                    if (lyd_new_path2(doc_.get(), ctx, path.c_str(), nullptr, 0, LYD_ANYDATA_STRING, 0,
                                      &first, &lastParent_) != LY_SUCCESS ||
                        !lastParent_) {
                        throw YangError("cannot make the parents of " + c.path, ctx);
                    }
                    if (!doc_) {
                        doc_.reset(first);
                    }
                    refirst(doc_);
                }
                lastPath_ = path;
            }
            parent = lastParent_;
        }
        const lyd_node* old = c.oldTree.get();
        const lyd_node* siblings = parent ? lyd_child(parent) : doc_.get();
        lyd_node* match = nullptr;
        const LY_ERR found = !siblings ? LY_ENOTFOUND
                             : (old->schema->nodetype & LYS_LIST)
                                 ? lyd_find_sibling_first(siblings, old, &match)
                                 : lyd_find_sibling_val(siblings, old->schema, nullptr, 0, &match);
        if (found == LY_SUCCESS) {
            return false;
        }
        if (found != LY_ENOTFOUND) {
            throw YangError("cannot look up " + c.path + " among the old subtrees", ctx);
        }
        lyd_node* copy = copyOf(c, parent);
        expected_ += lybEstimate(copy);
        if (!parent) {
            if (!doc_) {
                doc_.reset(copy);
            } else if (lyd_insert_sibling(doc_.get(), copy, nullptr) != LY_SUCCESS) {
                lyd_free_tree(copy);
                throw YangError("cannot add the old subtree of " + c.path, ctx);
            }
            refirst(doc_);
        }
        return true;
    }
    std::string print() const {
        const lyd_node* top = borrowed_ ? borrowed_->oldTree.get() : doc_.get();
        return top ? ncstore::print(top, LYD_LYB, 0, expected_ + expected_ / 2 + 4096) : std::string();
    }

private:
    /// A copy of the old subtree of `c` under `parent` (nullptr: a top-level one, alone).
    static lyd_node* copyOf(const ds::Change& c, lyd_node* parent) {
        lyd_node* copy = nullptr;
        if (lyd_dup_single(c.oldTree.get(), reinterpret_cast<lyd_node_inner*>(parent),
                           LYD_DUP_RECURSIVE | LYD_DUP_WITH_FLAGS, &copy) != LY_SUCCESS) {
            throw YangError("cannot copy the old subtree of " + c.path, c.schema->module->ctx);
        }
        return copy;
    }

    /// A second subtree joins a borrowed one: the document gets a copy of it after all.
    void adoptBorrowed() {
        if (borrowed_) {
            doc_.reset(copyOf(*std::exchange(borrowed_, nullptr), nullptr));
        }
    }

    /// The data path of the parent of the node at `path`, "" for a top-level node.
    static std::string parentPath(const std::string& path) {
        const std::vector<std::size_t> starts = stepStarts(path);
        return starts.empty() ? std::string() : path.substr(0, starts.back());
    }

    Tree doc_;
    const ds::Change* borrowed_ = nullptr; // the only subtree so far, top-level, not copied (add())
    std::string lastPath_;                 // the parent path of the last subtree added
    lyd_node* lastParent_ = nullptr;       // its node in doc_ (nodes of doc_ are never freed)
    std::size_t expected_ = 0;             // about what doc_ takes in LYB
};

/// The old subtree of `c` as a document of its own (see OldSubtrees).
std::string subtreeDocument(const ds::Change& c) {
    OldSubtrees doc;
    doc.add(c);
    return doc.print();
}

/// Puts the ordered-by-user `node` where `p` says (nothing without a position).
void place(Tree& forest, lyd_node* node, const std::optional<ds::Position>& p) {
    if (!p) {
        return;
    }
    if (p->where == ds::Position::Where::After) {
        lyd_node* anchor = find(forest, p->anchor);
        if (!anchor) {
            throw std::runtime_error("the instance it followed, " + p->anchor + ", is not in running");
        }
        if (anchor->next != node && lyd_insert_after(anchor, node) != LY_SUCCESS) {
            throw YangError("cannot insert after " + p->anchor, LYD_CTX(node));
        }
    } else {
        lyd_node* first = lyd_first_sibling(node);
        while (first->schema != node->schema) {
            first = first->next;
        }
        if (first != node && lyd_insert_before(first, node) != LY_SUCCESS) {
            throw YangError("cannot insert first", LYD_CTX(node));
        }
    }
    refirst(forest);
}

void makeExplicit(lyd_node* node) {
    for (lyd_node* p = node; p; p = lyd_parent(p)) {
        p->flags &= ~LYD_DEFAULT;
    }
}

/// Puts back the node of `u` from `doc`, the document that holds its old subtree (Delete of an
/// inner node, Replace).
void restoreSubtree(const ly_ctx* ctx, Tree& forest, const Undo& u, const Tree& doc) {
    const lyd_node* old = find(doc, u.path);
    if (!old) {
        throw std::runtime_error("its old subtree does not hold it");
    }
    if (lyd_node* existing = find(forest, u.path)) {
        // Only what validation adds can be there (a non-presence container with defaults):
        // the old subtree takes its place.
        removeNode(forest, existing);
    }
    lyd_node* parent = nullptr;
    if (const lyd_node* oldParent = lyd_parent(old)) {
        const std::string parentPath = pathOf(oldParent);
        parent = find(forest, parentPath);
        if (!parent) {
            lyd_node* first = nullptr;
            if (lyd_new_path2(forest.get(), ctx, parentPath.c_str(), nullptr, 0, LYD_ANYDATA_STRING,
                              LYD_NEW_PATH_UPDATE, &first, &parent) != LY_SUCCESS ||
                !parent) {
                throw YangError("cannot create its parent " + parentPath, ctx);
            }
            if (!forest) {
                forest.reset(first);
            }
            refirst(forest);
        }
    }
    lyd_node* copy = nullptr;
    if (lyd_dup_single(old, reinterpret_cast<lyd_node_inner*>(parent), LYD_DUP_RECURSIVE | LYD_DUP_WITH_FLAGS,
                       &copy) != LY_SUCCESS) {
        throw YangError("cannot copy its old subtree", ctx);
    }
    if (!parent) {
        if (!forest) {
            forest.reset(copy);
        } else if (lyd_insert_sibling(forest.get(), copy, nullptr) != LY_SUCCESS) {
            lyd_free_tree(copy);
            throw YangError("cannot insert it", ctx);
        }
        refirst(forest);
    }
    makeExplicit(copy);
    place(forest, copy, u.oldPosition);
}

/// The document that holds the old subtree of `u`: its own, or the row's (parsed once, into
/// `shared`).
const Tree& oldSubtrees(const ly_ctx* ctx, const Row& row, const Undo& u, Tree& own, Tree& shared) {
    if (!u.oldTree.empty()) {
        own = parseData(ctx, u.oldTree, LYD_LYB, LYD_PARSE_ONLY | LYD_PARSE_STRICT, 0);
        return own;
    }
    if (!shared) {
        if (row.oldSubtrees.empty()) {
            throw std::runtime_error("the row holds no old subtrees");
        }
        shared = parseData(ctx, row.oldSubtrees, LYD_LYB, LYD_PARSE_ONLY | LYD_PARSE_STRICT, 0);
    }
    return shared;
}

void invertOne(const ly_ctx* ctx, Tree& forest, const Row& row, const Undo& u, Tree& shared) {
    Tree own;
    switch (u.op) {
    case ds::ChangeOp::Create:
        removeNode(forest, mustFind(forest, u.path));
        return;
    case ds::ChangeOp::Update: {
        lyd_node* node = mustFind(forest, u.path);
        const LY_ERR rc = lyd_change_term(node, u.oldValue->c_str());
        if (rc != LY_SUCCESS && rc != LY_EEXIST && rc != LY_ENOT) {
            throw YangError("cannot set its old value " + *u.oldValue, ctx);
        }
        return;
    }
    case ds::ChangeOp::Replace:
        removeNode(forest, mustFind(forest, u.path));
        restoreSubtree(ctx, forest, u, oldSubtrees(ctx, row, u, own, shared));
        return;
    case ds::ChangeOp::Delete: {
        if (u.subtree) {
            restoreSubtree(ctx, forest, u, oldSubtrees(ctx, row, u, own, shared));
            return;
        }
        // A leaf-list instance's value is in the path's predicate; a leaf's is given.
        const char* value = u.leafList ? nullptr : u.oldValue->c_str();
        lyd_node* first = nullptr;
        lyd_node* node = nullptr;
        if (lyd_new_path2(forest.get(), ctx, u.path.c_str(), value, 0, LYD_ANYDATA_STRING,
                          LYD_NEW_PATH_UPDATE, &first, &node) != LY_SUCCESS) {
            throw YangError("cannot create it with its old value", ctx);
        }
        if (!forest) {
            forest.reset(first);
        }
        if (!node) {
            node = mustFind(forest, u.path);
        }
        makeExplicit(node);
        refirst(forest);
        place(forest, node, u.oldPosition);
        return;
    }
    case ds::ChangeOp::Move:
        if (!u.oldPosition) {
            throw std::runtime_error("the row has no old position");
        }
        place(forest, mustFind(forest, u.path), u.oldPosition);
        return;
    }
}

std::int64_t nowUs() {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

} // namespace

std::string encode(const ds::ChangeSet& changes, std::int64_t timeUs) {
    std::string out(1, static_cast<char>(kRowVersion));
    put(out, std::to_string(timeUs));
    put(out, std::to_string(changes.session));
    put(out, changes.user);
    put(out, changes.host);
    put(out, ds::toString(changes.origin));
    put(out, changes.comment);
    put(out, std::to_string(changes.changes.size()));
    OldSubtrees shared; // the old subtrees of the row, but those that need a document of their own
    for (const ds::Change& c : changes.changes) {
        char op = kCreate;
        std::string old;
        switch (c.op) {
        case ds::ChangeOp::Create:
            break; // undone by deleting its path: nothing else is needed
        case ds::ChangeOp::Update:
            op = kUpdate;
            old = c.oldValue.value_or("");
            break;
        case ds::ChangeOp::Replace:
            op = kReplace;
            old = shared.add(c) ? std::string() : subtreeDocument(c);
            break;
        case ds::ChangeOp::Delete:
            if (c.schema->nodetype & LYD_NODE_TERM) {
                op = c.schema->nodetype == LYS_LEAFLIST ? kDeleteEntry : kDeleteLeaf;
                old = c.oldValue.value_or("");
            } else {
                op = kDeleteTree;
                old = shared.add(c) ? std::string() : subtreeDocument(c);
            }
            break;
        case ds::ChangeOp::Move:
            op = kMove;
            break;
        }
        put(out, std::string_view(&op, 1));
        put(out, c.path);
        put(out, old);
        put(out, position(c.oldPosition));
    }
    put(out, shared.print());
    return out;
}

Row decode(std::string_view in, bool headerOnly) {
    // Version 1 rows (a day's development only) gave every old subtree a document of its own
    // and have no shared one.
    const unsigned char version = in.empty() ? 0 : static_cast<unsigned char>(in.front());
    if (version != 1 && version != kRowVersion) {
        throw std::runtime_error("a history row of an unknown version");
    }
    in.remove_prefix(1);
    Row row;
    Entry& e = row.entry;
    e.timeUs = number<std::int64_t>(takeField(in));
    e.session = number<std::uint32_t>(takeField(in));
    e.user = takeField(in);
    e.host = takeField(in);
    e.origin = origin(takeField(in));
    e.comment = takeField(in);
    e.changes = number<std::uint32_t>(takeField(in));
    if (headerOnly) {
        return row;
    }
    row.undo.reserve(e.changes);
    for (std::uint32_t i = 0; i < e.changes; ++i) {
        const std::string_view op = takeField(in);
        Undo u;
        u.path = takeField(in);
        const std::string_view old = takeField(in);
        u.oldPosition = position(takeField(in));
        if (op.size() != 1 || u.path.empty()) {
            throw std::runtime_error("a damaged history row (a change)");
        }
        switch (op.front()) {
        case kCreate:
            u.op = ds::ChangeOp::Create;
            break;
        case kUpdate:
            u.op = ds::ChangeOp::Update;
            u.oldValue = std::string(old);
            break;
        case kReplace:
            u.op = ds::ChangeOp::Replace;
            u.oldTree = old; // empty: in the row's shared document
            u.subtree = true;
            break;
        case kDeleteLeaf:
        case kDeleteEntry:
            u.op = ds::ChangeOp::Delete;
            u.oldValue = std::string(old);
            u.leafList = op.front() == kDeleteEntry;
            break;
        case kDeleteTree:
            u.op = ds::ChangeOp::Delete;
            u.oldTree = old; // empty: in the row's shared document
            u.subtree = true;
            break;
        case kMove:
            u.op = ds::ChangeOp::Move;
            break;
        default:
            throw std::runtime_error("a damaged history row (operation " + std::string(op) + ")");
        }
        row.undo.push_back(std::move(u));
    }
    if (version >= 2) {
        row.oldSubtrees = takeField(in);
    }
    if (!in.empty()) {
        throw std::runtime_error("a damaged history row (trailing bytes)");
    }
    return row;
}

void invert(const ly_ctx* ctx, Tree& forest, const Row& row) {
    refirst(forest);
    Tree shared; // the row's document of old subtrees, parsed when first needed
    for (auto u = row.undo.rbegin(); u != row.undo.rend(); ++u) {
        try {
            invertOne(ctx, forest, row, *u, shared);
        } catch (const std::exception& e) {
            throw ds::Error(ds::ErrorTag::OperationFailed,
                            "commit " + std::to_string(row.entry.id) + " cannot be undone: the " +
                                ds::toString(u->op) + " of " + u->path + ": " + e.what(),
                            u->path);
        }
    }
}

History::History(ds::Store& store, const ly_ctx* ctx, Options options)
    : store_(store), ctx_(ctx), options_(options) {
    if (!enabled()) {
        store_.trimJournal(kJournal, std::numeric_limits<std::int64_t>::max());
        NCS_LOG(info) << "commit history: off (nothing recorded; an earlier history was dropped)";
        return;
    }
    std::size_t damaged = 0;
    store_.readJournal(kJournal, 0, [&](const ds::JournalRow& r) {
        try {
            Entry e = decode(r.data, true).entry;
            e.id = r.commitId;
            e.bytes = r.data.size();
            bytes_ += e.bytes;
            index_.push_back(std::move(e));
        } catch (const std::exception&) {
            ++damaged; // not listed: a rollback across it fails when it decodes the row
        }
    });
    if (damaged) {
        NCS_LOG(error) << "commit history: " << damaged << " rows do not decode and are not listed";
    }
    if (const std::uint64_t through = retain(); through > 0) {
        store_.trimJournal(kJournal, through); // before any write: nothing to wait for but the disk
        untrimmed_ = 0;
    }
    NCS_LOG(info) << "commit history: " << index_.size() << " commits, " << bytes_ << " bytes (keeps at most "
                  << options_.maxCommits << " commits, " << options_.maxBytes << " bytes)";
    // The listener first: every entry the hook adds then has a change set it will hear of.
    store_.addListener(*this);
    store_.addJournal(kJournal, [this](const ds::ChangeSet& changes) { return hook(changes); });
}

History::~History() {
    if (!enabled()) {
        return; // nothing registered, no thread
    }
    store_.removeListener(*this);
    // The store outlives this object: its hook must not call into it any more.
    store_.addJournal(kJournal, [](const ds::ChangeSet&) { return ds::JournalWrite{}; });
}

ds::JournalWrite History::hook(const ds::ChangeSet& changes) {
    // Under the store's exclusive lock: one pass over the change set, no call of the Store.
    if (changes.datastore != ds::Datastore::Running || changes.changes.empty()) {
        return {};
    }
    const std::int64_t now = nowUs();
    std::string row;
    try {
        row = encode(changes, now);
    } catch (const std::exception& e) {
        // Refused rather than kept without its undo data: a gap would make every rollback
        // across this commit wrong.
        throw ds::Error(ds::ErrorTag::OperationFailed,
                        std::string("the commit history cannot record this change: ") + e.what());
    }
    Entry e;
    e.id = changes.commitId;
    e.timeUs = now;
    e.session = changes.session;
    e.user = changes.user;
    e.host = changes.host;
    e.origin = changes.origin;
    e.comment = changes.comment;
    e.changes = static_cast<std::uint32_t>(changes.changes.size());
    e.bytes = row.size();
    ds::JournalWrite write;
    write.rows.push_back(std::move(row));
    std::lock_guard lock(mutex_);
    bytes_ += e.bytes;
    pending_.insert(e.id);
    index_.push_back(std::move(e));
    // untrimmed_ grows only when retain() drops entries: when it reaches a batch, `through` is
    // the newest entry dropped, and every older row goes with it.
    if (const std::uint64_t through = retain(); untrimmed_ >= trimBatch()) {
        write.trimThrough = through; // in this commit's transaction
        untrimmed_ = 0;
    }
    return write;
}

void History::changed(const ds::ChangeSet& changes) {
    std::lock_guard lock(mutex_);
    if (pending_.empty()) {
        return;
    }
    pending_.erase(changes.commitId); // durable (a change set without a history row: no-op)
    // Published in commit order: what is still pending below this one never became durable.
    for (auto it = pending_.begin(); it != pending_.end() && *it < changes.commitId;) {
        const std::uint64_t ghost = *it;
        it = pending_.erase(it);
        const auto e =
            std::find_if(index_.begin(), index_.end(), [&](const Entry& x) { return x.id == ghost; });
        if (e != index_.end()) {
            NCS_LOG(warning) << "commit history: commit " << ghost
                             << " failed (its transaction did not commit)";
            bytes_ -= e->bytes;
            index_.erase(e);
        }
    }
}

void History::lost(std::uint64_t through) {
    // Change sets up to `through` were dropped for this listener: which of them were durable is
    // unknown here; they stay listed (a failed one is not in the file, see stateAfter()).
    std::lock_guard lock(mutex_);
    pending_.erase(pending_.begin(), pending_.upper_bound(through));
}

std::uint64_t History::retain() {
    std::uint64_t through = 0;
    while (index_.size() > 1 && (index_.size() > options_.maxCommits || bytes_ > options_.maxBytes)) {
        through = index_.front().id;
        bytes_ -= index_.front().bytes;
        pending_.erase(through);
        index_.pop_front();
        ++untrimmed_;
    }
    return through;
}

std::vector<Entry> History::entries() const {
    std::lock_guard lock(mutex_);
    return {index_.begin(), index_.end()};
}

bool History::contains(std::uint64_t id) const {
    std::lock_guard lock(mutex_);
    const auto it = std::lower_bound(index_.begin(), index_.end(), id,
                                     [](const Entry& e, std::uint64_t value) { return e.id < value; });
    return it != index_.end() && it->id == id;
}

History::RollbackEdit History::rollbackEdit(std::uint64_t id) const {
    if (!contains(id)) {
        throw ds::Error(ds::ErrorTag::InvalidValue,
                        "commit " + std::to_string(id) +
                            " is not in the commit history (unknown, or no longer kept)");
    }
    std::vector<Row> rows; // of the commits after `id`, oldest first
    std::vector<std::string> paths;
    std::unordered_set<std::string> seen;
    std::uint64_t through = id;
    // Reads the durable rows after those read so far, up to commit `limit`; false: none.
    auto readRows = [&](std::uint64_t limit) {
        const std::size_t before = rows.size();
        store_.readJournal(kJournal, through, [&](const ds::JournalRow& r) {
            if (r.commitId > limit) {
                return;
            }
            Row row;
            try {
                row = decode(r.data);
            } catch (const std::exception& e) {
                throw ds::Error(ds::ErrorTag::OperationFailed,
                                "commit " + std::to_string(r.commitId) + " cannot be undone: " + e.what());
            }
            row.entry.id = r.commitId;
            for (const Undo& u : row.undo) {
                if (seen.insert(u.path).second) {
                    paths.push_back(u.path);
                }
            }
            rows.push_back(std::move(row));
            through = r.commitId;
        });
        return rows.size() > before;
    };
    readRows(std::numeric_limits<std::uint64_t>::max());
    RollbackEdit out;
    RegionOf from;
    for (;;) {
        // Every write up to `base` is durable once read() returns, so its row is in the file: a
        // row that was not yet when the journal was read widens the region, and it is copied again.
        out.base = store_.read(ds::Datastore::Running, [&](const lyd_node* running) {
            try {
                from = regionOf(ctx_, running, paths);
            } catch (const ds::Error&) {
                throw;
            } catch (const std::exception& e) {
                throw ds::Error(ds::ErrorTag::OperationFailed,
                                "the commits after " + std::to_string(id) + " cannot be undone: " + e.what());
            }
        });
        if (!readRows(out.base)) {
            break;
        }
    }
    if (id > out.base) {
        throw ds::Error(ds::ErrorTag::OperationFailed,
                        "running changed while the rollback read it: try again");
    }
    Tree to;
    if (from.tree) {
        lyd_node* copy = nullptr;
        if (lyd_dup_siblings(from.tree.get(), nullptr, LYD_DUP_RECURSIVE | LYD_DUP_WITH_FLAGS, &copy) !=
            LY_SUCCESS) {
            throw YangError("cannot copy part of running for a rollback", ctx_);
        }
        to.reset(copy);
    }
    for (auto r = rows.rbegin(); r != rows.rend(); ++r) {
        invert(ctx_, to, *r);
    }
    for (const std::string& path : from.kept) {
        // Still there in running: not a default node, whatever is left of it in the copy.
        if (lyd_node* n = find(to, path)) {
            makeExplicit(n);
        }
    }
    out.commits = rows.size();
    out.edit = editBetween(ctx_, from.tree.get(), to.get());
    return out;
}

Tree History::stateAfter(std::uint64_t id, Tree running, std::uint64_t runningId) const {
    if (!contains(id)) {
        throw ds::Error(ds::ErrorTag::InvalidValue,
                        "commit " + std::to_string(id) +
                            " is not in the commit history (unknown, or no longer kept)");
    }
    if (id > runningId) {
        throw ds::Error(ds::ErrorTag::OperationFailed,
                        "running changed while the rollback read it: try again");
    }
    // Only durable rows are in the file; every write up to runningId is durable (Store::read).
    std::vector<std::pair<std::uint64_t, std::string>> rows;
    store_.readJournal(kJournal, id, [&](const ds::JournalRow& r) {
        if (r.commitId <= runningId) {
            rows.emplace_back(r.commitId, r.data);
        }
    });
    for (auto r = rows.rbegin(); r != rows.rend(); ++r) {
        Row row;
        try {
            row = decode(r->second);
        } catch (const std::exception& e) {
            throw ds::Error(ds::ErrorTag::OperationFailed,
                            "commit " + std::to_string(r->first) + " cannot be undone: " + e.what());
        }
        row.entry.id = r->first;
        invert(ctx_, running, row);
    }
    return running;
}

} // namespace ncstore::netconfd::history
