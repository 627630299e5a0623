#include "edit.hpp"
#include "leafref.hpp"
#include "persistence.hpp"
#include "records.hpp"
#include "validation.hpp"
#include "writer.hpp"

#include "ncstore/datastore.hpp"
#include "ncstore/log.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <optional>
#include <shared_mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

namespace ncstore::ds {

using detail::ChangeSet;
using detail::RecordOp;

namespace {

using Clock = std::chrono::steady_clock;

std::uint64_t usSince(Clock::time_point start) {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count());
}

/// libyang 2.1.30 reports where an error is as text ('Schema location "/a:b/c", data location
/// "/a:b/c[k='1']", line number 3.'): the data path when there is one, else the schema path.
std::string errorPath(const std::string& where) {
    for (const char* label : {"ata location \"", "chema location \""}) {
        const auto start = where.find(label);
        if (start != std::string::npos) {
            const auto from = start + std::strlen(label);
            return where.substr(from, where.find('"', from) - from);
        }
    }
    return where;
}

/// Maps libyang's last validation error to the RFC 7950 section 15 error-tag / app-tag.
Error validationError(const ly_ctx* ctx, const std::string& prefix) {
    const ly_err_item* e = ly_err_last(ctx);
    std::string msg = e && e->msg ? e->msg : "validation failed";
    std::string path = errorPath(e && e->path ? e->path : "");
    std::string appTag = e && e->apptag ? e->apptag : "";
    ErrorTag tag = ErrorTag::OperationFailed;
    if (appTag == "instance-required" || appTag == "missing-choice") {
        tag = ErrorTag::DataMissing;
    } else if (appTag.empty() && e && e->vecode == LYVE_DATA && msg.rfind("Mandatory node", 0) == 0) {
        tag = ErrorTag::DataMissing;
        appTag = "";
    } else if (appTag.empty() && e && e->vecode == LYVE_DATA && msg.find("leafref") != std::string::npos) {
        tag = ErrorTag::DataMissing;
        appTag = "instance-required";
    }
    return Error(tag, prefix + msg, path, appTag);
}

Tree dupForest(const lyd_node* tree) {
    if (!tree) {
        return Tree{};
    }
    lyd_node* copy = nullptr;
    if (lyd_dup_siblings(tree, nullptr, LYD_DUP_RECURSIVE | LYD_DUP_WITH_FLAGS, &copy) != LY_SUCCESS) {
        throw YangError("cannot copy datastore tree", LYD_CTX(tree));
    }
    return Tree{copy};
}

/// Gives a Tree's raw pointer to C APIs that may replace the first node, and takes it back.
class RawTree {
public:
    explicit RawTree(Tree& owner) : owner_(owner), raw_(owner.release()) {}
    ~RawTree() { owner_.reset(raw_); }
    RawTree(const RawTree&) = delete;
    RawTree& operator=(const RawTree&) = delete;
    lyd_node** ptr() { return &raw_; }
    lyd_node* get() const { return raw_; }

private:
    Tree& owner_;
    lyd_node* raw_;
};

/// Collects the records an edit touches, in the order they were touched.
/// Also plans the validation the edit needs (see validation.hpp).
class Collector : public detail::ChangeObserver {
public:
    explicit Collector(detail::ValidationPlanner* planner) : planner_(planner) {}

    void created(const lyd_node* node) override {
        detail::forEachRecordIn(node, [this](const lyd_node* r) { touch(r); });
        const lyd_node* root = detail::recordRoot(node);
        touch(root);
        planLocal(root);
    }
    void modified(const lyd_node* node) override {
        const lyd_node* root = detail::recordRoot(node);
        if (node->schema && node->schema->nodetype == LYS_LEAF) {
            // A value change: a small patch row instead of rewriting the record.
            patches_.push_back({pathOf(root), pathOf(node), node});
        } else {
            touch(root);
        }
        if (!(planner_ && planner_->leafIsFree(node->schema))) {
            planLocal(root);
        }
        if (planner_ && !planner_->referrers(node->schema).empty()) {
            needFullValidation_ = true; // a referrer may hold the old value
        }
    }
    void deleting(const lyd_node* node) override {
        pointersValid_ = false;
        if (planner_ && !needFullValidation_) {
            planner_->collectReferenced(node, deletedReferenced_);
        }
        const lyd_node* root = detail::recordRoot(node);
        if (root == node || mayHoldRecords(node)) {
            rangeDeletes_.push_back(pathOf(node));
        }
        if (root != node) {
            touch(root);
            planLocal(root);
        } else if (!isLocal(root)) {
            needFullValidation_ = true;
        }
    }

