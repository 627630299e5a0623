// Building the logical change set (ncstore/changes.hpp): from the edit engine's observer for an
// edit, by a keyed comparison for replace/copy/clear/commit. Private to the datastore.
//
// Cost: an edit's changes cost what the edit changed (a copy of each created or deleted
// subtree). The comparison walks both trees with hash lookups by key (linear, where libyang
// 2.1.30's lyd_diff_siblings is quadratic on large lists) and skips a record (records.hpp) whose
// content compares equal at once; for an incremental commit it looks only at the records the
// candidate edits touched.
#pragma once

#include "edit.hpp"
#include "recordset.hpp"

#include "ncstore/changes.hpp"

#include <vector>

namespace ncstore::ds::detail {

/// The changes of an edit, in the order the edit engine made them.
class ChangeBuilder : public ChangeObserver {
public:
    void created(const lyd_node* node) override;
    void changed(const lyd_node* node, const std::string& oldValue, bool wasDefault) override;
    void moved(const lyd_node* node, const std::string& oldAnchor) override;
    void deleting(const lyd_node* node) override;

    /// What validation did after the edit (`diff`: its diff, may be null): data it deleted (a
    /// `when` turned false) and explicit nodes it created. Default nodes are not changes.
    void addValidationDiff(const lyd_node* diff);

    std::vector<Change> take() { return std::move(changes_); }

private:
    std::vector<Change> changes_;
};

/// Appends the net changes that turn `oldForest` into `newForest` (whole datastores).
void diffForests(const lyd_node* oldForest, const lyd_node* newForest, std::vector<Change>& out);

/// Appends the net changes that turn `oldForest` into `newForest` when they differ only in what
/// `touched` recorded (an incremental commit: the candidate edits since candidate was copied).
void diffTouched(const lyd_node* oldForest, const lyd_node* newForest, const RecordCollector& touched,
                 std::vector<Change>& out);

} // namespace ncstore::ds::detail
