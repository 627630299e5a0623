// The logical change sets (ncstore/changes.hpp): what each write reports, and that applying them
// in order to a copy of the datastore (a mirror, as a YANG-Push receiver keeps one) gives the
// datastore's content after every write, for edits, replace, copy, clear and commit; delivered
// in commit order, exactly once, off the commit path, and only built when someone listens.
#include "canonical.hpp"
#include "edit_test_context.hpp"
#include "syncpoint.hpp"
#include "temp_store.hpp"
#include "test_support.hpp"

#include "ncstore/changes.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

using namespace ncstore;
using namespace ncstore::ds;
using ncstore::test::canonical;
using ncstore::test::editTestContext;
using ncstore::test::interfacesXml;
using ncstore::test::parseEdit;

namespace {

const std::string kTop =
    "<top xmlns=\"urn:ncstore:edit-test\" xmlns:nc=\"urn:ietf:params:xml:ns:netconf:base:1.0\" "
    "xmlns:yang=\"urn:ietf:params:xml:ns:yang:1\">";

lyd_node* findPath(const Tree& tree, const std::string& path) {
    lyd_node* found = nullptr;
    if (!tree || lyd_find_path(tree.get(), path.c_str(), 0, &found) != LY_SUCCESS) {
        return nullptr;
    }
    return found;
}

void place(Tree& tree, lyd_node* node, const std::optional<Position>& position) {
    if (!position) {
        return;
    }
    if (position->where == Position::Where::After) {
        lyd_node* anchor = findPath(tree, position->anchor);
        if (!anchor) {
            throw std::runtime_error("no anchor " + position->anchor);
        }
        if (anchor->next != node && lyd_insert_after(anchor, node) != LY_SUCCESS) {
            throw YangError("insert after " + position->anchor, LYD_CTX(node));
        }
    } else {
        lyd_node* first = lyd_first_sibling(node);
        while (first->schema != node->schema) {
            first = first->next;
        }
        if (first != node && lyd_insert_before(first, node) != LY_SUCCESS) {
            throw YangError("insert first", LYD_CTX(node));
        }
    }
    tree.reset(lyd_first_sibling(tree.release())); // a top-level node may have moved first
}

/// Creates the node of `c` with `value` (terminals) or the content of `subtree`, at `position`.
void create(const ly_ctx* ctx, Tree& tree, const Change& c, const std::optional<std::string>& value,
            const Tree& subtree, const std::optional<Position>& position) {
    lyd_node* created = nullptr;
    lyd_node* first = nullptr;
    const bool leafList = c.schema->nodetype == LYS_LEAFLIST;
    const char* text = value && !leafList ? value->c_str() : nullptr;
    if (lyd_new_path2(tree.get(), ctx, c.path.c_str(), text, 0, LYD_ANYDATA_STRING, LYD_NEW_PATH_UPDATE,
                      &first, &created) != LY_SUCCESS) {
        throw YangError("create " + c.path, ctx);
    }
    if (!tree) {
        tree.reset(first);
    }
    tree.reset(lyd_first_sibling(tree.release())); // a new top-level node may come first
    if (!created) {
        created = findPath(tree, c.path); // an empty non-presence container was there
    }
    created->flags &= ~LYD_DEFAULT;
    if (subtree) {
        for (const lyd_node* child = lyd_child(subtree.get()); child; child = child->next) {
            if (!lysc_is_key(child->schema) &&
                lyd_dup_single(child, reinterpret_cast<lyd_node_inner*>(created),
                               LYD_DUP_RECURSIVE | LYD_DUP_WITH_FLAGS, nullptr) != LY_SUCCESS) {
                throw YangError("create below " + c.path, ctx);
            }
        }
    }
    place(tree, created, position);
}

void remove(Tree& tree, const std::string& path) {
    lyd_node* node = findPath(tree, path);
    if (!node || (node->flags & LYD_DEFAULT)) {
        throw std::runtime_error("delete of a missing node " + path);
    }
    if (node == tree.get()) {
        tree.release();
        tree.reset(node->next);
    }
    lyd_free_tree(node);
}

/// Undoes one change on `tree` (the datastore right after it), as the commit history does:
/// from the old values and old positions alone.
void invert(Tree& tree, const Change& c) {
    const ly_ctx* ctx = c.schema->module->ctx;
    switch (c.op) {
    case ChangeOp::Create:
        remove(tree, c.path);
        break;
    case ChangeOp::Update: {
        lyd_node* node = findPath(tree, c.path);
        if (!node || lyd_change_term(node, c.oldValue->c_str()) == LY_EINVAL) {
            throw std::runtime_error("undo update " + c.path);
        }
        break;
    }
    case ChangeOp::Delete:
        if (lysc_is_userordered(c.schema) && !c.oldPosition) {
            throw std::runtime_error("a deleted ordered-by-user instance without its old position: " +
                                     c.path);
        }
        create(ctx, tree, c, c.oldValue, c.oldTree, c.oldPosition);
        break;
    case ChangeOp::Move:
        if (!c.oldPosition) {
            throw std::runtime_error("a move without its old position: " + c.path);
        }
        place(tree, findPath(tree, c.path), c.oldPosition);
        break;
    case ChangeOp::Replace:
        throw std::runtime_error("no anydata in these models");
    }
}

/// Applies one change to `tree` (a receiver's copy); throws when it does not apply.
void apply(const ly_ctx* ctx, Tree& tree, const Change& c) {
    switch (c.op) {
    case ChangeOp::Create:
        create(ctx, tree, c, c.newValue, c.newTree, c.position);
        break;
    case ChangeOp::Update: {
        lyd_node* node = findPath(tree, c.path);
        if (!node || lyd_change_term(node, c.newValue->c_str()) == LY_EINVAL) {
            throw std::runtime_error("update " + c.path);
        }
        node->flags &= ~LYD_DEFAULT;
        break;
    }
    case ChangeOp::Delete:
        remove(tree, c.path);
        break;
    case ChangeOp::Move:
        place(tree, findPath(tree, c.path), c.position);
        break;
    case ChangeOp::Replace:
        throw std::runtime_error("no anydata in these models");
    }
}

/// Keeps a copy of running and startup up to date from the change sets it receives, and checks
/// that each change set, inverted in reverse order, gives back the copy from before it (the
/// commit history's undo, changes.hpp promise 2).
class Mirror : public ChangeListener {
public:
    Mirror(const ly_ctx* ctx, Store& store) : ctx_(ctx), store_(store) {
        for (Datastore ds : {Datastore::Running, Datastore::Startup}) {
            store.read(ds, [&](const lyd_node* t) { copies_[ds] = canonicalCopy(t); });
        }
        after_ = store.addListener(*this);
    }
    // A test that stops early (a failed ASSERT) leaves the store's publisher running: it must not
    // deliver to a destroyed mirror.
    ~Mirror() override { store_.removeListener(*this); }