    /// True when only whole-tree validation can judge the edit.
    bool needFullValidation() const { return needFullValidation_; }
    /// Records to validate on their own (when needFullValidation() is false), found in `tree`.
    std::vector<lyd_node*> localChecks(const lyd_node* tree) const {
        std::vector<lyd_node*> roots;
        for (std::size_t i = 0; i < localChecks_.size(); ++i) {
            lyd_node* root = nullptr;
            if (pointersValid_) {
                root = const_cast<lyd_node*>(localNodes_[i]);
            } else if (!tree || lyd_find_path(tree, localChecks_[i].c_str(), 0, &root) != LY_SUCCESS) {
                root = nullptr; // created and deleted again by the same edit
            }
            if (root) {
                roots.push_back(root);
            }
        }
        return roots;
    }
    /// Deleted nodes that leafrefs elsewhere may point to (when needFullValidation() is false).
    const std::vector<std::pair<const lysc_node*, std::string>>& deletedReferenced() const {
        return deletedReferenced_;
    }

    /// Marks the records that validation changed (defaults are not stored, so only deletions
    /// and explicit nodes matter).
    void addValidationDiff(const lyd_node* diff, const lyd_node* tree) {
        if (diff) {
            pointersValid_ = false; // validation may have deleted nodes
        }
        for (const lyd_node* top = diff; top; top = top->next) {
            const lyd_node* elem = nullptr;
            LYD_TREE_DFS_BEGIN(top, elem) {
                const lyd_meta* op = lyd_find_meta(elem->meta, nullptr, "yang:operation");
                if (op) {
                    const std::string path = pathOf(elem);
                    lyd_node* found = nullptr;
                    if (lyd_find_path(tree, path.c_str(), 0, &found) == LY_SUCCESS && found) {
                        if (!(found->flags & LYD_DEFAULT)) {
                            created(found);
                        }
                    } else {
                        rangeDeletes_.push_back(path);
                        if (lyd_parent(elem)) {
                            lyd_node* parent = nullptr;
                            const std::string parentPath = pathOf(lyd_parent(elem));
                            if (lyd_find_path(tree, parentPath.c_str(), 0, &parent) == LY_SUCCESS && parent) {
                                touch(detail::recordRoot(parent));
                            }
                        }
                    }
                }
                LYD_TREE_DFS_END(top, elem);
            }
        }
    }

    bool empty() const { return rangeDeletes_.empty() && touched_.empty() && patches_.empty(); }

    /// Adds what another (successful) edit changed, so that one change set covers both.
    void absorb(const Collector& other) {
        pointersValid_ = false;
        rangeDeletes_.insert(rangeDeletes_.end(), other.rangeDeletes_.begin(), other.rangeDeletes_.end());
        patches_.insert(patches_.end(), other.patches_.begin(), other.patches_.end());
        for (const auto& p : other.touched_) {
            touch(p, nullptr);
        }
    }

