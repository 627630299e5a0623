// The record-level change set of a write: which persisted records (records.hpp) an edit
// touched, built from the edit engine's observer, so that a write costs what it changes and not
// the size of the tree. Also plans the validation the edit needs (validation.hpp). Private to
// the datastore.
#pragma once

#include "backend.hpp"
#include "edit.hpp"
#include "validation.hpp"

#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

namespace ncstore::ds::detail {

/// Collects the records an edit touches, in the order they were touched.
class RecordCollector : public ChangeObserver {
public:
    /// `planner` (may be null: no validation planning) must outlive the collector.
    explicit RecordCollector(ValidationPlanner* planner) : planner_(planner) {}

    void created(const lyd_node* node) override;
    void changed(const lyd_node* node, const std::string& oldValue, bool wasDefault) override;
    void moved(const lyd_node* node, const std::string& oldAnchor) override;
    void deleting(const lyd_node* node) override;

    /// True when only whole-tree validation can judge the edit.
    bool needFullValidation() const { return needFullValidation_; }
    /// Records to validate on their own (when needFullValidation() is false), found in `tree`.
    std::vector<lyd_node*> localChecks(const lyd_node* tree) const;
    /// Deleted nodes that leafrefs elsewhere may point to (when needFullValidation() is false).
    const std::vector<std::pair<const lysc_node*, std::string>>& deletedReferenced() const {
        return deletedReferenced_;
    }

    /// Marks the records that validation changed (defaults are not stored, so only deletions
    /// and explicit nodes matter).
    void addValidationDiff(const lyd_node* diff, const lyd_node* tree);

    bool empty() const { return rangeDeletes_.empty() && touched_.empty() && patches_.empty(); }

    /// Adds what another (successful) edit changed, so that one change set covers both.
    void absorb(const RecordCollector& other);

    /// What was recorded: deleted subtrees (records and the containers holding them), records
    /// touched, leaves patched (their paths).
    const std::vector<std::string>& rangeDeletes() const { return rangeDeletes_; }
    const std::vector<std::string>& touchedRecords() const { return touched_; }
    std::vector<std::string> patchedLeaves() const;

    /// The record set: range deletes first, then the touched records as they are now in `tree`.
    RecordSet build(Datastore ds, const lyd_node* tree) const;

private:
    bool isLocal(const lyd_node* root) const;
    void planLocal(const lyd_node* root);
    static bool mayHoldRecords(const lyd_node* node);
    void touch(const lyd_node* record);
    void touch(std::string path, const lyd_node* record);
    void modified(const lyd_node* node);

    ValidationPlanner* planner_;
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

/// The record set that makes datastore `ds` hold exactly `tree`.
RecordSet fullRecordSet(Datastore ds, const lyd_node* tree);

} // namespace ncstore::ds::detail
