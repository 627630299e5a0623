// The commit history (netconfd/changes/history) on a real store: what a row holds and that it decodes
// back, that inverting the rows of later commits gives back the exact state after any earlier
// commit (ordered-by-user order included), retention, and what a restart finds. The NETCONF side
// is in tests/e2e/test_history.py.
#include "history.hpp"

#include "canonical.hpp"
#include "edit_test_context.hpp"
#include "editcontent.hpp"
#include "faulty_vfs.hpp"

#include "ncstore/changes.hpp"
#include "ncstore/datastore.hpp"

#include "temp_store.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace ncstore::netconfd::test {
namespace {

using history::History;
using ncstore::test::canonical;

const std::string kTop =
    "<top xmlns=\"urn:ncstore:edit-test\" xmlns:nc=\"urn:ietf:params:xml:ns:netconf:base:1.0\" "
    "xmlns:yang=\"urn:ietf:params:xml:ns:yang:1\">";

const ly_ctx* context() {
    static const Context ctx = ncstore::test::editTestContext();
    return ctx.get();
}

std::string interfaces(const std::string& inner) {
    return "<interfaces xmlns=\"urn:ietf:params:xml:ns:yang:ietf-interfaces\" "
           "xmlns:ianaift=\"urn:ietf:params:xml:ns:yang:iana-if-type\" "
           "xmlns:nc=\"urn:ietf:params:xml:ns:netconf:base:1.0\">" +
           inner + "</interfaces>";
}

std::string interface(const std::string& name, const std::string& attrs = "") {
    return "<interface" + attrs + "><name>" + name + "</name><type>ianaift:ethernetCsmacd</type></interface>";
}

class HistoryTest : public ::testing::Test {
protected:
    void SetUp() override { open(); }
    void TearDown() override {
        history_.reset();
        store_.reset();
    }
    /// (Re)opens the store and the history on it, as a (re)started server does.
    void open(history::Options options = {}) {
        history_.reset();
        store_.reset();
        store_ = ncstore::test::openStore(context(), dir_);
        history_ = std::make_unique<History>(*store_, context(), options);
    }
    /// An edit of running by `who`; returns its commit id (0: nothing changed).
    std::uint64_t edit(const std::string& xml, ds::EditOptions o = {}, ds::WriteContext who = {7, "alice"}) {
        const Tree e = parseEditContent(context(), xml);
        return store_->edit(who, ds::Datastore::Running, e.get(), o).commitId;
    }
    std::string running() const {
        std::string out;
        store_->read(ds::Datastore::Running, [&](const lyd_node* t) { out = canonical(t); });
        return out;
    }
    /// A history of every kind of change (values, defaults, ordered-by-user moves, choices,
    /// presence, deletes, default-operation replace, candidate commit, copy-config, delete-config);
    /// returns each commit with running right after it.
    std::vector<std::pair<std::uint64_t, std::string>> recordVariedHistory() {
        std::vector<std::pair<std::uint64_t, std::string>> states; // (commit, running right after it)
        auto record = [&](std::uint64_t id) {
            ASSERT_NE(id, 0u);
            states.emplace_back(id, running());
        };
        ds::EditOptions replace;
        replace.defaultOperation = ds::DefaultOperation::Replace;

        record(
            edit(kTop +
                 "<name>s</name><rule><id>a</id><action>x</action></rule><rule><id>b</id></rule>"
                 "<rule><id>c</id></rule><tags>x</tags><tags>y</tags>"
                 "<item><name>i1</name><value>v</value><sub><k>1</k></sub><sub><k>2</k></sub></item></top>" +
                 interfaces(interface("eth0") + interface("eth1") + interface("eth2"))));
        // merge: a value change, a leaf that held its default, a new list entry inside an entry
        record(edit(
            kTop +
            "<name>t</name><mtu>9000</mtu><item><name>i1</name><sub><k>3</k><v>w</v></sub></item></top>"));
        // replace of a list entry: its children are compared
        record(
            edit(kTop +
                 "<item "
                 "nc:operation=\"replace\"><name>i1</name><value>b</value><sub><k>2</k></sub></item></top>"));
        // ordered-by-user: neighbours deleted, an insert first, a move, leaf-list changes
        record(edit(
            kTop +
            "<rule nc:operation=\"delete\"><id>a</id></rule><rule nc:operation=\"delete\"><id>b</id></rule>"
            "<rule yang:insert=\"first\"><id>d</id></rule><tags yang:insert=\"first\">z</tags>"
            "<tags nc:operation=\"delete\">x</tags></top>"));
        record(edit(
            kTop +
            "<rule yang:insert=\"first\"><id>c</id></rule>"
            "<rule yang:insert=\"after\" yang:key=\"[id='c']\"><id>e</id><action>y</action></rule></top>"));
        // choice, presence container, delete, remove, a leaf back to its default
        record(edit(kTop + "<tcp-port>80</tcp-port><box><size>3</size></box></top>"));
        record(edit(kTop + "<udp-port>53</udp-port><mtu nc:operation=\"remove\">1</mtu></top>" +
                    interfaces(interface("eth1", " nc:operation=\"delete\""))));
        // default-operation replace: a whole new content, rules re-ordered
        record(edit(kTop +
                        "<name>r</name><rule><id>e</id></rule><rule><id>c</id><action>q</action></rule>"
                        "<rule><id>f</id></rule><tags>y</tags><tags>z</tags><np><text>t</text></np></top>" +
                        interfaces(interface("eth0") + interface("eth3")),
                    replace));
        // a top-level container deleted alone (the row's old subtree is the change set's own copy)
        record(edit("<interfaces xmlns=\"urn:ietf:params:xml:ns:yang:ietf-interfaces\" "
                    "xmlns:nc=\"urn:ietf:params:xml:ns:netconf:base:1.0\" nc:operation=\"delete\"/>"));
        record(edit(interfaces(interface("eth0") + interface("eth3"))));
        // a commit from candidate, and a replace (copy-config)
        {
            const Tree e = parseEditContent(
                context(),
                kTop + "<rule yang:insert=\"last\"><id>e</id></rule><rule nc:operation=\"delete\"><id>f</id>"
                       "</rule><np nc:operation=\"delete\"/></top>");
            store_->edit({7, "alice"}, ds::Datastore::Candidate, e.get());
            record(store_->commit({7, "alice"}).commitId);
        }
        {
            const Tree config = parseData(
                context(), kTop + "<rule><id>g</id></rule><rule><id>c</id></rule><tags>z</tags></top>",
                LYD_XML, LYD_PARSE_ONLY | LYD_PARSE_STRICT, 0);
            record(store_->replace({7, "alice"}, ds::Datastore::Running, config.get()).commitId);
        }
        record(store_->clear({7, "alice"}, ds::Datastore::Running).commitId);
        record(edit(kTop + "<name>last</name></top>"));

        return states;
    }
    /// History::stateAfter(id) on a copy of running.
    Tree stateTreeAfter(std::uint64_t id) const {
        Tree copy;
        const std::uint64_t runningId = store_->read(ds::Datastore::Running, [&](const lyd_node* t) {
            lyd_node* dup = nullptr;
            if (t &&
                lyd_dup_siblings(t, nullptr, LYD_DUP_RECURSIVE | LYD_DUP_WITH_FLAGS, &dup) != LY_SUCCESS) {
                throw YangError("dup", context());
            }
            copy.reset(dup);
        });
        return history_->stateAfter(id, std::move(copy), runningId);
    }
    /// History::stateAfter(id) on a copy of running, as canonical text.
    std::string stateAfter(std::uint64_t id) const { return canonical(stateTreeAfter(id).get()); }
    std::vector<ds::JournalRow> rows() const {
        std::vector<ds::JournalRow> out;
        store_->readJournal(history::kJournal, 0, [&](const ds::JournalRow& r) { out.push_back(r); });
        return out;
    }