    /// The change set: range deletes first, then the touched records as they are now.
    ChangeSet build(Datastore ds, const lyd_node* tree) const {
        ChangeSet cs{ds, {}};
        for (const auto& p : rangeDeletes_) {
            cs.ops.push_back({RecordOp::Kind::DeleteRange, p, {}, {}});
        }
        // (record, its path)
        std::vector<std::pair<const lyd_node*, const std::string*>> shells;
        std::vector<std::pair<const lyd_node*, const std::string*>> entries;
        for (std::size_t i = 0; i < touched_.size(); ++i) {
            const std::string& p = touched_[i];
            lyd_node* found = nullptr;
            if (pointersValid_) {
                found = const_cast<lyd_node*>(touchedNodes_[i]);
            } else if (!tree || lyd_find_path(tree, p.c_str(), 0, &found) != LY_SUCCESS) {
                found = nullptr;
            }
            if (!found) {
                cs.ops.push_back({RecordOp::Kind::DeleteRange, p, {}, {}});
                continue;
            }
            (lyd_parent(found) ? entries : shells).emplace_back(found, &p);
        }
        std::unordered_set<std::string> patched;
        for (auto it = patches_.rbegin(); it != patches_.rend(); ++it) {
            if (seen_.count(it->record) || !patched.insert(it->leaf).second) {
                continue; // the record is rewritten anyway, or a later change of the leaf wins
            }
            lyd_node* found = pointersValid_ ? const_cast<lyd_node*>(it->node) : nullptr;
            if (!found && (!tree || lyd_find_path(tree, it->leaf.c_str(), 0, &found) != LY_SUCCESS)) {
                found = nullptr;
            }
            if (found) { // else the leaf is gone with its record
                cs.ops.push_back({RecordOp::Kind::Patch, it->leaf, {}, lyd_get_value(found)});
            }
        }
        const lyd_node* lastParent = nullptr;
        std::string lastParentPath;
        for (const auto* list : {&shells, &entries}) {
            for (const auto& [r, path] : *list) {
                if (lyd_parent(r) != lastParent) {
                    lastParent = lyd_parent(r);
                    lastParentPath = lastParent ? pathOf(lastParent) : std::string();
                }
                cs.ops.push_back({RecordOp::Kind::Upsert, *path, lastParentPath, detail::serializeRecord(r)});
            }
        }
        return cs;
    }

private:
    bool isLocal(const lyd_node* root) const {
        return planner_ && detail::isSplitEntry(root) && planner_->recordIsLocal(root->schema);
    }
    void planLocal(const lyd_node* root) {
        if (!isLocal(root)) {
            needFullValidation_ = true;
            return;
        }
        // Once a node was deleted, a new record may sit at a freed address: dedupe by path.
        if (needFullValidation_ || (pointersValid_ && !localSeen_.insert(root).second)) {
            return;
        }
        std::string path = pathOf(root);
        if (localPathsSeen_.insert(path).second) {
            localChecks_.push_back(std::move(path));
            localNodes_.push_back(root);
        }
    }
    static bool mayHoldRecords(const lyd_node* node) {
        for (const lyd_node* p = node; p; p = lyd_parent(p)) {
            if (!p->schema || p->schema->nodetype != LYS_CONTAINER) {
                return false;
            }
        }
        return true;
    }
    void touch(const lyd_node* record) {
        if (!pointersValid_ || touchedSeen_.insert(record).second) {
            touch(pathOf(record), record);
        }
    }
    void touch(std::string path, const lyd_node* record) {
        if (seen_.insert(path).second) {
            touched_.push_back(std::move(path));
            touchedNodes_.push_back(record);
        }
    }
    detail::ValidationPlanner* planner_;
    bool needFullValidation_ = false;
    // While no node was deleted, the nodes recorded below are alive: no lookups by path needed.
    bool pointersValid_ = true;
    std::vector<std::string> localChecks_;
    std::vector<const lyd_node*> localNodes_;       // same order
    std::unordered_set<const lyd_node*> localSeen_; // while pointersValid_
    std::unordered_set<std::string> localPathsSeen_;
    std::vector<std::pair<const lysc_node*, std::string>> deletedReferenced_;
    std::vector<std::string> rangeDeletes_;
    struct Patch {
        std::string record;
        std::string leaf;
        const lyd_node* node; // the leaf, while pointersValid_
    };
    std::vector<Patch> patches_;
    std::vector<std::string> touched_;
    std::vector<const lyd_node*> touchedNodes_; // same order
    std::unordered_set<std::string> seen_;
    std::unordered_set<const lyd_node*> touchedSeen_;
};

/// The change set that makes a datastore hold exactly `tree`.
ChangeSet fullChangeSet(Datastore ds, const lyd_node* tree) {
    ChangeSet cs{ds, {}};
    cs.ops.push_back({RecordOp::Kind::DeleteAll, {}, {}, {}});
    detail::forEachRecord(tree, [&](const lyd_node* r) {
        cs.ops.push_back({RecordOp::Kind::Upsert, pathOf(r),
                          lyd_parent(r) ? pathOf(lyd_parent(r)) : std::string(), detail::serializeRecord(r)});
    });
    return cs;
}

constexpr uint32_t kValidateOpts = LYD_VALIDATE_PRESENT | LYD_VALIDATE_NO_STATE;

/// Whether a validation diff deletes a node.
bool deletesData(const lyd_node* diff) {
    for (const lyd_node* top = diff; top; top = top->next) {
        const lyd_node* elem = nullptr;
        LYD_TREE_DFS_BEGIN(top, elem) {
            const lyd_meta* op = lyd_find_meta(elem->meta, nullptr, "yang:operation");
            if (op && std::strcmp(lyd_get_meta_value(op), "delete") == 0) {
                return true;
            }
            LYD_TREE_DFS_END(top, elem);
        }
    }
    return false;
}

} // namespace

class StoreImpl {
public:
    StoreImpl(const ly_ctx* ctx, const StoreOptions& options) : ctx_(ctx), options_(options) {
        auto persistence = std::make_unique<detail::Persistence>(options.file, options.durability);
        loadAll(*persistence);
        writer_ = std::make_unique<detail::Writer>(
            std::move(persistence), options.maxBatchChangeSets, options.maxBatchBytes,
            [this](detail::Persistence& p, const std::function<void()>& drain) {
                std::unique_lock lock(mutex_);
                drain();
                NCS_LOG(warning) << "datastore: reloading " << options_.file << " after a failed commit";
                loadAll(p);
                ++runningGeneration_;
            });
        NCS_LOG(info) << "datastore " << options.file << " open (durability " << toString(options.durability)
                      << "; " << leafrefs_.counters().planned << " leafrefs checked by key lookups)";
    }