    void changed(const ChangeSet& cs) override {
        std::lock_guard lock(mutex_);
        if (cs.commitId <= lastId_) {
            errors_.push_back("commit " + std::to_string(cs.commitId) + " after " + std::to_string(lastId_));
        }
        lastId_ = cs.commitId;
        ++received_;
        sets_.push_back(summary(cs));
        origins_.push_back(cs.origin);
        who_.push_back(std::to_string(cs.session) + " " + cs.user);
        try {
            const std::string before = canonical(copies_[cs.datastore].get());
            for (const Change& c : cs.changes) {
                apply(ctx_, copies_[cs.datastore], c);
            }
            Tree undone = canonicalCopy(copies_[cs.datastore].get());
            for (auto c = cs.changes.rbegin(); c != cs.changes.rend(); ++c) {
                invert(undone, *c);
            }
            const std::string after = canonical(undone.get());
            if (after != before) {
                errors_.push_back(std::string(toString(cs.datastore)) + " commit " +
                                  std::to_string(cs.commitId) + ": its inversion gives\n" + after +
                                  "instead of\n" + before + sets_.back());
            }
        } catch (const std::exception& e) {
            errors_.push_back(std::string(toString(cs.datastore)) + " commit " + std::to_string(cs.commitId) +
                              ": " + e.what() + "\n" + sets_.back());
        }
        changed_.notify_all();
    }
    void lost(std::uint64_t through) override {
        std::lock_guard lock(mutex_);
        lostThrough_ = through;
    }

    /// Waits until the change set of commit `id` (or a later one) arrived. Each change set is
    /// applied and inverted on whole copies (slow under a sanitizer on a busy machine): the
    /// bound only keeps a lost change set from hanging the test, and says so.
    void waitFor(std::uint64_t id) {
        std::unique_lock lock(mutex_);
        EXPECT_TRUE(changed_.wait_for(lock, std::chrono::seconds(300), [&] { return lastId_ >= id; }))
            << "commit " << id << " not delivered within 300 s (last delivered: " << lastId_ << ")";
    }
    std::string copy(Datastore ds) {
        std::lock_guard lock(mutex_);
        return canonical(copies_[ds].get());
    }

    static std::string summary(const ChangeSet& cs) {
        std::string out;
        for (const Change& c : cs.changes) {
            out += std::string(toString(c.op)) + " " + c.path;
            if (c.oldValue) {
                out += " old=" + *c.oldValue;
            }
            if (c.newValue) {
                out += " new=" + *c.newValue;
            }
            if (c.oldTree) {
                out += " old-tree";
            }
            if (c.newTree) {
                out += " new-tree";
            }
            if (c.position) {
                out +=
                    c.position->where == Position::Where::First ? " first" : " after " + c.position->anchor;
            }
            if (c.oldPosition) {
                out += c.oldPosition->where == Position::Where::First ? " was first"
                                                                      : " was after " + c.oldPosition->anchor;
            }
            out += "\n";
        }
        return out;
    }

    const ly_ctx* ctx_;
    Store& store_;
    std::uint64_t after_ = 0;
    std::mutex mutex_;
    std::condition_variable changed_;
    std::map<Datastore, Tree> copies_;
    std::uint64_t lastId_ = 0;
    std::uint64_t received_ = 0;
    std::uint64_t lostThrough_ = 0;
    std::vector<std::string> sets_;
    std::vector<Origin> origins_;
    std::vector<std::string> who_;
    std::vector<std::string> errors_;

private:
    static Tree canonicalCopy(const lyd_node* t) {
        lyd_node* copy = nullptr;
        if (t && lyd_dup_siblings(t, nullptr, LYD_DUP_RECURSIVE | LYD_DUP_WITH_FLAGS, &copy) != LY_SUCCESS) {
            throw std::runtime_error("dup");
        }
        return Tree{copy};
    }
};

class ChangesTest : public ::testing::Test {
protected:
    void SetUp() override { ctx_ = editTestContext(); }
    void TearDown() override { detail::SyncPoints::clear(); }