    ncstore::test::TempDir dir_;
    std::unique_ptr<ds::Store> store_;
    std::unique_ptr<History> history_;
};

TEST_F(HistoryTest, ARowHoldsWhoWhyAndOnlyWhatUndoNeeds) {
    ds::WriteContext bob{12, "bob", nullptr, "192.0.2.7"};
    bob.comment = "first \"rules\"\n";
    const auto before = std::chrono::system_clock::now();
    const std::uint64_t first =
        edit(kTop + "<name>n</name><rule><id>a</id><action>x</action></rule><rule><id>b</id></rule>"
                    "<tags>t1</tags><tags>t2</tags></top>",
             {}, bob);
    const std::uint64_t second = edit(kTop + "<name>m</name><rule nc:operation=\"delete\"><id>a</id></rule>"
                                             "<rule yang:insert=\"first\"><id>c</id></rule>"
                                             "<tags nc:operation=\"delete\">t1</tags></top>");
    const auto r = rows();
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].commitId, first);
    EXPECT_EQ(r[1].commitId, second);

    const history::Row one = history::decode(r[0].data);
    EXPECT_EQ(one.entry.session, 12u);
    EXPECT_EQ(one.entry.user, "bob");
    EXPECT_EQ(one.entry.host, "192.0.2.7");
    EXPECT_EQ(one.entry.comment, "first \"rules\"\n");
    EXPECT_EQ(one.entry.origin, ds::Origin::Edit);
    EXPECT_GE(one.entry.timeUs,
              std::chrono::duration_cast<std::chrono::microseconds>(before.time_since_epoch()).count());
    // One Create of /top: its path is all undo needs.
    ASSERT_EQ(one.undo.size(), 1u);
    EXPECT_EQ(one.undo[0].op, ds::ChangeOp::Create);
    EXPECT_EQ(one.undo[0].path, "/edit-test:top");
    EXPECT_FALSE(one.undo[0].oldValue);
    EXPECT_TRUE(one.undo[0].oldTree.empty());
    EXPECT_LT(r[0].data.size(), 130u) << "a Create costs its path, not its subtree";

    const history::Row two = history::decode(r[1].data);
    EXPECT_EQ(two.entry.user, "alice");
    EXPECT_EQ(two.entry.comment, "");
    std::vector<std::string> undo;
    for (const auto& u : two.undo) {
        std::string line = std::string(ds::toString(u.op)) + " " + u.path;
        if (u.oldValue) {
            line += " old=" + *u.oldValue;
        }
        if (u.subtree) {
            line += u.oldTree.empty() ? " old-tree" : " own-old-tree";
        }
        if (u.oldPosition) {
            line += u.oldPosition->where == ds::Position::Where::First
                        ? " was first"
                        : " was after " + u.oldPosition->anchor;
        }
        undo.push_back(line);
    }
    EXPECT_EQ(undo, (std::vector<std::string>{
                        "update /edit-test:top/name old=n",
                        "delete /edit-test:top/tags[.='t1'] old=t1 was first",
                        "delete /edit-test:top/rule[id='a'] old-tree was first",
                        "create /edit-test:top/rule[id='c']",
                    }));
    // The deleted entry is in the row's document of old subtrees, which parses back on its own,
    // with the parents.
    const Tree doc = parseData(context(), two.oldSubtrees, LYD_LYB, LYD_PARSE_ONLY | LYD_PARSE_STRICT, 0);
    EXPECT_EQ(print(doc.get(), LYD_XML, LYD_PRINT_SHRINK),
              "<top xmlns=\"urn:ncstore:edit-test\"><rule><id>a</id><action>x</action></rule></top>");
}

