// The candidate datastore (RFC 6241 8.3), in memory only. Private to the datastore.
//
// Candidate tracks running (shows running's tree and holds nothing) until it is first edited;
// it is then a copy of running plus its edits. It remembers which records those edits touched,
// so that a commit writes only those while running has not moved since the copy.
// Not thread-safe: the store's lock guards it.
#pragma once

#include "recordset.hpp"

#include "ncstore/yang.hpp"

#include <algorithm>
#include <cstdint>
#include <set>

namespace ncstore::ds::detail {

class Candidate {
public:
    bool own() const { return own_; }
    /// The tree candidate shows.
    const lyd_node* view(const lyd_node* running) const { return own_ ? tree_.get() : running; }
    Tree& tree() { return tree_; }

    /// Before an edit: when candidate tracks running, makes it a copy of `running`, which is at
    /// generation `runningGeneration` (running's generation counts its writes) and holds the
    /// writes up to sequence number `seq`.
    void branch(const lyd_node* running, std::uint64_t runningGeneration, std::uint64_t seq);
    /// The sequence number of the last write in the running tree candidate was copied from.
    std::uint64_t baseSeq() const { return baseSeq_; }
    /// After a failed or test-only edit: tracks running again if that edit branched it.
    void unbranch(bool wasOwn);
    /// A successful edit by `session` touched `records`; `validated`: the result was validated
    /// (not test-option set).
    void edited(const RecordCollector& records, bool validated, std::uint32_t session);
    /// Replaced as a whole by `session` (copy-config, delete-config, edit-config replacing
    /// everything).
    void replaced(Tree content, std::uint32_t session);
    /// Whether a commit may write only the touched records: running is still at the generation
    /// candidate was copied from, and every edit was validated.
    bool incremental(std::uint64_t runningGeneration) const {
        return incremental_ && base_ == runningGeneration;
    }
    const RecordCollector& touched() const { return touched_; }
    /// True when candidate differs from running through edits since the last reset.
    bool modified() const { return !editors_.empty(); }
    /// True when a session other than `session` (the server itself included) made those edits.
    bool modifiedByOtherThan(std::uint32_t session) const {
        return std::any_of(editors_.begin(), editors_.end(), [&](std::uint32_t e) { return e != session; });
    }
    /// Tracks running again (commit, discard-changes); returns the tree it held.
    Tree reset();

private:
    Tree tree_;
    bool own_ = false;
    std::set<std::uint32_t> editors_; // who made candidate differ from running
    std::uint64_t base_ = 0;
    std::uint64_t baseSeq_ = 0;
    bool incremental_ = false;
    RecordCollector touched_{nullptr};
};

} // namespace ncstore::ds::detail