    std::unique_ptr<Store> open(StoreOptions o = {}) {
        o.file = dir_.path() / "ncstore.db";
        return Store::open(ctx_.get(), o);
    }

    WriteTiming edit(Store& s, const std::string& xml, Datastore ds = Datastore::Running, EditOptions o = {},
                     WriteContext who = {7, "alice"}) {
        Tree e = parseEdit(ctx_.get(), xml);
        return s.edit(who, ds, e.get(), o);
    }

    std::string now(Store& s, Datastore ds) {
        std::string out;
        s.read(ds, [&](const lyd_node* t) { out = canonical(t); });
        return out;
    }

    /// The mirror caught up with the last write and equals the store.
    void expectMirrored(Store& s, Mirror& m) {
        std::uint64_t id = 0;
        s.read(Datastore::Running, [](const lyd_node*) {});
        id = s.read(Datastore::Startup, [](const lyd_node*) {});
        m.waitFor(id);
        EXPECT_EQ(m.errors_, std::vector<std::string>{});
        EXPECT_EQ(m.copy(Datastore::Running), now(s, Datastore::Running));
        EXPECT_EQ(m.copy(Datastore::Startup), now(s, Datastore::Startup));
    }

    /// The summary of the change set of the last write.
    std::string last(Store& s, Mirror& m) {
        m.waitFor(s.read(Datastore::Running, [](const lyd_node*) {}));
        std::lock_guard lock(m.mutex_);
        return m.sets_.empty() ? "" : m.sets_.back();
    }

