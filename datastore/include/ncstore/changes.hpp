// The logical change set of a write, as a value: per changed node its path, schema node,
// operation, and old and new values. The one seam through which notifications (RFC 6470
// netconf-config-change, YANG-Push on-change), the commit history (undo) and NACM (write checks)
// see what a write did.
//
// Promises:
//  1. Content: applying `changes` in order to the datastore as it was before the write yields the
//     datastore as it is after it. Default nodes (LYD_DEFAULT) do not count as present (RFC 6243
//     basic mode "explicit"): a leaf that held only its default and is now set is a Create;
//     a leaf set back to its default, and a node validation removed (a `when` turned false),
//     are Deletes.
//  2. Order: an edit's changes are listed as the edit engine made them; each old value (and old
//     position) is the state just before that change (so inverting them in reverse order undoes
//     the write: a Create by deleting its node, an Update by setting the old value, a Delete by
//     re-creating the old value or subtree at its old position, a Move by putting the instance
//     back at its old position).
//     Replace, copy-config, delete-config and commit list the net difference, found by a keyed
//     comparison of the records that changed (cost proportional to what changed, never a whole
//     tree diff): per parent, deletions first, then creations, updates and moves in the new
//     document order. Old positions follow the same rule there: a deleted ordered-by-user
//     instance is placed after the nearest earlier instance not deleted before it in the list,
//     a moved one where it stood in the order as the earlier changes left it.
//     One exception: an ordered-by-user instance that validation removed (a `when` turned
//     false) has no old position (libyang's validation diff does not say where it was).
//  3. Values: terminals (leaf, leaf-list instance) carry canonical strings; inner nodes and
//     anydata carry deep copies of their subtree, without parents, flags kept (default nodes
//     inside keep LYD_DEFAULT: print with libyang's default, explicit, mode to leave them out).
//  4. A change set is immutable once built; the store hands out `const ChangeSet&` or
//     `std::shared_ptr<const ChangeSet>`. Reading it (printing its trees) from several threads is
//     safe; nothing may modify it.
#pragma once

#include "ncstore/datastore.hpp"
#include "ncstore/yang.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ncstore::ds {

enum class ChangeOp {
    Create,  ///< the node did not exist (or held only its default): new value / new subtree
    Update,  ///< a leaf's value changed: old and new value
    Replace, ///< an anydata/anyxml node's content changed: old and new subtree
    Delete,  ///< the node and its subtree are gone (or back to their default): old value / subtree
    Move,    ///< an ordered-by-user instance changed its position: `position`
};
/// "create", "update", "replace", "delete", "move".
const char* toString(ChangeOp op);

/// Where an ordered-by-user instance is after a Create or a Move (RFC 8072 "point"/"where"), or
/// was before a Delete or a Move.
struct Position {
    enum class Where { First, After };
    Where where = Where::First;
    std::string anchor; ///< After: the path of the instance it now follows
};

struct Change {
    ChangeOp op = ChangeOp::Create;
    /// Instance identifier of the node: a module-qualified data path with every key in a
    /// predicate ("/ietf-interfaces:interfaces/interface[name='eth0']/mtu"), usable as an
    /// RFC 6470 edit target and as a YANG Patch (RFC 8072) target.
    std::string path;
    const lysc_node* schema = nullptr;
    std::optional<std::string> oldValue; ///< terminals: Update, Delete
    std::optional<std::string> newValue; ///< terminals: Create, Update
    Tree oldTree; ///< containers, list entries, anydata: Delete, Replace (the subtree before)
    Tree newTree; ///< containers, list entries, anydata: Create, Replace (the subtree after)
    std::optional<Position> position; ///< ordered-by-user instances: Create, Move
    /// Ordered-by-user instances: Delete, Move: where it was just before this change (promise 2),
    /// what an exact undo needs (the commit history).
    std::optional<Position> oldPosition;
};

/// Which operation produced a change set. `Event`: no data changed, only journal rows were
/// written (Store::appendJournal): the change set has no changes and carries its rows.
enum class Origin { Edit, Replace, Copy, Clear, Commit, Event };
const char* toString(Origin origin);

struct ChangeSet {
    /// The durable write's commit id: unique, increasing in commit order, kept across restarts
    /// (gaps where writes failed). 0 for writes that are not persisted (candidate).
    std::uint64_t commitId = 0;
    Datastore datastore = Datastore::Running;
    Origin origin = Origin::Edit;
    std::uint32_t session = 0; ///< WriteContext::session of the write
    std::string user;          ///< WriteContext::user of the write
    std::string host;          ///< WriteContext::host of the write
    std::string comment;       ///< WriteContext::comment of the write
    std::vector<Change> changes;
    /// The journal rows persisted with this change set, (journal name, row), as the journals'
    /// hooks made them (or as Store::appendJournal was given them): a listener that publishes
    /// what a journal logs needs not make it again. Set once the change set is durable.
    std::vector<std::pair<std::string, std::string>> journal;
};