TEST_F(HistoryTest, EncodeDecodeRoundTripAndDamagedRows) {
    ds::ChangeSet cs;
    cs.commitId = 9;
    cs.origin = ds::Origin::Commit;
    cs.session = 3;
    cs.user = "u:1";
    cs.host = "";
    cs.comment = std::string("bytes \0\x01:9:", 10);
    const lysc_node* rule = lys_find_path(context(), nullptr, "/edit-test:top/rule", 0);
    const lysc_node* name = lys_find_path(context(), nullptr, "/edit-test:top/name", 0);
    ASSERT_TRUE(rule && name);
    ds::Change move;
    move.op = ds::ChangeOp::Move;
    move.path = "/edit-test:top/rule[id='b']";
    move.schema = rule;
    move.oldPosition = ds::Position{ds::Position::Where::After, "/edit-test:top/rule[id='a']"};
    ds::Change update;
    update.op = ds::ChangeOp::Update;
    update.path = "/edit-test:top/name";
    update.schema = name;
    update.oldValue = "";
    update.newValue = "x";
    cs.changes.push_back(std::move(move));
    cs.changes.push_back(std::move(update));
    const std::string row = history::encode(cs, 1234567);
    const history::Row back = history::decode(row);
    EXPECT_EQ(back.entry.timeUs, 1234567);
    EXPECT_EQ(back.entry.origin, ds::Origin::Commit);
    EXPECT_EQ(back.entry.session, 3u);
    EXPECT_EQ(back.entry.user, "u:1");
    EXPECT_EQ(back.entry.comment, cs.comment);
    EXPECT_EQ(back.entry.changes, 2u);
    ASSERT_EQ(back.undo.size(), 2u);
    EXPECT_EQ(back.undo[0].op, ds::ChangeOp::Move);
    ASSERT_TRUE(back.undo[0].oldPosition);
    EXPECT_EQ(back.undo[0].oldPosition->anchor, "/edit-test:top/rule[id='a']");
    EXPECT_EQ(back.undo[1].op, ds::ChangeOp::Update);
    EXPECT_EQ(back.undo[1].oldValue, std::optional<std::string>(""));
    EXPECT_EQ(history::decode(row, true).undo.size(), 0u);

    EXPECT_THROW(history::decode(row.substr(0, row.size() - 3)), std::runtime_error);
    EXPECT_THROW(history::decode(row + "x"), std::runtime_error);
    EXPECT_THROW(history::decode("\x07" + row.substr(1)), std::runtime_error) << "an unknown version";
    EXPECT_THROW(history::decode(""), std::runtime_error);
}