    Context ctx_;
    test::TempDir dir_;
};

TEST_F(ChangesTest, EachEditOperationReportsWhatChanged) {
    auto s = open();
    Mirror m(ctx_.get(), *s);

    edit(*s, kTop + "<name>s</name></top>");
    EXPECT_EQ(last(*s, m), "create /edit-test:top new-tree\n");
    edit(*s,
         kTop +
             "<name nc:operation=\"delete\"/><item><name>i1</name><value>a</value><sub><k>1</k></sub></item>"
             "<name>t</name></top>");
    // in schema order, as libyang parsed the edit
    EXPECT_EQ(last(*s, m), "delete /edit-test:top/name old=s\n"
                           "create /edit-test:top/name new=t\n"
                           "create /edit-test:top/item[name='i1'] new-tree\n");
    {
        std::lock_guard lock(m.mutex_);
        EXPECT_EQ(m.who_.back(), "7 alice");
        EXPECT_EQ(m.origins_.back(), Origin::Edit);
    }
    expectMirrored(*s, m);

    // merge: a value change, and a leaf that held only its default
    edit(*s, kTop + "<name>u</name><mtu>9000</mtu></top>");
    EXPECT_EQ(last(*s, m), "update /edit-test:top/name old=t new=u\ncreate /edit-test:top/mtu new=9000\n");

    // replace of a list entry: its children are compared
    edit(
        *s,
        kTop +
            "<item nc:operation=\"replace\"><name>i1</name><value>b</value><sub><k>2</k></sub></item></top>");
    EXPECT_EQ(last(*s, m), "update /edit-test:top/item[name='i1']/value old=a new=b\n"
                           "create /edit-test:top/item[name='i1']/sub[k='2'] new-tree\n"
                           "delete /edit-test:top/item[name='i1']/sub[k='1'] old-tree\n");
    expectMirrored(*s, m);

    // ordered-by-user: insert first / after, then move
    edit(*s, kTop + "<rule><id>a</id></rule><rule><id>b</id></rule></top>");
    edit(*s, kTop + "<rule yang:insert=\"first\"><id>c</id></rule></top>");
    EXPECT_EQ(last(*s, m), "create /edit-test:top/rule[id='c'] new-tree first\n");
    edit(*s, kTop + "<rule yang:insert=\"after\" yang:key=\"[id='b']\"><id>c</id></rule></top>");
    EXPECT_EQ(last(*s, m), "move /edit-test:top/rule[id='c'] after /edit-test:top/rule[id='b'] was first\n");
    edit(*s, kTop + "<tags>x</tags><tags>y</tags><tags yang:insert=\"first\">z</tags></top>");
    expectMirrored(*s, m);

    // choice: a node of the other case removes the current one
    edit(*s, kTop + "<tcp-port>80</tcp-port></top>");
    edit(*s, kTop + "<udp-port>53</udp-port></top>");
    EXPECT_EQ(last(*s, m), "delete /edit-test:top/tcp-port old=80\ncreate /edit-test:top/udp-port new=53\n");

    // presence container, delete, remove, and a leaf back to its default
    edit(*s, kTop + "<box><size>3</size></box></top>");
    edit(*s, kTop + "<box nc:operation=\"delete\"/><mtu nc:operation=\"remove\">1</mtu>"
                    "<item nc:operation=\"remove\"><name>nothing</name></item></top>");
    EXPECT_EQ(last(*s, m), "delete /edit-test:top/mtu old=9000\ndelete /edit-test:top/box old-tree\n");
    expectMirrored(*s, m);

    // default-operation replace: whatever the edit does not name goes
    EditOptions replace;
    replace.defaultOperation = DefaultOperation::Replace;
    edit(*s, kTop + "<name>only</name></top>", Datastore::Running, replace);
    expectMirrored(*s, m);
    edit(*s, interfacesXml("eth", 0, 3));
    edit(*s, interfacesXml("eth", 1, 1, "delete"));
    EXPECT_EQ(last(*s, m), "delete /ietf-interfaces:interfaces/interface[name='eth1'] old-tree\n");
    expectMirrored(*s, m);
}

TEST_F(ChangesTest, OrderedByUserChangesCarryTheirOldPositionAndInvertExactly) {
    auto s = open();
    Mirror m(ctx_.get(), *s);
    edit(*s,
         kTop + "<rule><id>a</id></rule><rule><id>b</id></rule><rule><id>c</id></rule><rule><id>d</id></rule>"
                "<rule><id>e</id></rule><tags>t1</tags><tags>t2</tags><tags>t3</tags></top>");
    const std::string r = "/edit-test:top/rule";

    // edit: deleting two neighbours, each where it stands just before its deletion
    edit(*s, kTop + "<rule nc:operation=\"delete\"><id>b</id></rule><rule nc:operation=\"delete\"><id>c</id>"
                    "</rule></top>");
    EXPECT_EQ(last(*s, m), "delete " + r + "[id='b'] old-tree was after " + r + "[id='a']\n" + "delete " + r +
                               "[id='c'] old-tree was after " + r + "[id='a']\n");
    // edit: a move to the front, and a leaf-list instance deleted from the middle
    edit(*s,
         kTop + "<rule yang:insert=\"first\"><id>e</id></rule><tags nc:operation=\"delete\">t2</tags></top>");
    // (in schema order, as libyang parsed the edit)
    EXPECT_EQ(last(*s, m), "delete /edit-test:top/tags[.='t2'] old=t2 was after /edit-test:top/tags[.='t1']\n"
                           "move " +
                               r + "[id='e'] first was after " + r + "[id='d']\n");
    expectMirrored(*s, m);

    // replace: deletions of neighbours, a re-order and creations in one net difference
    Tree config = parseData(ctx_.get(),
                            kTop + "<rule><id>x</id></rule><rule><id>d</id></rule><rule><id>a</id></rule>"
                                   "<tags>t3</tags><tags>t0</tags></top>",
                            LYD_XML, LYD_PARSE_ONLY | LYD_PARSE_STRICT, 0);
    s->replace({}, Datastore::Running, config.get());
    EXPECT_EQ(last(*s, m), "delete /edit-test:top/tags[.='t1'] old=t1 was first\n"
                           "delete " +
                               r +
                               "[id='e'] old-tree was first\n"
                               "create /edit-test:top/tags[.='t0'] new=t0 after /edit-test:top/tags[.='t3']\n"
                               "create " +
                               r +
                               "[id='x'] new-tree first\n"
                               "move " +
                               r + "[id='d'] after " + r + "[id='x'] was after " + r + "[id='a']\n");
    expectMirrored(*s, m);

    // commit: the candidate's moves and deletions, compared whole
    edit(*s,
         kTop + "<rule yang:insert=\"last\"><id>x</id></rule><rule nc:operation=\"delete\"><id>d</id></rule>"
                "</top>",
         Datastore::Candidate);
    s->commit({});
    expectMirrored(*s, m);
    EXPECT_EQ(now(*s, Datastore::Running).find("rule[id='d']"), std::string::npos);
}

TEST_F(ChangesTest, TheCommentAndCommitIdOfAWriteReachItsChangeSet) {
    auto s = open();
    std::vector<std::string> comments;
    std::vector<std::uint64_t> ids;
    s->addJournal("test", [&](const ChangeSet& cs) {
        comments.push_back(cs.comment);
        ids.push_back(cs.commitId);
        return std::vector<std::string>{};
    });
    WriteContext who{7, "alice"};
    who.comment = "maintenance window 42";
    const WriteTiming first = edit(*s, kTop + "<name>a</name></top>", Datastore::Running, {}, who);
    EXPECT_EQ(edit(*s, kTop + "<name>b</name></top>", Datastore::Candidate, {}, who).commitId, 0u);
    EXPECT_EQ(edit(*s, kTop + "<name>a</name></top>", Datastore::Running, {}, who).commitId, 0u); // no change
    who.comment = "from candidate";
    const WriteTiming second = s->commit(who);
    s->clear({}, Datastore::Startup); // empty already: no change set, no journal call
    EXPECT_EQ(comments, (std::vector<std::string>{"maintenance window 42", "from candidate"}));
    EXPECT_EQ(ids, (std::vector<std::uint64_t>{first.commitId, second.commitId}));
    EXPECT_GT(second.commitId, first.commitId);
    EXPECT_GT(first.commitId, 0u);
}

TEST_F(ChangesTest, ReplaceCopyClearAndCommitReportTheNetDifference) {
    auto s = open();
    edit(*s, interfacesXml("eth", 0, 5) + kTop +
                 "<name>t</name><rule><id>a</id></rule><rule><id>b</id></rule>"
                 "<item><name>i1</name><value>v</value></item></top>");
    Mirror m(ctx_.get(), *s);

    // copy-config running -> startup: everything is created in startup
    s->copy({3, "bob"}, Datastore::Running, Datastore::Startup);
    expectMirrored(*s, m);
    {
        std::lock_guard lock(m.mutex_);
        EXPECT_EQ(m.origins_.back(), Origin::Copy);
        EXPECT_EQ(m.who_.back(), "3 bob");
    }

    // replace: one entry changed, one gone, one new, the rules reordered
    std::string entries = "<interfaces xmlns=\"urn:ietf:params:xml:ns:yang:ietf-interfaces\" "
                          "xmlns:ianaift=\"urn:ietf:params:xml:ns:yang:iana-if-type\">";
    for (const char* name : {"eth0", "eth1", "new0", "eth3", "eth4"}) {
        entries += std::string("<interface><name>") + name + "</name><type>ianaift:ethernetCsmacd</type>" +
                   "<enabled>" + (std::string(name) == "eth1" ? "false" : "true") + "</enabled>" +
                   "</interface>";
    }
    entries += "</interfaces>";
    Tree config = parseData(ctx_.get(),
                            entries + kTop +
                                "<name>t</name><rule><id>b</id></rule><rule><id>a</id></rule>"
                                "<item><name>i1</name><value>w</value></item></top>",
                            LYD_XML, LYD_PARSE_ONLY | LYD_PARSE_STRICT, 0);
    s->replace({}, Datastore::Running, config.get());
    const std::string replaced = last(*s, m);
    EXPECT_EQ(replaced,
              "update /edit-test:top/item[name='i1']/value old=v new=w\n"
              "move /edit-test:top/rule[id='b'] first was after /edit-test:top/rule[id='a']\n"
              "delete /ietf-interfaces:interfaces/interface[name='eth2'] old-tree\n"
              "update /ietf-interfaces:interfaces/interface[name='eth1']/enabled old=true new=false\n"
              "create /ietf-interfaces:interfaces/interface[name='new0'] new-tree\n")
        << replaced;
    expectMirrored(*s, m);

    // commit, incremental (running did not move): only what the candidate edits touched
    edit(*s, interfacesXml("eth", 0, 1, "delete"), Datastore::Candidate);
    edit(*s, interfacesXml("cand", 0, 2), Datastore::Candidate);
    edit(*s,
         kTop +
             "<item><name>i1</name><value>x</value></item><rule yang:insert=\"last\"><id>b</id></rule></top>",
         Datastore::Candidate);
    edit(*s, interfacesXml("cand", 1, 1, "delete"), Datastore::Candidate);
    s->commit({});
    EXPECT_EQ(last(*s, m), "delete /ietf-interfaces:interfaces/interface[name='eth0'] old-tree\n"
                           "create /ietf-interfaces:interfaces/interface[name='cand0'] new-tree\n"
                           "move /edit-test:top/rule[id='a'] first was after /edit-test:top/rule[id='b']\n"
                           "update /edit-test:top/item[name='i1']/value old=w new=x\n");
    expectMirrored(*s, m);

    // commit after running moved: the whole candidate is compared
    edit(*s, interfacesXml("late", 0, 1), Datastore::Candidate);
    edit(*s, interfacesXml("run", 0, 1));
    s->commit({});
    EXPECT_EQ(last(*s, m), "delete /ietf-interfaces:interfaces/interface[name='run0'] old-tree\n"
                           "create /ietf-interfaces:interfaces/interface[name='late0'] new-tree\n");
    expectMirrored(*s, m);

    // delete-config of startup
    s->clear({}, Datastore::Startup);
    expectMirrored(*s, m);
    std::lock_guard lock(m.mutex_);
    EXPECT_EQ(m.origins_.back(), Origin::Clear);
}

TEST_F(ChangesTest, ConcurrentWritersAreDeliveredInCommitOrderExactlyOnce) {
    auto s = open();
    Mirror m(ctx_.get(), *s);
    constexpr int kThreads = 8;
    constexpr int kEach = 40;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < kEach; ++i) {
                edit(*s, interfacesXml("t" + std::to_string(t) + "-", i, 1));
                if (i % 10 == 9) {
                    edit(*s, interfacesXml("t" + std::to_string(t) + "-", i - 5, 1, "delete"));
                }
            }
        });
    }
    for (auto& th : threads) {
        th.join();
    }
    expectMirrored(*s, m);
    std::lock_guard lock(m.mutex_);
    EXPECT_EQ(m.received_, static_cast<std::uint64_t>(kThreads * (kEach + kEach / 10)));
    EXPECT_LT(s->stats().transactions, s->stats().writes) << "no group commit happened";
}