/// Receives every durable change set of running and startup, in commit order, once each, on the
/// store's publisher thread: never on the commit path, so a slow listener delays no commit.
class ChangeListener {
public:
    virtual ~ChangeListener() = default;
    virtual void changed(const ChangeSet& changes) = 0;
    /// What the publisher calls: a listener that keeps a change set beyond the call (hands it to
    /// other threads, as notifications do for YANG-Push subscribers) overrides this and shares
    /// the store's own immutable copy instead of copying it.
    virtual void published(const std::shared_ptr<const ChangeSet>& changes) { changed(*changes); }
    /// What the publisher calls with the change sets of one wake-up that are for this listener
    /// (many commits under load), in commit order. A listener that hands change sets on to other
    /// threads overrides it to hand them on in one go: one wake-up of each of its consumers per
    /// batch instead of one per commit.
    virtual void publishedBatch(const std::vector<std::shared_ptr<const ChangeSet>>& batch) {
        for (const auto& changes : batch) {
            published(changes);
        }
    }
    /// The listener fell StoreOptions::maxUnpublished change sets behind: the change sets up to
    /// commit id `through` were dropped for it. It must resynchronize (read the datastore, or
    /// its journal) before it trusts the next changed().
    virtual void lost(std::uint64_t through) = 0;
};

/// Decides whether a write may happen, from what it would change (NACM write access, RFC 8341).
class AccessPolicy {
public:
    virtual ~AccessPolicy() = default;
    /// Called with the change set of every write made with this policy (candidate edits and
    /// test-only edits included), after validation and before anything of it is visible to
    /// readers, listeners or the disk, under the store's exclusive lock: it must be quick and
    /// must not call the Store. Throws Error to refuse (ErrorTag::AccessDenied for a denied
    /// change; another tag when the content is refused, e.g. an invalid NACM configuration);
    /// memory and disk are then unchanged.
    ///
    /// `result` is the datastore's whole tree as the write leaves it (any top-level sibling;
    /// nullptr when it leaves the datastore empty): for an edit, the edited and validated tree;
    /// for replace, copy and delete-config, the new content; for a commit, the candidate that
    /// becomes running. Default nodes are in it (LYD_DEFAULT). It lets a policy find a changed
    /// node with its ancestors (key predicates of access rules) and check what the write makes
    /// of configuration it depends on (NACM validates the new /nacm here, so that a bad one is
    /// refused like an invalid edit). Read only, valid during the call.
    virtual void checkWrite(const ChangeSet& changes, const lyd_node* result) const = 0;
};

/// JournalHook (declared in datastore.hpp): a feature's rows to persist in the same SQLite
/// transaction as a change set (its notification replay log, its commit history): exactly as
/// durable as the change. Called for every non-empty change set of running and startup, with its
/// commit id set, under the store's exclusive lock, before the change is visible: must be quick
/// and must not call the Store. Throwing refuses the write (memory and disk unchanged).
/// One persisted journal row.
struct JournalRow {
    std::uint64_t commitId;
    std::string data;
};

} // namespace ncstore::ds

namespace ncstore::ds {

/// What a verifier may look at besides the change set: running as the write would leave it.
class Verification {
public:
    virtual ~Verification() = default;
    /// Running as the write would leave it (the whole tree, any top-level sibling; nullptr when
    /// empty): built on the first call, from a copy of running with the write applied again, so
    /// it costs a copy of running, paid only when a verifier asks. Valid until the verification
    /// ends; read only. Any thread, but one at a time per tree (libyang lookups are not
    /// reentrant on one tree).
    virtual const lyd_node* after() const = 0;
};

/// Checks a write of running before it is durable (issue 37's verify phase: an application on
/// the device refuses what its hardware cannot do), registered with Store::addVerifier.
///
/// How a write with verifiers goes (datastore.hpp rule 10): its change set is built and the
/// access policy asked as for any write; if a verifier concerns() itself with it, memory is put
/// back and the store's locks are released, and the verifiers it concerns verify() it, in
/// priority order, on the writer's thread, holding no lock of the store's. One refusal and
/// nothing is written; the verifiers that accepted are told finished(0), in reverse order. When
/// all accept, the write is applied again, in one critical section as any write, only if running
/// was not written since its change set was built (so exactly the change set they verified is
/// what becomes durable) and then each is told finished(commit id); if running moved, each is
/// told finished(0) and the write starts over, at most Store::kVerifyRounds times, after which it
/// fails (OperationFailed) with nothing written. Writes that need verification run one at a time
/// (in the order they came); writes no verifier concerns do not wait for them.
class Verifier {
public:
    virtual ~Verifier() = default;
    /// Whether `changes` (a change set of running, not yet durable; commitId 0) is for this
    /// verifier. Under the store's exclusive lock, for every write of running while registered:
    /// must be quick and must not call the Store.
    virtual bool concerns(const ChangeSet& changes) const = 0;
    /// Accepts (returns) or refuses (throws Error, whose tag, message, path and app tag reach the
    /// writer unchanged; anything else becomes OperationFailed). No lock of the store is held: it
    /// may read the Store and take its time, but must not write the Store from this thread (that
    /// write would wait for this one): a write it wants is queued and made after this one.
    virtual void verify(const ChangeSet& changes, const Verification& view) = 0;
    /// The verification of `changes` ended: committed as `commitId`, or not (0: refused,
    /// failed, or started over). Once per verify() that returned or threw.
    virtual void finished(const ChangeSet& changes, std::uint64_t commitId) = 0;
};

} // namespace ncstore::ds