    /// The implemented modules with revisions and enabled features: data written and validated
    /// under the same set needs no whole-tree validation when it is loaded again.
    std::string moduleSet() const {
        std::vector<std::string> items;
        uint32_t idx = 0;
        const lys_module* mod = nullptr;
        while ((mod = ly_ctx_get_module_iter(ctx_, &idx))) {
            if (!mod->implemented) {
                continue;
            }
            std::string item = std::string(mod->name) + "@" + (mod->revision ? mod->revision : "");
            const lysp_feature* f = nullptr;
            uint32_t fidx = 0;
            while ((f = lysp_feature_next(f, mod->parsed, &fidx))) {
                if (f->flags & LYS_FENABLED) {
                    item += std::string(" +") + f->name;
                }
            }
            items.push_back(std::move(item));
        }
        std::sort(items.begin(), items.end());
        std::string out;
        for (const auto& i : items) {
            out += i + "\n";
        }
        return out;
    }

    struct StoredRecord {
        std::string path;
        std::string parent;
        std::string data;
        Tree parsed;
        std::string error;
    };

    /// Parsing dominates start-up (libyang parses LYB at ~1 us a node): records are parsed on
    /// every core, then linked in order on this thread.
    void parseInParallel(std::vector<StoredRecord>& records) const {
        const std::size_t threads =
            records.size() < 256 ? 1 : std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 8);
        auto work = [&](std::size_t first) {
            for (std::size_t i = first; i < records.size(); i += threads) {
                try {
                    records[i].parsed = detail::RecordLoader::parse(ctx_, records[i].data);
                } catch (const std::exception& e) {
                    records[i].error = e.what();
                }
                std::string().swap(records[i].data);
            }
        };
        std::vector<std::thread> pool;
        for (std::size_t t = 1; t < threads; ++t) {
            pool.emplace_back(work, t);
        }
        work(0);
        for (auto& th : pool) {
            th.join();
        }
    }

    /// True when some configuration node of `mod` has a default value (leaf, leaf-list, choice).
    static bool moduleHasDefaults(const lys_module* mod) {
        std::function<bool(const lysc_node*)> has = [&](const lysc_node* node) {
            for (const lysc_node* n = node; n; n = n->next) {
                if (!(n->flags & LYS_CONFIG_W) && !(n->nodetype & (LYS_CHOICE | LYS_CASE))) {
                    continue;
                }
                if ((n->nodetype == LYS_LEAF && reinterpret_cast<const lysc_node_leaf*>(n)->dflt) ||
                    (n->nodetype == LYS_LEAFLIST && reinterpret_cast<const lysc_node_leaflist*>(n)->dflts) ||
                    (n->nodetype == LYS_CHOICE && reinterpret_cast<const lysc_node_choice*>(n)->dflt) ||
                    has(lysc_node_child(n))) {
                    return true;
                }
            }
            return false;
        };
        return has(mod->compiled->data);
    }

    /// Adds the default nodes of the modules that have any. lyd_new_implicit_all and
    /// lyd_new_implicit_module walk the whole forest, so data is handled per top-level node.
    void addDefaults(lyd_node** forest) const {
        uint32_t idx = 0;
        const lys_module* mod = nullptr;
        while ((mod = ly_ctx_get_module_iter(ctx_, &idx))) {
            if (!mod->implemented || !mod->compiled || !moduleHasDefaults(mod)) {
                continue;
            }
            bool hasData = false;
            for (lyd_node* top = *forest; top; top = top->next) {
                if (lyd_owner_module(top) == mod) {
                    hasData = true;
                    if (lyd_new_implicit_tree(top, LYD_IMPLICIT_NO_STATE, nullptr) != LY_SUCCESS) {
                        throw Error(ErrorTag::OperationFailed,
                                    "cannot add default nodes: " + lastError(ctx_));
                    }
                }
            }
            if (hasData) {
                continue;
            }
            // Top-level containers that hold only defaults.
            lyd_node* implicit = nullptr;
            if (lyd_new_implicit_module(&implicit, mod, LYD_IMPLICIT_NO_STATE, nullptr) != LY_SUCCESS) {
                lyd_free_all(implicit);
                throw Error(ErrorTag::OperationFailed,
                            std::string("cannot add default nodes of ") + mod->name + ": " + lastError(ctx_));
            }
            if (implicit) {
                if (!*forest) {
                    *forest = implicit;
                } else if (lyd_insert_sibling(*forest, implicit, forest) != LY_SUCCESS) {
                    lyd_free_all(implicit);
                    throw Error(ErrorTag::OperationFailed, "cannot link default nodes: " + lastError(ctx_));
                }
            }
        }
    }

    void loadAll(detail::Persistence& p) {
        const std::string modules = moduleSet();
        const bool trusted = !options_.verifyOnOpen && p.meta("module_set") == modules;
        for (Datastore ds : {Datastore::Running, Datastore::Startup}) {
            Tree forest;
            const auto start = Clock::now();
            std::uint64_t records = 0;
            {
                detail::RecordLoader loader(ctx_);
                try {
                    std::vector<StoredRecord> stored;
                    p.load(ds,
                           [&](const std::string& path, const std::string& parent, const std::string& data) {
                               stored.push_back({path, parent, data, {}, {}});
                           });
                    records = stored.size();
                    parseInParallel(stored);
                    for (auto& r : stored) {
                        if (!r.error.empty()) {
                            throw Error(ErrorTag::OperationFailed, "record " + r.path + ": " + r.error);
                        }
                        try {
                            loader.link(r.parent, std::move(r.parsed));
                        } catch (const std::exception& e) {
                            throw Error(ErrorTag::OperationFailed, "record " + r.path + ": " + e.what());
                        }
                    }
                } catch (const Error& e) {
                    std::string backup = detail::newestBackup(options_.file);
                    throw Error(ErrorTag::OperationFailed,
                                "the datastore " + options_.file.string() + " cannot be loaded (" +
                                    toString(ds) + "): " + e.what() +
                                    (backup.empty() ? " (no backup found beside it)"
                                                    : " (newest backup: " + backup + ")"));
                }
                forest.reset(loader.release());
                p.loadPatches(ds, [&](const std::string& path, const std::string& value) {
                    applyPatch(forest, path, value);
                });
            }
            const auto loadedUs = usSince(start);
            if (trusted) {
                // Validated when written, under these very modules: only the defaults, which are
                // not stored, need to come back.
                RawTree raw(forest);
                addDefaults(raw.ptr());
            } else {
                RawTree raw(forest);
                if (raw.get() && lyd_validate_all(raw.ptr(), ctx_, kValidateOpts, nullptr) != LY_SUCCESS) {
                    throw Error(ErrorTag::OperationFailed,
                                "the " + std::string(toString(ds)) + " data in " + options_.file.string() +
                                    " does not validate against the loaded YANG modules: " + lastError(ctx_) +
                                    " (" + lastErrorPath(ctx_) +
                                    "); start with the modules it was written with");
                }
            }
            NCS_LOG(info) << "datastore: " << toString(ds) << ": " << records << " records loaded in "
                          << loadedUs / 1000 << " ms, " << (trusted ? "defaults added" : "validated")
                          << " in " << (usSince(start) - loadedUs) / 1000 << " ms";
            trees_[index(ds)] = std::move(forest);
        }
        if (!trusted) {
            p.setMeta("module_set", modules);
        }
    }

    void applyPatch(Tree& forest, const std::string& path, const std::string& value) {
        lyd_node* leaf = nullptr;
        if (forest && lyd_find_path(forest.get(), path.c_str(), 0, &leaf) == LY_SUCCESS && leaf) {
            const LY_ERR rc = lyd_change_term(leaf, value.c_str());
            if (rc == LY_SUCCESS || rc == LY_EEXIST || rc == LY_ENOT) {
                return;
            }
        } else {
            // The leaf held its default when the patch was written: defaults are not stored.
            lyd_node* created = nullptr;
            RawTree raw(forest);
            if (lyd_new_path(raw.get(), raw.get() ? nullptr : ctx_, path.c_str(), value.c_str(),
                             LYD_NEW_PATH_UPDATE, &created) == LY_SUCCESS &&
                created) {
                if (!raw.get()) {
                    while (lyd_parent(created)) {
                        created = lyd_parent(created);
                    }
                    *raw.ptr() = created;
                }
                return;
            }
        }
        throw Error(ErrorTag::OperationFailed, "the datastore " + options_.file.string() +
                                                   " holds a patch that does not apply: " + path + " = " +
                                                   value + ": " + lastError(ctx_));
    }

    static std::size_t index(Datastore ds) { return static_cast<std::size_t>(ds); }

    /// The tree a datastore shows (candidate tracks running until it is edited).
    const lyd_node* view(Datastore ds) const {
        if (ds == Datastore::Candidate && !candidateOwn_) {
            return trees_[index(Datastore::Running)].get();
        }
        return trees_[index(ds)].get();
    }

    void read(Datastore ds, const std::function<void(const lyd_node*)>& fn) const {
        std::shared_lock lock(mutex_);
        fn(view(ds));
    }

    Tree snapshot(Datastore ds) const {
        std::shared_lock lock(mutex_);
        return dupForest(view(ds));
    }

    void ensureCandidateOwn() {
        if (!candidateOwn_) {
            trees_[index(Datastore::Candidate)] = dupForest(trees_[index(Datastore::Running)].get());
            candidateOwn_ = true;
            candidateBase_ = runningGeneration_;
            candidateIncremental_ = true;
            candidateChanges_ = Collector(nullptr);
        }
    }

    /// Reverts what a (possibly failed) validation did, then the edit itself.
    static void rollback(Tree& tree, lyd_node* validationDiff, detail::UndoLog& undo) {
        RawTree raw(tree);
        if (validationDiff) {
            lyd_node* reversed = nullptr;
            if (lyd_diff_reverse_all(validationDiff, &reversed) == LY_SUCCESS) {
                Tree owned{reversed};
                if (lyd_diff_apply_all(raw.ptr(), reversed) != LY_SUCCESS) {
                    NCS_LOG(warning) << "datastore: reverting validation changes failed: "
                                     << lastError(LYD_CTX(validationDiff));
                }
            }
        }
        undo.undo(raw.ptr());
    }

    WriteTiming edit(Datastore ds, const lyd_node* editTree, const EditOptions& options) {
        WriteTiming timing;
        std::future<void> durable;
        std::optional<Error> stopError;
        {
            std::unique_lock lock(mutex_);
            const bool hadOwnCandidate = candidateOwn_;
            if (ds == Datastore::Candidate) {
                ensureCandidateOwn();
            }
            Tree& tree = trees_[index(ds)];
            Collector collector(&planner_);
            detail::UndoLog undo;
            auto t0 = Clock::now();
            try {
                RawTree raw(tree);
                detail::applyEdit(raw.ptr(), editTree, options.defaultOperation, undo, collector);
            } catch (const Error& e) {
                if (options.errorOption == ErrorOption::StopOnError &&
                    options.testOption != TestOption::TestOnly && !undo.empty()) {
                    stopError = e;
                } else {
                    rollback(tree, nullptr, undo);
                    restoreCandidate(hadOwnCandidate);
                    ++failed_;
                    throw;
                }
            }
            timing.applyUs = usSince(t0);

            t0 = Clock::now();
            if (options.testOption != TestOption::Set) {
                const bool localOk =
                    !collector.needFullValidation() &&
                    !planner_.referrersMayDangle(tree.get(), collector.deletedReferenced()) &&
                    validateLocally(tree.get(), collector.localChecks(tree.get()),
                                    options.testOption != TestOption::TestOnly);
                lyd_node* diff = nullptr;
                LY_ERR rc = LY_SUCCESS;
                timing.wholeTreeValidation = !localOk;
                if (!localOk) {
                    RawTree raw(tree);
                    rc = raw.get() ? lyd_validate_all(raw.ptr(), ctx_, kValidateOpts, &diff) : LY_SUCCESS;
                }
                Tree diffOwner{diff};
                if (rc != LY_SUCCESS) {
                    Error err = validationError(ctx_, "");
                    rollback(tree, diff, undo);
                    restoreCandidate(hadOwnCandidate);
                    ++failed_;
                    throw err;
                }
                if (options.testOption == TestOption::TestOnly) {
                    rollback(tree, diff, undo);
                    restoreCandidate(hadOwnCandidate);
                    timing.validateUs = usSince(t0);
                    return timing;
                }
                collector.addValidationDiff(diff, tree.get());
            } else {
                // test-option "set": no validation; defaults still belong in the tree.
                try {
                    RawTree raw(tree);
                    addDefaults(raw.ptr());
                } catch (const Error&) {
                    rollback(tree, nullptr, undo);
                    restoreCandidate(hadOwnCandidate);
                    ++failed_;
                    throw;
                }
            }
            timing.validateUs = usSince(t0);

            if (ds == Datastore::Candidate) {
                candidateModified_ = candidateModified_ || !collector.empty();
                candidateChanges_.absorb(collector);
                // Unvalidated edits (test-option set) make commit validate the whole candidate.
                candidateIncremental_ = candidateIncremental_ && options.testOption != TestOption::Set;
            } else if (!collector.empty()) {
                ++runningGeneration_;
                t0 = Clock::now();
                ChangeSet cs = collector.build(ds, tree.get());
                timing.changedRecords = cs.ops.size();
                timing.serializeUs = usSince(t0);
                durable = writer_->submit(std::move(cs));
            }
        }
        if (durable.valid()) {
            auto t0 = Clock::now();
            durable.get();
            timing.commitWaitUs = usSince(t0);
        }
        if (stopError) {
            throw *stopError;
        }
        return timing;
    }

    /// Validates the records on their own: copies of them, with their container chains (and the
    /// shells of their top-level nodes, when read), in one forest. False when that fails or a
    /// record is gone: the caller then validates the whole tree, whose verdict is the real one.
    bool validateLocally(lyd_node* tree, const std::vector<lyd_node*>& roots, bool addDefaults) {
        Tree copy;
        std::unordered_set<const lyd_node*> shellsCopied;
        bool whens = false;
        for (const lyd_node* root : roots) {
            whens = whens || planner_.recordHasWhen(root->schema);
            const lyd_node* top = root;
            while (lyd_parent(top)) {
                top = lyd_parent(top);
            }
            if (planner_.recordReadsShell(root->schema) && shellsCopied.insert(top).second) {
                Tree shell = detail::copyRecordShell(top);
                if (!copy) {
                    copy = std::move(shell);
                } else if (lyd_insert_sibling(copy.get(), shell.get(), nullptr) == LY_SUCCESS) {
                    shell.release();
                } else {
                    return false;
                }
            }
        }
        std::unordered_map<const lyd_node*, lyd_node*> parents; // original -> copy
        for (const lyd_node* root : roots) {
            lyd_node*& parent = parents[lyd_parent(root)];
            if (!parent) {
                parent = copyParentChain(copy, root);
            }
            if (!parent || lyd_dup_single(root, reinterpret_cast<lyd_node_inner*>(parent), LYD_DUP_RECURSIVE,
                                          nullptr) != LY_SUCCESS) {
                return false;
            }
        }
        if (copy) {
            RawTree raw(copy);
            lyd_node* diff = nullptr;
            LY_ERR rc = LY_SUCCESS;
            {
                detail::AbsoluteLeafrefRoot references(tree);
                // The diff, which costs, serves only to see what a `when` deleted.
                rc = lyd_validate_all(raw.ptr(), ctx_, kValidateOpts, whens ? &diff : nullptr);
            }
            Tree diffOwner{diff};
            if (rc != LY_SUCCESS || deletesData(diff)) {
                return false; // a `when` deleting data must be found in the real tree
            }
        }
        if (addDefaults) {
            for (lyd_node* root : roots) {
                if (lyd_new_implicit_tree(root, LYD_IMPLICIT_NO_STATE, nullptr) != LY_SUCCESS) {
                    return false;
                }
            }
        }
        return true;
    }

    /// The copy, in the forest `copy`, of the parent of the split entry `record` (made, with its
    /// chain, when missing); nullptr on failure.
    lyd_node* copyParentChain(Tree& copy, const lyd_node* record) const {
        const std::string parentPath = pathOf(lyd_parent(record));
        lyd_node* parent = nullptr;
        if (copy && lyd_find_path(copy.get(), parentPath.c_str(), 0, &parent) == LY_SUCCESS && parent) {
            return parent;
        }
        lyd_node* created = nullptr;
        RawTree raw(copy);
        if (lyd_new_path2(raw.get(), ctx_, parentPath.c_str(), nullptr, 0, LYD_ANYDATA_STRING, 0, &created,
                          &parent) != LY_SUCCESS) {
            return nullptr;
        }
        if (!raw.get() && created) {
            while (lyd_parent(created)) {
                created = lyd_parent(created);
            }
            raw.ptr()[0] = created;
        }
        return parent;
    }

    void restoreCandidate(bool hadOwnCandidate) {
        if (!hadOwnCandidate && candidateOwn_) {
            trees_[index(Datastore::Candidate)].reset();
            candidateOwn_ = false;
        }
    }

    void validateTree(Tree& tree) const {
        RawTree raw(tree);
        if (raw.get() && lyd_validate_all(raw.ptr(), ctx_, kValidateOpts, nullptr) != LY_SUCCESS) {
            throw validationError(ctx_, "");
        }
    }

    /// Replaces a whole datastore with `content` (validated here). Caller holds no lock.
    WriteTiming replace(Datastore ds, Tree content, bool resetCandidate = false) {
        WriteTiming timing;
        auto t0 = Clock::now();
        validateTree(content);
        timing.validateUs = usSince(t0);
        timing.wholeTreeValidation = true;
        std::future<void> durable;
        {
            std::unique_lock lock(mutex_);
            if (ds == Datastore::Candidate) {
                trees_[index(ds)] = std::move(content);
                candidateOwn_ = true;
                candidateModified_ = true;
                candidateIncremental_ = false;
                return timing;
            }
            if (ds == Datastore::Running) {
                ++runningGeneration_;
            }
            t0 = Clock::now();
            ChangeSet cs = fullChangeSet(ds, content.get());
            timing.changedRecords = cs.ops.size();
            timing.serializeUs = usSince(t0);
            trees_[index(ds)] = std::move(content);
            if (resetCandidate) {
                trees_[index(Datastore::Candidate)].reset();
                candidateOwn_ = false;
                candidateModified_ = false;
            }
            durable = writer_->submit(std::move(cs));
        }
        t0 = Clock::now();
        durable.get();
        timing.commitWaitUs = usSince(t0);
        return timing;
    }

    WriteTiming commit() {
        Tree content;
        {
            std::unique_lock lock(mutex_);
            if (!candidateOwn_) {
                return {}; // candidate tracks running: nothing to commit
            }
            if (candidateIncremental_ && candidateBase_ == runningGeneration_) {
                // Running has not moved since candidate was copied from it: write only what the
                // candidate edits touched, and the candidate tree becomes running.
                WriteTiming timing;
                auto t0 = Clock::now();
                ChangeSet cs =
                    candidateChanges_.build(Datastore::Running, trees_[index(Datastore::Candidate)].get());
                timing.changedRecords = cs.ops.size();
                timing.serializeUs = usSince(t0);
                trees_[index(Datastore::Running)] = std::move(trees_[index(Datastore::Candidate)]);
                candidateOwn_ = false;
                candidateModified_ = false;
                candidateChanges_ = Collector(nullptr);
                ++runningGeneration_;
                std::future<void> durable = writer_->submit(std::move(cs));
                lock.unlock();
                t0 = Clock::now();
                durable.get();
                timing.commitWaitUs = usSince(t0);
                return timing;
            }
            content = dupForest(trees_[index(Datastore::Candidate)].get());
        }
        return replace(Datastore::Running, std::move(content), true);
    }

    void discardChanges() {
        std::unique_lock lock(mutex_);
        candidateChanges_ = Collector(nullptr);
        trees_[index(Datastore::Candidate)].reset();
        candidateOwn_ = false;
        candidateModified_ = false;
    }

    bool candidateModified() const {
        std::shared_lock lock(mutex_);
        return candidateModified_;
    }

    Stats stats() const {
        Stats s = writer_->stats();
        s.failedWrites += failed_.load();
        return s;
    }

    const ly_ctx* ctx_;
    StoreOptions options_;
    detail::LeafrefAccelerator leafrefs_{ctx_};
    detail::ValidationPlanner planner_{ctx_, &leafrefs_};
    mutable std::shared_mutex mutex_;
    Tree trees_[3];
    bool candidateOwn_ = false;
    bool candidateModified_ = false;
    // Incremental commit: what candidate edits touched since candidate was copied from running
    // at generation candidateBase_ (running's generation counts its writes).
    std::uint64_t runningGeneration_ = 0;
    std::uint64_t candidateBase_ = 0;
    bool candidateIncremental_ = false;
    Collector candidateChanges_{nullptr};
    std::atomic<std::uint64_t> failed_{0};
    std::unique_ptr<detail::Writer> writer_; // last: stopped (drained) first
};