TEST_F(ChangesTest, CommitIdsIncreaseAcrossRestarts) {
    std::uint64_t before = 0;
    {
        auto s = open();
        edit(*s, interfacesXml("eth", 0, 1));
        edit(*s, interfacesXml("eth", 1, 1));
        before = s->read(Datastore::Running, [](const lyd_node*) {});
        EXPECT_GE(before, 2u);
    }
    auto s = open();
    EXPECT_EQ(s->read(Datastore::Running, [](const lyd_node*) {}), before);
    Mirror m(ctx_.get(), *s);
    EXPECT_EQ(m.after_, before);
    edit(*s, interfacesXml("eth", 2, 1));
    m.waitFor(before + 1);
    std::lock_guard lock(m.mutex_);
    EXPECT_EQ(m.lastId_, before + 1);
}

TEST_F(ChangesTest, NoListenerNoChangeSetIsBuilt) {
    auto s = open();
    int built = 0;
    detail::SyncPoints::set("changes:building", [&] { ++built; });
    edit(*s, interfacesXml("eth", 0, 3));
    s->copy({}, Datastore::Running, Datastore::Startup);
    edit(*s, interfacesXml("cand", 0, 1), Datastore::Candidate);
    s->commit({});
    EXPECT_EQ(built, 0);
    Mirror m(ctx_.get(), *s);
    edit(*s, interfacesXml("eth", 3, 1));
    EXPECT_EQ(built, 1);
    s->removeListener(m);
    edit(*s, interfacesXml("eth", 4, 1));
    EXPECT_EQ(built, 1);
}