/// A subtree of `xml` (a document of edit-test) at `path`, without its parents, as a change
/// set carries it.
Tree subtreeOf(const std::string& xml, const std::string& path) {
    const Tree doc = parseData(context(), xml, LYD_XML, LYD_PARSE_ONLY | LYD_PARSE_STRICT, 0);
    lyd_node* node = nullptr;
    lyd_node* copy = nullptr;
    if (lyd_find_path(doc.get(), path.c_str(), 0, &node) != LY_SUCCESS ||
        lyd_dup_single(node, nullptr, LYD_DUP_RECURSIVE | LYD_DUP_WITH_FLAGS, &copy) != LY_SUCCESS) {
        throw YangError("subtree " + path, context());
    }
    return Tree{copy};
}

TEST_F(HistoryTest, OldSubtreesShareOneDocumentUnlessAnAncestorIsInItAlready) {
    // A child entry deleted, then its parent entry (what validation can produce): the parent's
    // old subtree cannot join the document that already holds it as a parent.
    const std::string top = kTop + "<item><name>i1</name><value>v</value><sub><k>1</k><v>one</v></sub>"
                                   "<sub><k>2</k></sub></item><item><name>i2</name></item></top>";
    const std::string afterChild = kTop + "<item><name>i1</name><value>v</value><sub><k>2</k></sub></item>"
                                          "<item><name>i2</name></item></top>";
    ds::ChangeSet cs;
    cs.origin = ds::Origin::Edit;
    auto deletion = [&](const std::string& path, const std::string& xml) {
        ds::Change c;
        c.op = ds::ChangeOp::Delete;
        c.path = path;
        c.schema = lys_find_path(context(), nullptr, "/edit-test:top/item", 0);
        if (path.find("/sub") != std::string::npos) {
            c.schema = lys_find_path(context(), nullptr, "/edit-test:top/item/sub", 0);
        }
        c.oldTree = subtreeOf(xml, path);
        return c;
    };
    cs.changes.push_back(deletion("/edit-test:top/item[name='i1']/sub[k='1']", top));
    cs.changes.push_back(deletion("/edit-test:top/item[name='i1']", afterChild));
    cs.changes.push_back(deletion("/edit-test:top/item[name='i2']", afterChild));
    const history::Row row = history::decode(history::encode(cs, 1));
    ASSERT_EQ(row.undo.size(), 3u);
    EXPECT_TRUE(row.undo[0].subtree && row.undo[0].oldTree.empty()) << "in the shared document";
    EXPECT_TRUE(row.undo[1].subtree && !row.undo[1].oldTree.empty()) << "a document of its own";
    EXPECT_TRUE(row.undo[2].subtree && row.undo[2].oldTree.empty()) << "in the shared document";
    EXPECT_FALSE(row.oldSubtrees.empty());

    Tree forest =
        parseData(context(), kTop + "<name>n</name></top>", LYD_XML, LYD_PARSE_ONLY | LYD_PARSE_STRICT, 0);
    history::invert(context(), forest, row);
    const Tree expected = parseData(context(), top.substr(0, top.size() - 6) + "<name>n</name></top>",
                                    LYD_XML, LYD_PARSE_ONLY | LYD_PARSE_STRICT, 0);
    EXPECT_EQ(canonical(forest.get()), canonical(expected.get()));
}