std::unique_ptr<Store> Store::open(const ly_ctx* ctx, const StoreOptions& options) {
    return std::unique_ptr<Store>(new Store(std::make_unique<StoreImpl>(ctx, options)));
}

Store::Store(std::unique_ptr<StoreImpl> impl) : impl_(std::move(impl)) {}
Store::~Store() = default;

void Store::read(Datastore ds, const std::function<void(const lyd_node*)>& fn) const {
    impl_->read(ds, fn);
}
Tree Store::snapshot(Datastore ds) const {
    return impl_->snapshot(ds);
}

WriteTiming Store::edit(Datastore ds, const lyd_node* edit, const EditOptions& options) {
    return impl_->edit(ds, edit, options);
}

WriteTiming Store::replace(Datastore ds, const lyd_node* config) {
    return impl_->replace(ds, dupForest(config));
}

WriteTiming Store::copy(Datastore from, Datastore to) {
    if (from == to) {
        return {};
    }
    return impl_->replace(to, impl_->snapshot(from));
}

WriteTiming Store::clear(Datastore ds) {
    return impl_->replace(ds, Tree{});
}

void Store::validate(Datastore ds) const {
    Tree copy = impl_->snapshot(ds);
    impl_->validateTree(copy);
}

void Store::validate(const lyd_node* config) const {
    Tree copy = dupForest(config);
    impl_->validateTree(copy);
}

WriteTiming Store::commit() {
    return impl_->commit();
}
void Store::discardChanges() {
    impl_->discardChanges();
}
bool Store::candidateModified() const {
    return impl_->candidateModified();
}

void backupStore(const std::filesystem::path& file, const std::filesystem::path& dest) {
    detail::backupFile(file, dest);
}

void Store::backup(const std::filesystem::path& dest) const {
    detail::backupFile(impl_->options_.file, dest);
}

std::string Store::integrityCheck() const {
    std::string result = detail::integrityCheckFile(impl_->options_.file);
    return result;
}

Stats Store::stats() const {
    return impl_->stats();
}
const ly_ctx* Store::context() const {
    return impl_->ctx_;
}

} // namespace ncstore::ds