std::vector<JournalRow> journal(const Store& s, const std::string& name, std::uint64_t after = 0) {
    std::vector<JournalRow> rows;
    s.readJournal(name, after, [&](const JournalRow& r) { rows.push_back(r); });
    return rows;
}

TEST_F(ChangesTest, JournalRowsArePersistedWithTheirWriteReadBackAndTrimmed) {
    std::uint64_t first = 0;
    {
        auto s = open();
        s->addJournal("history", [](const ChangeSet& cs) {
            std::vector<std::string> rows;
            for (const Change& c : cs.changes) {
                rows.push_back(std::string(toString(c.op)) + " " + c.path);
            }
            return rows;
        });
        first = s->read(Datastore::Running, [](const lyd_node*) {}) + 1;
        edit(*s, interfacesXml("eth", 0, 2));
        edit(*s, interfacesXml("eth", 0, 1, "delete"));
        edit(*s, interfacesXml("cand", 0, 1), Datastore::Candidate); // not persisted: no rows
        s->commit({});
        s->copy({}, Datastore::Running, Datastore::Startup);
        EditOptions testOnly;
        testOnly.testOption = TestOption::TestOnly;
        edit(*s, interfacesXml("never", 0, 1), Datastore::Running, testOnly);
    }
    auto s = open(); // the rows are on disk, with the commit ids of their writes
    std::vector<std::pair<std::uint64_t, std::string>> rows;
    for (const auto& r : journal(*s, "history")) {
        rows.emplace_back(r.commitId - first, r.data);
    }
    EXPECT_EQ(rows, (std::vector<std::pair<std::uint64_t, std::string>>{
                        {0, "create /ietf-interfaces:interfaces"},
                        {1, "delete /ietf-interfaces:interfaces/interface[name='eth0']"},
                        {2, "create /ietf-interfaces:interfaces/interface[name='cand0']"}, // the commit
                        {3, "create /ietf-interfaces:interfaces"},                         // startup
                    }));
    EXPECT_TRUE(journal(*s, "other").empty());
    EXPECT_EQ(journal(*s, "history", first).size(), 3u);
    s->trimJournal("history", first + 1);
    const auto kept = journal(*s, "history");
    ASSERT_EQ(kept.size(), 2u);
    EXPECT_EQ(kept.front().commitId, first + 2);
}

TEST_F(ChangesTest, AppendedEventsAndHookRowsReachListenersInCommitOrder) {
    struct Recorder : ChangeListener {
        std::mutex mutex;
        std::condition_variable cv;
        std::vector<std::tuple<std::uint64_t, Origin, std::string, std::string>>
            seen; // id, origin, host, rows
        void changed(const ChangeSet& cs) override {
            std::string rows;
            for (const auto& [name, row] : cs.journal) {
                rows += name + ":" + row + ";";
            }
            std::lock_guard lock(mutex);
            seen.emplace_back(cs.commitId, cs.origin, cs.host, rows);
            cv.notify_all();
        }
        void lost(std::uint64_t) override {}
    } recorder;
    std::uint64_t after = 0;
    {
        auto s = open();
        s->addJournal("log", [](const ChangeSet& cs) { return std::vector<std::string>{cs.user}; });
        after = s->addListener(recorder);
        WriteContext who{7, "alice", nullptr, "192.0.2.1"};
        const std::uint64_t e1 = s->appendJournal("log", "started");
        Tree e = test::parseEdit(ctx_.get(), interfacesXml("eth", 0, 1));
        s->edit(who, Datastore::Running, e.get());
        const std::uint64_t e2 = s->appendJournal("log", "ended");
        EXPECT_EQ(e1, after + 1);
        EXPECT_EQ(e2, after + 3);
        std::unique_lock lock(recorder.mutex);
        ASSERT_TRUE(
            recorder.cv.wait_for(lock, std::chrono::seconds(10), [&] { return recorder.seen.size() == 3; }));
        EXPECT_EQ(recorder.seen[0],
                  std::make_tuple(after + 1, Origin::Event, std::string(), std::string("log:started;")));
        EXPECT_EQ(recorder.seen[1], std::make_tuple(after + 2, Origin::Edit, std::string("192.0.2.1"),
                                                    std::string("log:alice;")));
        EXPECT_EQ(recorder.seen[2],
                  std::make_tuple(after + 3, Origin::Event, std::string(), std::string("log:ended;")));
        lock.unlock();
        s->removeListener(recorder);
    }
    // Durable with their commit ids, in order, beside the hook's row.
    auto s = open();
    std::vector<std::pair<std::uint64_t, std::string>> rows;
    for (const auto& r : journal(*s, "log", after)) {
        rows.emplace_back(r.commitId - after, r.data);
    }
    EXPECT_EQ(rows, (std::vector<std::pair<std::uint64_t, std::string>>{
                        {1, "started"}, {2, "alice"}, {3, "ended"}}));
}

