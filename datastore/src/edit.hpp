// NETCONF edit-config semantics (RFC 6241 7.2) applied to an in-memory libyang tree, in place,
// with an undo log. Private to the datastore.
#pragma once

#include "ncstore/datastore.hpp"

#include <memory>
#include <string>
#include <vector>

namespace ncstore::ds::detail {

/// Told about every change the edit engine makes to the target tree, in order, so that the
/// store can mark the persisted records to rewrite and build the logical change set. Nodes are
/// valid only during the call.
class ChangeObserver {
public:
    virtual ~ChangeObserver() = default;
    /// `node` and its subtree were just inserted into the tree.
    virtual void created(const lyd_node* node) = 0;
    /// The terminal `node` changed its value from `oldValue` (canonical), or lost its default
    /// flag (`wasDefault`: it held only its default before).
    virtual void changed(const lyd_node* node, const std::string& oldValue, bool wasDefault) = 0;
    /// The ordered-by-user instance `node` was moved within its (leaf-)list; before the move it
    /// followed the instance at `oldAnchor` (its data path; "" when it was the first instance).
    virtual void moved(const lyd_node* node, const std::string& oldAnchor) = 0;
    /// `node` and its subtree are about to be removed from the tree (still linked now).
    virtual void deleting(const lyd_node* node) = 0;
};

/// Tells two observers (the second may be null).
class ObserverPair : public ChangeObserver {
public:
    ObserverPair(ChangeObserver& first, ChangeObserver* second) : first_(first), second_(second) {}
    void created(const lyd_node* node) override {
        first_.created(node);
        if (second_) {
            second_->created(node);
        }
    }
    void changed(const lyd_node* node, const std::string& oldValue, bool wasDefault) override {
        first_.changed(node, oldValue, wasDefault);
        if (second_) {
            second_->changed(node, oldValue, wasDefault);
        }
    }
    void moved(const lyd_node* node, const std::string& oldAnchor) override {
        first_.moved(node, oldAnchor);
        if (second_) {
            second_->moved(node, oldAnchor);
        }
    }
    void deleting(const lyd_node* node) override {
        first_.deleting(node);
        if (second_) {
            second_->deleting(node);
        }
    }

private:
    ChangeObserver& first_;
    ChangeObserver* second_;
};

/// The inverse of every change made, so that a failed or test-only edit leaves the tree exactly
/// as it was. Entries refer to nodes by data path, never by pointer, so undo stays correct even
/// after validation freed or re-created nodes (the store reverts validation changes first).
class UndoLog {
public:
    UndoLog();
    ~UndoLog();
    UndoLog(UndoLog&&) noexcept;
    UndoLog& operator=(UndoLog&&) noexcept;

    bool empty() const;
    std::size_t size() const;
    /// Reverts every recorded change, newest first, and clears the log. `tree` is the forest the
    /// edit was applied to (its first node may change).
    void undo(lyd_node** tree);
    /// Forgets the recorded changes (after a successful commit).
    void clear();

    struct Entry;
    /// Used by the edit engine to record changes.
    void push(std::unique_ptr<Entry> entry);

private:
    std::vector<std::unique_ptr<Entry>> entries_;
};

/// Applies `edit` (a data forest parsed with LYD_PARSE_ONLY, carrying ietf-netconf:operation and
/// yang:insert/key/value metadata) to `*tree` in document order.
///
/// Semantics: RFC 6241 7.2 for merge, replace, create, delete, remove and default-operation
/// merge/replace/none; RFC 7950 7.8.6 / 7.7.9 insert first/last/before/after for ordered-by-user
/// lists and leaf-lists. Default nodes (LYD_DEFAULT) in the target count as absent for create
/// and delete (RFC 6243 basic-mode explicit); merging a value onto one makes it explicit.
/// Creating a node of one case of a choice removes the nodes of its other cases (RFC 7950 7.9.4),
/// reported as deletions. An edit parsed with LYD_PARSE_OPAQ may hold opaque leaves: delete and
/// remove of a leaf without a value (`<mtu nc:operation="delete"/>`) work; any other opaque node
/// is an invalid-value (or unknown-element) error.
///
/// Every change is recorded in `undo` and reported to `observer`. On the first error throws
/// ncstore::ds::Error (tag data-exists, data-missing, invalid-value, bad-attribute,
/// missing-attribute, operation-not-supported ..., with the data path of the edit node) and
/// leaves the changes made so far in place (the caller decides to undo them or keep them).
void applyEdit(lyd_node** tree, const lyd_node* edit, DefaultOperation defaultOperation, UndoLog& undo,
               ChangeObserver& observer);

} // namespace ncstore::ds::detail