TEST_F(HistoryTest, RollingBackToAnyCommitGivesItsExactState) {
    const auto states = recordVariedHistory();
    for (const auto& [id, state] : states) {
        EXPECT_EQ(stateAfter(id), state) << "rollback to commit " << id;
    }
    // ... and the same from a restarted server's history
    open();
    for (const auto& [id, state] : states) {
        EXPECT_EQ(stateAfter(id), state) << "after a restart, rollback to commit " << id;
    }
    // The result is what a rollback writes: it validates, and writing it gives that state.
    const auto [target, expected] = states[3];
    Tree copy;
    const auto runningId = store_->read(ds::Datastore::Running, [&](const lyd_node* t) {
        lyd_node* dup = nullptr;
        ASSERT_EQ(lyd_dup_siblings(t, nullptr, LYD_DUP_RECURSIVE | LYD_DUP_WITH_FLAGS, &dup), LY_SUCCESS);
        copy.reset(dup);
    });
    const Tree result = history_->stateAfter(target, std::move(copy), runningId);
    const auto id = store_->replace({7, "alice"}, ds::Datastore::Running, result.get()).commitId;
    EXPECT_EQ(running(), expected);
    EXPECT_TRUE(history_->contains(id)) << "the rollback is a commit of its own";
}

/// A rollback as the server writes it: rollbackEdit(), applied as an edit on the state it was
/// computed from. Returns the new commit's id (0: nothing to change).
std::uint64_t rollbackTo(ds::Store& store, const History& history, std::uint64_t id) {
    const History::RollbackEdit plan = history.rollbackEdit(id);
    if (plan.edit.empty()) {
        return 0;
    }
    const Tree e = parseEditContent(context(), plan.edit);
    ds::EditOptions o;
    o.unchangedSince = plan.base;
    return store.edit({7, "alice"}, ds::Datastore::Running, e.get(), o).commitId;
}

TEST_F(HistoryTest, RollbackEditsGiveTheExactStateOfAnyCommitAndBackAgain) {
    const auto states = recordVariedHistory();
    const auto [lastId, lastState] = states.back();
    for (const auto& [id, state] : states) {
        rollbackTo(*store_, *history_, id);
        EXPECT_EQ(running(), state) << "rollback to commit " << id;
        // ... and forward again: a rollback across the rollback just made
        rollbackTo(*store_, *history_, lastId);
        EXPECT_EQ(running(), lastState) << "back to commit " << lastId << " from commit " << id;
    }
    EXPECT_EQ(rollbackTo(*store_, *history_, lastId), 0u) << "nothing to undo: no commit";
}