TEST_F(ChangesTest, AnAppendedEventWaitsForNoReaderAndQueuesNoReaderBehindIt) {
    // A session's start record used to take the exclusive tree lock: behind a long read it
    // waited, and the fair lock then held every later reader behind it (issue 39).
    auto s = open();
    s->addJournal("log", [](const ChangeSet&) { return std::vector<std::string>{}; });
    std::promise<void> inside, appended, laterRead;
    auto appendedDone = appended.get_future();
    auto laterReadDone = laterRead.get_future();
    bool appendedWhileReading = false;
    bool laterReadWhileReading = false;
    std::thread longRead([&] {
        s->read(Datastore::Running, [&](const lyd_node*) {
            inside.set_value();
            appendedWhileReading =
                appendedDone.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
            laterReadWhileReading =
                laterReadDone.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
        });
    });
    inside.get_future().wait();
    std::uint64_t id = 0;
    std::thread append([&] {
        id = s->appendJournal("log", "started");
        appended.set_value();
        s->read(Datastore::Running, [](const lyd_node*) {});
        laterRead.set_value();
    });
    longRead.join();
    append.join();
    EXPECT_TRUE(appendedWhileReading) << "the append waited for the reader";
    EXPECT_TRUE(laterReadWhileReading) << "a reader after the append waited for the first";
    EXPECT_EQ(journal(*s, "log").size(), 1u);
    EXPECT_EQ(journal(*s, "log").back().commitId, id);
}

TEST_F(ChangesTest, CommitIdsGoOnAfterAReopenWhateverTheJournalsHoldOrLost) {
    // The last commit id is read back from the journal's newest row when the commits carried
    // rows, and from the meta row otherwise (no journal, or one trimmed empty): a reopened store
    // never gives a commit id twice.
    std::uint64_t last = 0;
    auto expectAbove = [&](Store& s, const std::string& name) {
        const std::uint64_t id = edit(s, interfacesXml(name, 0, 1)).commitId;
        EXPECT_GT(id, last) << name;
        last = id;
    };
    {
        auto s = open();
        expectAbove(*s, "plain"); // no journal: the meta row
    }
    {
        auto s = open();
        expectAbove(*s, "after-plain");
        s->addJournal("log", [](const ChangeSet& cs) { return std::vector<std::string>{cs.user}; });
        expectAbove(*s, "logged-a");
        expectAbove(*s, "logged-b"); // the journal's rows tell
    }
    {
        auto s = open();
        expectAbove(*s, "after-logged");
        s->addJournal("log", [](const ChangeSet& cs) { return std::vector<std::string>{cs.user}; });
        expectAbove(*s, "logged-c");
        s->trimJournal("log", last); // every row gone: the trim's transaction keeps the id
        EXPECT_TRUE(journal(*s, "log", 0).empty());
    }
    {
        auto s = open();
        expectAbove(*s, "after-trim");
        // A hook that trims everything up to the commit before it, in that commit.
        std::uint64_t previous = last;
        s->addJournal("log", [&](const ChangeSet& cs) {
            JournalWrite w{{cs.user}};
            w.trimThrough = previous;
            previous = cs.commitId;
            return w;
        });
        expectAbove(*s, "trimmed-in-commit");
        EXPECT_EQ(journal(*s, "log", 0).size(), 1u);
    }
    auto s = open();
    expectAbove(*s, "at-last");
}

TEST_F(ChangesTest, AJournalHookThatThrowsRefusesTheWrite) {
    auto s = open();
    edit(*s, interfacesXml("eth", 0, 1));
    const std::string before = now(*s, Datastore::Running);
    s->addJournal("picky", [](const ChangeSet& cs) -> std::vector<std::string> {
        for (const Change& c : cs.changes) {
            if (c.path.find("forbidden") != std::string::npos) {
                throw Error(ErrorTag::OperationFailed, "the journal cannot record " + c.path);
            }
        }
        return {"ok"};
    });
    EXPECT_THROW(edit(*s, interfacesXml("forbidden", 0, 1)), Error);
    EXPECT_EQ(now(*s, Datastore::Running), before);
    edit(*s, interfacesXml("fine", 0, 1));
    s.reset();
    s = open();
    EXPECT_EQ(journal(*s, "picky").size(), 1u);
    EXPECT_EQ(now(*s, Datastore::Running).find("forbidden"), std::string::npos);
}

/// Refuses any change of an interface named "secret*"; records who asked.
class NoSecrets : public AccessPolicy {
public:
    void checkWrite(const ChangeSet& cs, const lyd_node* result) const override {
        std::lock_guard lock(mutex_);
        // The tree the write leaves holds every node it created.
        for (const Change& c : cs.changes) {
            lyd_node* found = nullptr;
            if (c.op == ChangeOp::Create &&
                (lyd_find_path(result, c.path.c_str(), 0, &found) != LY_SUCCESS || !found)) {
                ADD_FAILURE() << c.path << " created, but not in the resulting tree";
            }
        }
        asked.push_back(std::string(toString(cs.datastore)) + " " + toString(cs.origin) + " by " + cs.user);
        for (const Change& c : cs.changes) {
            // A created subtree is checked whole, as NACM does for the nodes it creates.
            const std::string created = c.newTree ? print(c.newTree.get(), LYD_XML, 0) : "";
            if (c.path.find("secret") != std::string::npos || created.find("secret") != std::string::npos) {
                throw Error(ErrorTag::AccessDenied, "access denied to " + c.path, c.path);
            }
        }
    }
    mutable std::mutex mutex_;
    mutable std::vector<std::string> asked;
};

