#include "candidate.hpp"

#include "trees.hpp"

namespace ncstore::ds::detail {

void Candidate::branch(const lyd_node* running, std::uint64_t runningGeneration, std::uint64_t seq) {
    if (own_) {
        return;
    }
    tree_ = dupForest(running);
    own_ = true;
    base_ = runningGeneration;
    baseSeq_ = seq;
    incremental_ = true;
    touched_ = RecordCollector(nullptr);
}

void Candidate::unbranch(bool wasOwn) {
    if (!wasOwn && own_) {
        tree_.reset();
        own_ = false;
    }
}

void Candidate::edited(const RecordCollector& records, bool validated, std::uint32_t session) {
    if (!records.empty()) {
        editors_.insert(session);
    }
    touched_.absorb(records);
    // Unvalidated edits (test-option set) make commit validate the whole candidate.
    incremental_ = incremental_ && validated;
}

void Candidate::replaced(Tree content, std::uint32_t session) {
    tree_ = std::move(content);
    own_ = true;
    editors_.insert(session);
    incremental_ = false;
}

Tree Candidate::reset() {
    Tree held = std::move(tree_);
    own_ = false;
    editors_.clear();
    incremental_ = false;
    touched_ = RecordCollector(nullptr);
    return held;
}

} // namespace ncstore::ds::detail