TEST_F(HistoryTest, ARollbackCopiesOnlyThePartOfRunningItUndoes) {
    std::string many;
    for (int i = 0; i < 300; ++i) {
        many += interface("eth" + std::to_string(i));
    }
    edit(interfaces(many) + kTop +
         "<rule><id>a</id></rule><rule><id>b</id></rule><rule><id>c</id></rule></top>");
    const std::uint64_t before = edit(kTop + "<name>n</name></top>");
    edit(interfaces(interface("eth7", " nc:operation=\"delete\"") + interface("new0")));
    edit(kTop + "<rule yang:insert=\"first\"><id>c</id></rule></top>");

    std::vector<std::string> paths;
    store_->readJournal(history::kJournal, before, [&](const ds::JournalRow& r) {
        for (const history::Undo& u : history::decode(r.data).undo) {
            paths.push_back(u.path);
        }
    });
    std::string region;
    store_->read(ds::Datastore::Running, [&](const lyd_node* t) {
        region = canonical(history::regionOf(context(), t, paths).tree.get());
    });
    // The two interfaces touched (eth7 is gone: its list's parent stays), the ordered-by-user
    // rules whole (keys only) for the move: not the 298 others.
    EXPECT_NE(region.find("new0"), std::string::npos) << region;
    EXPECT_EQ(region.find("eth8"), std::string::npos) << region;
    EXPECT_EQ(region.find("eth7"), std::string::npos) << region;
    for (const char* rule : {"rule[id='a']", "rule[id='b']", "rule[id='c']"}) {
        EXPECT_NE(region.find(rule), std::string::npos) << rule << " missing from " << region;
    }
    const std::string expected = running();
    rollbackTo(*store_, *history_, before);
    EXPECT_NE(running().find("eth7"), std::string::npos);
    EXPECT_NE(running().find("eth299"), std::string::npos) << "an interface outside the region went";
    // Undoing the only change inside a container empties the container's part in the region:
    // the container stays, with everything outside the region.
    const std::uint64_t beforeOne = edit(kTop + "<name>m</name></top>");
    edit(interfaces(interface("one")));
    rollbackTo(*store_, *history_, beforeOne);
    EXPECT_EQ(running().find("'one'"), std::string::npos) << running();
    EXPECT_NE(running().find("eth299"), std::string::npos) << "the interfaces outside the region went";
    EXPECT_EQ(running().find("new0"), std::string::npos);
    EXPECT_NE(running(), expected);
}

TEST_F(HistoryTest, ARollbackComputedBeforeAnotherWriteIsRefusedNotMixed) {
    const std::uint64_t base = edit(kTop + "<name>a</name></top>");
    edit(kTop + "<name>b</name></top>");
    const History::RollbackEdit plan = history_->rollbackEdit(base);
    ASSERT_FALSE(plan.edit.empty());
    edit(kTop + "<mtu>1400</mtu></top>"); // someone else writes meanwhile
    const std::string meanwhile = running();
    const Tree e = parseEditContent(context(), plan.edit);
    ds::EditOptions o;
    o.unchangedSince = plan.base;
    EXPECT_THROW(store_->edit({7, "alice"}, ds::Datastore::Running, e.get(), o), ds::StaleRead);
    EXPECT_EQ(running(), meanwhile) << "a stale rollback changed running";
    // Computed again, it undoes that write too: running is the state right after `base`.
    rollbackTo(*store_, *history_, base);
    EXPECT_NE(running().find("/name = a"), std::string::npos) << running();
    EXPECT_EQ(running().find("1400"), std::string::npos) << running();
}

TEST_F(HistoryTest, CompareGivesTheEditThatMakesOneStateTheOther) {
    const auto states = recordVariedHistory();
    // Every pair, both ways: running set to the first state, the comparison applied to it as an
    // edit-config (default-operation merge) must give the second, exactly (order included).
    for (const auto& [fromId, fromState] : states) {
        for (const auto& [toId, toState] : states) {
            const Tree from = stateTreeAfter(fromId);
            const Tree to = stateTreeAfter(toId);
            const std::string edit = history::editBetween(context(), from.get(), to.get());
            if (fromId == toId) {
                EXPECT_EQ(edit, "") << "commit " << fromId << " compared with itself";
                continue;
            }
            store_->replace({7, "alice"}, ds::Datastore::Running, from.get());
            ASSERT_EQ(running(), fromState);
            if (!edit.empty()) {
                const Tree e = parseEditContent(context(), edit);
                store_->edit({7, "alice"}, ds::Datastore::Running, e.get());
            }
            EXPECT_EQ(running(), toState) << "from commit " << fromId << " to " << toId << ", edit: " << edit;
        }
    }
}

