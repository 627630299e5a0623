#include "recordset.hpp"

#include "records.hpp"

#include "ncstore/yang.hpp"

namespace ncstore::ds::detail {

void RecordCollector::created(const lyd_node* node) {
    forEachRecordIn(node, [this](const lyd_node* r) { touch(r); });
    const lyd_node* root = recordRoot(node);
    touch(root);
    planLocal(root);
}

void RecordCollector::changed(const lyd_node* node, const std::string&, bool) {
    modified(node);
}

void RecordCollector::moved(const lyd_node* node, const std::string& /*oldAnchor*/) {
    modified(node);
}

void RecordCollector::modified(const lyd_node* node) {
    const lyd_node* root = recordRoot(node);
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

void RecordCollector::deleting(const lyd_node* node) {
    pointersValid_ = false;
    if (planner_ && !needFullValidation_) {
        planner_->collectReferenced(node, deletedReferenced_);
    }
    const lyd_node* root = recordRoot(node);
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

std::vector<lyd_node*> RecordCollector::localChecks(const lyd_node* tree) const {
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

void RecordCollector::addValidationDiff(const lyd_node* diff, const lyd_node* tree) {
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
                            touch(recordRoot(parent));
                        }
                    }
                }
            }
            LYD_TREE_DFS_END(top, elem);
        }
    }
}

void RecordCollector::absorb(const RecordCollector& other) {
    pointersValid_ = false;
    rangeDeletes_.insert(rangeDeletes_.end(), other.rangeDeletes_.begin(), other.rangeDeletes_.end());
    patches_.insert(patches_.end(), other.patches_.begin(), other.patches_.end());
    for (const auto& p : other.touched_) {
        touch(p, nullptr);
    }
}

RecordSet RecordCollector::build(Datastore ds, const lyd_node* tree) const {
    RecordSet cs{ds, {}};
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
            cs.ops.push_back({RecordOp::Kind::Upsert, *path, lastParentPath, serializeRecord(r)});
        }
    }
    return cs;
}

bool RecordCollector::isLocal(const lyd_node* root) const {
    return planner_ && isSplitEntry(root) && planner_->recordIsLocal(root->schema);
}

void RecordCollector::planLocal(const lyd_node* root) {
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

bool RecordCollector::mayHoldRecords(const lyd_node* node) {
    for (const lyd_node* p = node; p; p = lyd_parent(p)) {
        if (!p->schema || p->schema->nodetype != LYS_CONTAINER) {
            return false;
        }
    }
    return true;
}

void RecordCollector::touch(const lyd_node* record) {
    if (!pointersValid_ || touchedSeen_.insert(record).second) {
        touch(pathOf(record), record);
    }
}

void RecordCollector::touch(std::string path, const lyd_node* record) {
    if (seen_.insert(path).second) {
        touched_.push_back(std::move(path));
        touchedNodes_.push_back(record);
    }
}

std::vector<std::string> RecordCollector::patchedLeaves() const {
    std::vector<std::string> leaves;
    leaves.reserve(patches_.size());
    for (const auto& p : patches_) {
        leaves.push_back(p.leaf);
    }
    return leaves;
}

RecordSet fullRecordSet(Datastore ds, const lyd_node* tree) {
    RecordSet rs{ds, {}};
    rs.ops.push_back({RecordOp::Kind::DeleteAll, {}, {}, {}});
    forEachRecord(tree, [&](const lyd_node* r) {
        rs.ops.push_back({RecordOp::Kind::Upsert, pathOf(r),
                          lyd_parent(r) ? pathOf(lyd_parent(r)) : std::string(), serializeRecord(r)});
    });
    return rs;
}

} // namespace ncstore::ds::detail