TEST_F(ChangesTest, AnAccessPolicyRefusalLeavesMemoryDiskJournalAndListenersUnchanged) {
    auto s = open();
    edit(*s, interfacesXml("eth", 0, 1));
    Mirror m(ctx_.get(), *s);
    s->addJournal("j", [](const ChangeSet&) { return std::vector<std::string>{"row"}; });
    NoSecrets policy;
    const WriteContext carol{5, "carol", &policy};
    const std::string running = now(*s, Datastore::Running);
    auto refused = [&](const std::function<void()>& write) {
        try {
            write();
            ADD_FAILURE() << "a write the policy refuses went through";
        } catch (const Error& e) {
            EXPECT_EQ(e.tag(), ErrorTag::AccessDenied);
        }
    };
    refused([&] { edit(*s, interfacesXml("secret", 0, 1), Datastore::Running, {}, carol); });
    EditOptions testOnly;
    testOnly.testOption = TestOption::TestOnly;
    refused([&] { edit(*s, interfacesXml("secret", 0, 1), Datastore::Running, testOnly, carol); });
    refused([&] { edit(*s, interfacesXml("secret", 0, 1), Datastore::Candidate, {}, carol); });
    EXPECT_FALSE(s->candidateModified());
    Tree config = parseData(ctx_.get(), interfacesXml("secret", 0, 1), LYD_XML, LYD_PARSE_ONLY, 0);
    refused([&] { s->replace(carol, Datastore::Startup, config.get()); });
    // A candidate change made without the policy, committed by someone subject to it.
    edit(*s, interfacesXml("secret", 1, 1), Datastore::Candidate);
    refused([&] { s->commit(carol); });
    EXPECT_TRUE(s->candidateModified()) << "the refused commit dropped candidate's changes";
    EXPECT_EQ(now(*s, Datastore::Running), running);
    EXPECT_EQ(now(*s, Datastore::Startup), "");

    edit(*s, interfacesXml("open", 0, 1), Datastore::Running, {}, carol); // allowed
    s->discardChanges({});
    expectMirrored(*s, m);
    {
        std::lock_guard lock(m.mutex_);
        EXPECT_EQ(m.received_, 1u) << "a refused write reached the listeners";
    }
    EXPECT_EQ(journal(*s, "j").size(), 1u) << "a refused write left a journal row";
    std::lock_guard lock(policy.mutex_);
    EXPECT_EQ(policy.asked, (std::vector<std::string>{"running edit by carol", "running edit by carol",
                                                      "candidate edit by carol", "startup replace by carol",
                                                      "running commit by carol", "running edit by carol"}));
    EXPECT_EQ(s->stats().failedWrites, 5u);
}

/// A listener that blocks in its callback until released.
class Blocking : public ChangeListener {
public:
    void changed(const ChangeSet& cs) override {
        std::unique_lock lock(mutex_);
        entered_ = true;
        changed_.notify_all();
        changed_.wait(lock, [this] { return open_; });
        ids_.push_back(cs.commitId);
        changed_.notify_all();
    }
    void lost(std::uint64_t through) override {
        std::lock_guard lock(mutex_);
        lost_.push_back(through);
    }
    void waitEntered() {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [this] { return entered_; });
    }
    void release() {
        std::lock_guard lock(mutex_);
        open_ = true;
        changed_.notify_all();
    }
    void waitFor(std::uint64_t id) {
        std::unique_lock lock(mutex_);
        changed_.wait_for(lock, std::chrono::seconds(20), [&] { return !ids_.empty() && ids_.back() >= id; });
    }
    std::mutex mutex_;
    std::condition_variable changed_;
    bool entered_ = false;
    bool open_ = false;
    std::vector<std::uint64_t> ids_;
    std::vector<std::uint64_t> lost_;
};

TEST_F(ChangesTest, ASlowListenerDelaysNoCommitAndLosesWhatExceedsTheBound) {
    StoreOptions o;
    o.maxUnpublished = 4;
    auto s = open(o);
    Blocking slow;
    const std::uint64_t start = s->addListener(slow);
    edit(*s, interfacesXml("eth", 0, 1));
    slow.waitEntered(); // the first change set is in the listener's hands, which block
    // Every commit returns meanwhile: 4 change sets fit the queue, 5 push the oldest out.
    for (int i = 1; i < 10; ++i) {
        edit(*s, interfacesXml("eth", i, 1));
    }
    EXPECT_EQ(s->stats().changeSetsLost, 5u);
    slow.release();
    slow.waitFor(start + 10);
    s->removeListener(slow);
    EXPECT_EQ(slow.ids_,
              (std::vector<std::uint64_t>{start + 1, start + 7, start + 8, start + 9, start + 10}));
    EXPECT_EQ(slow.lost_, std::vector<std::uint64_t>{start + 6})
        << "lost() names the last change set dropped";
}

/// Records how the publisher groups change sets.
class Batching : public Blocking {
public:
    void publishedBatch(const std::vector<std::shared_ptr<const ChangeSet>>& batch) override {
        {
            std::lock_guard lock(mutex_);
            sizes_.push_back(batch.size());
        }
        ChangeListener::publishedBatch(batch);
    }
    std::vector<std::size_t> sizes_;
};

TEST_F(ChangesTest, ChangeSetsThatWaitedForTheListenerReachItInOneCall) {
    // What lets a notification subscriber be woken once for many commits under load.
    auto s = open();
    Batching listener;
    const std::uint64_t start = s->addListener(listener);
    edit(*s, interfacesXml("eth", 0, 1));
    listener.waitEntered();
    for (int i = 1; i < 6; ++i) {
        edit(*s, interfacesXml("eth", i, 1));
    }
    listener.release();
    listener.waitFor(start + 6);
    s->removeListener(listener);
    EXPECT_EQ(listener.ids_,
              (std::vector<std::uint64_t>{start + 1, start + 2, start + 3, start + 4, start + 5, start + 6}));
    EXPECT_EQ(listener.sizes_, (std::vector<std::size_t>{1, 5}));
}

} // namespace