TEST_F(HistoryTest, CompareNamesDeletedNodesByTheirKeysAndMarksWhatItCreates) {
    const auto first = edit(kTop + "<name>s</name><item><name>i1</name><value>v</value></item></top>" +
                            interfaces(interface("eth0")));
    edit(kTop + "<name>t</name><item nc:operation=\"delete\"><name>i1</name></item></top>" +
         interfaces(interface("eth1")));
    const Tree from = stateTreeAfter(first);
    Tree now;
    store_->read(ds::Datastore::Running, [&](const lyd_node* t) {
        lyd_node* dup = nullptr;
        ASSERT_EQ(lyd_dup_siblings(t, nullptr, LYD_DUP_RECURSIVE | LYD_DUP_WITH_FLAGS, &dup), LY_SUCCESS);
        now.reset(dup);
    });
    const std::string edit = history::editBetween(context(), from.get(), now.get());
    EXPECT_NE(edit.find("nc:operation=\"remove\"><name>i1</name></item>"), std::string::npos) << edit;
    EXPECT_EQ(edit.find("<value>v</value>"), std::string::npos) << "a delete carries only the keys: " << edit;
    EXPECT_NE(edit.find("<name>t</name>"), std::string::npos) << edit;
    EXPECT_NE(edit.find("nc:operation=\"create\"><name>eth1</name>"), std::string::npos) << edit;
    EXPECT_EQ(edit.find("eth0"), std::string::npos) << "what did not change is not in it: " << edit;
    EXPECT_EQ(edit.find("yang:operation"), std::string::npos) << "no diff annotation left: " << edit;
}

TEST_F(HistoryTest, UnknownCommitsAndRowsThatNoLongerApplyAreRefused) {
    const std::uint64_t a = edit(kTop + "<name>a</name></top>");
    const std::uint64_t b = edit(kTop + "<rule><id>x</id></rule></top>");
    try {
        stateAfter(b + 100);
        FAIL() << "an unknown commit was accepted";
    } catch (const ds::Error& e) {
        EXPECT_EQ(e.tag(), ds::ErrorTag::InvalidValue);
    }
    // running without the entry commit b created: b's Create cannot be undone
    Tree copy;
    const auto runningId = store_->read(ds::Datastore::Running, [&](const lyd_node* t) {
        lyd_node* dup = nullptr;
        ASSERT_EQ(lyd_dup_siblings(t, nullptr, LYD_DUP_RECURSIVE | LYD_DUP_WITH_FLAGS, &dup), LY_SUCCESS);
        copy.reset(dup);
    });
    lyd_node* rule = nullptr;
    ASSERT_EQ(lyd_find_path(copy.get(), "/edit-test:top/rule[id='x']", 0, &rule), LY_SUCCESS);
    lyd_free_tree(rule);
    try {
        history_->stateAfter(a, std::move(copy), runningId);
        FAIL() << "an inversion that does not apply was accepted";
    } catch (const ds::Error& e) {
        EXPECT_EQ(e.tag(), ds::ErrorTag::OperationFailed);
        EXPECT_EQ(e.path(), "/edit-test:top/rule[id='x']");
        EXPECT_NE(std::string(e.what()).find("commit " + std::to_string(b)), std::string::npos) << e.what();
    }
}

TEST_F(HistoryTest, RetentionDropsTheOldestByCountAndBytesAndSurvivesARestart) {
    open({3, 1u << 20});
    std::vector<std::uint64_t> ids;
    for (int i = 0; i < 6; ++i) {
        ds::WriteContext who{5, "carol"};
        who.comment = "c" + std::to_string(i);
        ids.push_back(edit(kTop + "<name>n" + std::to_string(i) + "</name></top>", {}, who));
    }
    auto listed = [&] {
        std::vector<std::string> out;
        for (const auto& e : history_->entries()) {
            out.push_back(std::to_string(e.id) + " " + e.user + " " + e.comment);
        }
        return out;
    };
    const std::vector<std::string> lastThree{std::to_string(ids[3]) + " carol c3",
                                             std::to_string(ids[4]) + " carol c4",
                                             std::to_string(ids[5]) + " carol c5"};
    EXPECT_EQ(listed(), lastThree);
    EXPECT_FALSE(history_->contains(ids[2]));
    EXPECT_THROW(stateAfter(ids[2]), ds::Error);
    EXPECT_NO_THROW(stateAfter(ids[3]));
    // With 3 commits kept, every commit deletes the row it pushes out, in its own transaction.
    auto journalSize = [&] { return rows().size(); };
    EXPECT_EQ(journalSize(), 3u);

    // A restart lists the same commits, with the same details.
    const auto before = history_->entries();
    open({3, 1u << 20});
    const auto after = history_->entries();
    ASSERT_EQ(after.size(), before.size());
    for (std::size_t i = 0; i < after.size(); ++i) {
        EXPECT_EQ(after[i].id, before[i].id);
        EXPECT_EQ(after[i].timeUs, before[i].timeUs);
        EXPECT_EQ(after[i].session, before[i].session);
        EXPECT_EQ(after[i].comment, before[i].comment);
        EXPECT_EQ(after[i].bytes, before[i].bytes);
        EXPECT_EQ(after[i].changes, before[i].changes);
    }

    // By bytes: a restart with a smaller budget keeps what fits (the newest always).
    const std::uint64_t one = after.back().bytes;
    open({100, 2 * one});
    EXPECT_EQ(history_->entries().size(), 2u);
    open({100, 1});
    ASSERT_EQ(history_->entries().size(), 1u);
    EXPECT_EQ(history_->entries().front().id, ids[5]);
    EXPECT_EQ(journalSize(), 1u); // trimmed at the start, before any write
}

TEST_F(HistoryTest, OldRowsLeaveTheFileInBatchesWithCommitsAndAllAtARestart) {
    // 32 commits kept: the rows pushed out go two at a time (a 16th of the limit), each batch
    // in the transaction of the commit that completes it, so the file never holds more than
    // one row beyond the listing.
    open({32, 1u << 20});
    std::vector<std::uint64_t> ids;
    std::size_t mostRows = 0;
    for (int i = 0; i < 50; ++i) {
        ids.push_back(edit(kTop + "<name>b" + std::to_string(i) + "</name></top>"));
        ASSERT_EQ(history_->entries().size(), std::min<std::size_t>(ids.size(), 32));
        const auto inFile = rows();
        mostRows = std::max(mostRows, inFile.size());
        ASSERT_LE(inFile.size(), 33u) << "after commit " << i;
        ASSERT_FALSE(inFile.empty());
        EXPECT_EQ(inFile.back().commitId, ids.back()); // the newest is durable with its commit
    }
    EXPECT_EQ(mostRows, 33u); // batches, not a delete per commit
    EXPECT_NO_THROW(stateAfter(ids[50 - 32]));
    EXPECT_THROW(stateAfter(ids[50 - 33]), ds::Error);

    open({32, 1u << 20});
    EXPECT_EQ(rows().size(), 32u);
    EXPECT_EQ(history_->entries().front().id, ids[50 - 32]);
}

TEST_F(HistoryTest, OnlyRunningIsRecorded) {
    const Tree e = parseEditContent(context(), kTop + "<name>s</name></top>");
    store_->edit({}, ds::Datastore::Startup, e.get());
    store_->edit({}, ds::Datastore::Candidate, e.get());
    EXPECT_TRUE(history_->entries().empty());
    EXPECT_TRUE(rows().empty());
    store_->copy({}, ds::Datastore::Startup, ds::Datastore::Running);
    ASSERT_EQ(history_->entries().size(), 1u);
    EXPECT_EQ(history_->entries().front().origin, ds::Origin::Copy);
    EXPECT_EQ(rows().size(), 1u);
}

/// The store's SQLite writes fail on demand (tests/datastore/faulty_vfs.hpp): installed before
/// the fixture opens the store.
class HistoryFaultTest : public HistoryTest {
protected:
    ::ncstore::test::FaultyVfs vfs_;
};

TEST_F(HistoryFaultTest, ACommitWhoseTransactionFailedLeavesTheListing) {
    const std::uint64_t a = edit(kTop + "<name>a</name></top>");
    const std::string afterA = running();
    vfs_.failWrites(1);
    EXPECT_THROW(edit(kTop + "<name>doomed</name></top>"), ds::Error);
    vfs_.heal();
    const std::uint64_t b = edit(kTop + "<name>b</name></top>");
    auto ids = [&] {
        std::vector<std::uint64_t> out;
        for (const auto& e : history_->entries()) {
            out.push_back(e.id);
        }
        return out;
    };
    // The failed commit's entry goes once a later change set is published (off the commit path).
    for (int i = 0; i < 300 && ids().size() != 2; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_EQ(ids(), (std::vector<std::uint64_t>{a, b}));
    EXPECT_EQ(rows().size(), 2u);
    EXPECT_EQ(stateAfter(a), afterA);
    // A restart lists the same.
    open();
    EXPECT_EQ(ids(), (std::vector<std::uint64_t>{a, b}));
}

} // namespace
} // namespace ncstore::netconfd::test
