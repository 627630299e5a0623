// The commit path under failure and concurrency (issue 11): one test per finding. Failures are
// injected by a SQLite VFS (faulty_vfs.hpp).
#include "faulty_vfs.hpp"
#include "syncpoint.hpp"

#include "ncstore/changes.hpp"
#include "temp_store.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

using namespace ncstore;
using namespace ncstore::ds;
using ncstore::test::dump;
using ncstore::test::edit;
using ncstore::test::interfaceNames;
using ncstore::test::interfacesXml;
using ncstore::test::parseEdit;

namespace {

const std::string kNs = "<interfaces xmlns=\"urn:ietf:params:xml:ns:yang:ietf-interfaces\" "
                        "xmlns:ianaift=\"urn:ietf:params:xml:ns:yang:iana-if-type\" "
                        "xmlns:nc=\"urn:ietf:params:xml:ns:netconf:base:1.0\">";

class CommitPathTest : public ::testing::Test {
protected:
    void SetUp() override { ctx_ = test::interfacesContext(); }
    void TearDown() override { detail::SyncPoints::clear(); }

    std::unique_ptr<Store> open(StoreOptions o = {}) {
        return test::openStore(ctx_.get(), dir_, o, o.durability);
    }

    Context ctx_;
    test::TempDir dir_;
    test::FaultyVfs vfs_; // before any store: every connection goes through it
};

TEST_F(CommitPathTest, AFailedCommitLeavesNoStalePatchForALaterRecordRewrite) {
    auto s = open();
    edit(*s, kNs + "<interface><name>a</name><type>ianaift:ethernetCsmacd</type>"
                   "<description>first</description></interface></interfaces>");
    // A leaf value change: a patch row beside the record.
    edit(*s, kNs + "<interface><name>a</name><description>old</description></interface></interfaces>");
    // Replacing the entry rewrites its record and drops its patch, in a transaction that fails.
    const std::string replace = kNs + "<interface nc:operation=\"replace\"><name>a</name>"
                                      "<type>ianaift:ethernetCsmacd</type></interface></interfaces>";
    vfs_.failWrites(1);
    EXPECT_THROW(edit(*s, replace), Error);
    ASSERT_GT(vfs_.injected(), 0);
    vfs_.heal();
    EXPECT_NE(dump(*s, Datastore::Running).find("<description>old</description>"), std::string::npos)
        << "the failed write is still in memory";
    // The same rewrite, now on a healthy disk: the patch row must go with it.
    edit(*s, replace);
    EXPECT_EQ(dump(*s, Datastore::Running).find("<description>"), std::string::npos);
    s.reset();
    s = open();
    EXPECT_EQ(dump(*s, Datastore::Running).find("<description>"), std::string::npos)
        << "an old leaf value came back after the restart";
}

TEST_F(CommitPathTest, AWriteWhoseCallerWaitsIsCommittedOnTheCallersThreadOthersByTheWriterThread) {
    // The turn to commit goes to the waiting caller of the write at the head of the queue: a
    // lone write costs no hand-off to the writer thread and back. A write nobody waits for (a
    // journal event) is committed all the same, by the writer thread.
    auto s = open();
    std::mutex mutex;
    std::condition_variable committed;
    std::vector<std::thread::id> committers;
    detail::SyncPoints::set("writer:committing", [&] {
        std::lock_guard lock(mutex);
        committers.push_back(std::this_thread::get_id());
        committed.notify_all();
    });
    edit(*s, interfacesXml("eth", 0, 1));
    std::thread other([&] { edit(*s, interfacesXml("eth", 1, 1)); });
    const auto otherId = other.get_id();
    other.join();
    s->appendJournal("log", "not waited for");
    {
        std::unique_lock lock(mutex);
        ASSERT_TRUE(
            committed.wait_for(lock, std::chrono::seconds(10), [&] { return committers.size() == 3; }));
        EXPECT_EQ(committers[0], std::this_thread::get_id());
        EXPECT_EQ(committers[1], otherId);
        EXPECT_NE(committers[2], std::this_thread::get_id());
        EXPECT_NE(committers[2], otherId);
    }
    detail::SyncPoints::clear();
    // In the file once the writer thread's transaction ended (the sync point ran before it).
    std::vector<std::string> rows;
    for (int i = 0; i < 500 && rows.empty(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(i == 0 ? 0 : 10));
        s->readJournal("log", 0, [&](const JournalRow& r) { rows.push_back(r.data); });
    }
    EXPECT_EQ(rows, std::vector<std::string>{"not waited for"});
}

TEST_F(CommitPathTest, AStatementThatFailedDoesNotFailTheNextCommits) {
    {
        auto s = open();
        edit(*s, interfacesXml("eth", 0, 200));
    }
    auto s = open();
    // Another connection writes: the store's connection must read its pages again, so the first
    // statement of the next transaction reads from disk, and that read fails.
    sqlite3* other = nullptr;
    ASSERT_EQ(sqlite3_open((dir_.path() / "ncstore.db").c_str(), &other), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(other, "INSERT INTO meta VALUES('test', 'x')", nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(other);
    bool armed = false;
    detail::SyncPoints::set("persistence:begun", [&] {
        if (!armed) {
            armed = true;
            vfs_.failReads(1);
        }
    });
    EXPECT_THROW(edit(*s, interfacesXml("new", 0, 1)), Error);
    ASSERT_GT(vfs_.injected(), 0);
    vfs_.heal();
    for (int i = 1; i < 4; ++i) {
        EXPECT_NO_THROW(edit(*s, interfacesXml("new", i, 1))) << "write " << i << " after the failed one";
    }
    s.reset();
    s = open();
    s->read(Datastore::Running, [](const lyd_node* t) {
        const auto names = interfaceNames(t);
        EXPECT_EQ(names.size(), 203u);
        EXPECT_EQ(std::count(names.begin(), names.end(), "new0"), 0);
    });
}

TEST_F(CommitPathTest, WhenMemoryCannotBeReloadedAfterAFailedCommitTheStoreStaysOutOfService) {
    auto s = open();
    edit(*s, interfacesXml("eth", 0, 1));
    detail::SyncPoints::set("store:reloading", [] { throw std::runtime_error("injected reload failure"); });
    vfs_.failWrites(1);
    EXPECT_THROW(edit(*s, interfacesXml("lost", 0, 1)), Error);
    ASSERT_GT(vfs_.injected(), 0);
    vfs_.heal();
    detail::SyncPoints::clear();
    // Memory may hold the failed write: nothing may be written on top of it, nor read from it.
    try {
        edit(*s, interfacesXml("after", 0, 1));
        FAIL() << "a write was accepted by a store whose memory does not match its file";
    } catch (const Error& e) {
        EXPECT_EQ(e.tag(), ErrorTag::OperationFailed);
        EXPECT_NE(std::string(e.what()).find("restart"), std::string::npos) << e.what();
    }
    EXPECT_THROW(dump(*s, Datastore::Running), Error);
    EXPECT_THROW(s->commit({}), Error);
    // A restart recovers what is on disk.
    s.reset();
    s = open();
    s->read(Datastore::Running,
            [](const lyd_node* t) { EXPECT_EQ(interfaceNames(t), std::vector<std::string>{"eth0"}); });
    edit(*s, interfacesXml("after", 0, 1));
}

/// Runs `fn` on a thread and waits until it returned, or `patienceMs` passed (it is then blocked,
/// as it should be when the caller holds a lock it needs); join() waits for the rest.
class Concurrent {
public:
    Concurrent(std::function<void()> fn, int patienceMs)
        : thread_([this, fn] {
              fn();
              std::lock_guard lock(mutex_);
              done_ = true;
              cv_.notify_all();
          }) {
        std::unique_lock lock(mutex_);
        cv_.wait_for(lock, std::chrono::milliseconds(patienceMs), [this] { return done_; });
    }
    ~Concurrent() { join(); }
    void join() {
        if (thread_.joinable()) {
            thread_.join();
        }
    }

private:
    std::mutex mutex_;
    std::condition_variable cv_;
    bool done_ = false;
    std::thread thread_;
};

TEST_F(CommitPathTest, ACandidateEditAcknowledgedDuringACommitIsNeverLost) {
    auto s = open();
    edit(*s, interfacesXml("eth", 0, 1));
    edit(*s, interfacesXml("cand", 0, 1), Datastore::Candidate);
    edit(*s, interfacesXml("run", 0, 1)); // running moved: commit replaces running as a whole
    std::unique_ptr<Concurrent> late;
    detail::SyncPoints::set("commit:validated", [&] {
        if (!late) {
            late = std::make_unique<Concurrent>(
                [&] { edit(*s, interfacesXml("late", 0, 1), Datastore::Candidate); }, 500);
        }
    });
    s->commit({});
    ASSERT_TRUE(late) << "the commit never reached its validation";
    late->join();
    const std::string running = dump(*s, Datastore::Running);
    const std::string candidate = dump(*s, Datastore::Candidate);
    EXPECT_NE(running.find("cand0"), std::string::npos);
    EXPECT_TRUE(running.find("late0") != std::string::npos || candidate.find("late0") != std::string::npos)
        << "an acknowledged candidate edit was lost by a concurrent commit";
}

TEST_F(CommitPathTest, NoLockIsGrantedBetweenAWritesLockCheckAndTheWrite) {
    // Session 1 writes running; right after its lock check, session 2 asks for the lock of
    // running. The lock may be granted only once the write is done: session 2 must then see it,
    // and nothing may change running while session 2 holds the lock.
    auto s = open();
    std::unique_ptr<Concurrent> locker;
    LockOutcome outcome;
    std::vector<std::string> seenByHolder;
    detail::SyncPoints::set("write:checked", [&] {
        if (!locker) {
            locker = std::make_unique<Concurrent>(
                [&] {
                    outcome = s->lock(Datastore::Running, 2);
                    s->read(Datastore::Running, [&](const lyd_node* t) { seenByHolder = interfaceNames(t); });
                },
                500);
        }
    });
    Tree e = parseEdit(ctx_.get(), interfacesXml("one", 0, 1));
    s->edit({1, "one"}, Datastore::Running, e.get());
    ASSERT_TRUE(locker);
    locker->join();
    detail::SyncPoints::clear();
    EXPECT_EQ(outcome.result, LockResult::Granted);
    EXPECT_EQ(seenByHolder, std::vector<std::string>{"one0"}) << "the lock was granted inside the write";
    Tree again = parseEdit(ctx_.get(), interfacesXml("one", 1, 1));
    EXPECT_THROW(s->edit({1, "one"}, Datastore::Running, again.get()), Error);
}

/// Holds the next batch before its transaction (on whichever thread commits it) until release().
class WriterGate {
public:
    WriterGate() {
        detail::SyncPoints::set("writer:committing", [this] {
            std::unique_lock lock(mutex_);
            held_ = true;
            changed_.notify_all();
            changed_.wait(lock, [this] { return open_; });
        });
    }
    void waitHeld() {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [this] { return held_; });
    }
    void release() {
        std::lock_guard lock(mutex_);
        open_ = true;
        changed_.notify_all();
    }

private:
    std::mutex mutex_;
    std::condition_variable changed_;
    bool held_ = false;
    bool open_ = false;
};

TEST_F(CommitPathTest, AReadReturnsOnlyDurableStateAndNeverAWriteThatThenFailed) {
    auto s = open();
    edit(*s, interfacesXml("eth", 0, 1));
    WriterGate gate;
    std::thread writer([&] { EXPECT_THROW(edit(*s, interfacesXml("doomed", 0, 1)), Error); });
    gate.waitHeld(); // the write is applied in memory, its transaction not begun
    std::vector<std::string> seen;
    std::atomic<bool> returned{false};
    Concurrent reader(
        [&] {
            s->read(Datastore::Running, [&](const lyd_node* t) { seen = interfaceNames(t); });
            returned = true;
        },
        300);
    EXPECT_FALSE(returned) << "a read returned a write that was not durable";
    vfs_.failWrites(1);
    gate.release();
    writer.join();
    reader.join();
    vfs_.heal();
    EXPECT_EQ(seen, std::vector<std::string>{"eth0"}) << "a read returned a write that failed";
}

TEST_F(CommitPathTest, ACandidateCopiedFromAWriteThatFailedDoesNotKeepIt) {
    auto s = open();
    edit(*s, interfacesXml("eth", 0, 1));
    std::unique_ptr<WriterGate> gate = std::make_unique<WriterGate>();
    std::thread writer([&] { EXPECT_THROW(edit(*s, interfacesXml("doomed", 0, 1)), Error); });
    gate->waitHeld();
    // Candidate is copied from running now, with the write that is about to fail in it.
    edit(*s, interfacesXml("cand", 0, 1), Datastore::Candidate);
    vfs_.failWrites(1);
    gate->release();
    writer.join();
    vfs_.heal();
    detail::SyncPoints::clear();
    EXPECT_EQ(dump(*s, Datastore::Candidate).find("doomed0"), std::string::npos);
    s->commit({});
    EXPECT_EQ(dump(*s, Datastore::Running).find("doomed0"), std::string::npos)
        << "a write reported as failed came back through candidate";
}

/// A flag one thread raises and another waits for (at most `ms`: false when it never came).
class Signal {
public:
    void raise() {
        std::lock_guard lock(mutex_);
        raised_ = true;
        changed_.notify_all();
    }
    bool waitFor(int ms) {
        std::unique_lock lock(mutex_);
        return changed_.wait_for(lock, std::chrono::milliseconds(ms), [this] { return raised_; });
    }

private:
    std::mutex mutex_;
    std::condition_variable changed_;
    bool raised_ = false;
};

TEST_F(CommitPathTest, LongReadsDoNotStarveAWaitingWrite) {
    // Reader 1 holds the lock (a long read); a write arrives and waits; reader 2 arrives after
    // it. Reader 2 must go after the write: with readers let in ahead of a waiting writer,
    // overlapping long reads keep writes (and the group commit) out for good.
    auto s = open();
    edit(*s, interfacesXml("eth", 0, 1));
    Signal inRead1;
    Signal endRead1;
    Signal writerWaits;
    std::thread reader1([&] {
        s->read(Datastore::Running, [&](const lyd_node*) {
            inRead1.raise();
            endRead1.waitFor(10000);
        });
    });
    ASSERT_TRUE(inRead1.waitFor(10000));
    detail::SyncPoints::set("rwlock:writer-waiting", [&] { writerWaits.raise(); });
    std::thread writer([&] { edit(*s, interfacesXml("w", 0, 1)); });
    ASSERT_TRUE(writerWaits.waitFor(10000));
    detail::SyncPoints::clear();
    std::vector<std::string> seenByReader2;
    Concurrent reader2(
        [&] { s->read(Datastore::Running, [&](const lyd_node* t) { seenByReader2 = interfaceNames(t); }); },
        300);
    endRead1.raise();
    reader1.join();
    writer.join();
    reader2.join();
    EXPECT_EQ(seenByReader2, (std::vector<std::string>{"eth0", "w0"}))
        << "a later reader went ahead of a waiting write";
}

TEST_F(CommitPathTest, TheWriterQueueIsBoundedWithBackPressure) {
    StoreOptions o;
    o.maxQueuedWrites = 1;
    auto s = open(o);
    WriterGate gate;
    std::thread first([&] { edit(*s, interfacesXml("first", 0, 1)); });
    gate.waitHeld(); // the first write holds the only slot until it is durable
    Signal waitsForRoom;
    detail::SyncPoints::set("writer:queue-full", [&] { waitsForRoom.raise(); });
    std::thread second([&] { edit(*s, interfacesXml("second", 0, 1)); });
    EXPECT_TRUE(waitsForRoom.waitFor(10000)) << "a second write was queued beyond the bound";
    gate.release();
    first.join();
    second.join();
    EXPECT_GE(s->stats().queueFullWaits, 1u);
    s->read(Datastore::Running, [](const lyd_node* t) {
        EXPECT_EQ(interfaceNames(t), (std::vector<std::string>{"first0", "second0"}));
    });
}

TEST_F(CommitPathTest, AFailedCommitWritesNoJournalRowAndTheNextCommitSucceeds) {
    std::uint64_t before = 0;
    {
        auto s = open();
        s->addJournal("log",
                      [](const ChangeSet& cs) { return std::vector<std::string>{cs.changes.front().path}; });
        edit(*s, interfacesXml("a", 0, 1));
        before = s->read(Datastore::Running, [](const lyd_node*) {});
        vfs_.failWrites(1);
        EXPECT_THROW(edit(*s, interfacesXml("doomed", 0, 1)), Error);
        vfs_.heal();
        edit(*s, interfacesXml("b", 0, 1));
    }
    auto s = open();
    std::vector<std::string> rows;
    std::uint64_t last = 0;
    s->readJournal("log", 0, [&](const JournalRow& r) {
        EXPECT_GT(r.commitId, last);
        last = r.commitId;
        rows.push_back(r.data);
    });
    EXPECT_EQ(rows, (std::vector<std::string>{"/ietf-interfaces:interfaces",
                                              "/ietf-interfaces:interfaces/interface[name='b0']"}));
    EXPECT_GT(last, before);
    s->read(Datastore::Running, [](const lyd_node* t) {
        EXPECT_EQ(interfaceNames(t), (std::vector<std::string>{"a0", "b0"}));
    });
}

TEST_F(CommitPathTest, CandidateEditsRunningEditsAndCommitsInParallelLoseNothing) {
    // The reproduction: one session creates entries in candidate (no locks), one commits
    // in a loop, one edits running directly; after a last commit every acknowledged entry is in
    // running.
    auto s = open();
    constexpr int kEntries = 600;
    std::atomic<bool> creating{true};
    std::thread candidate([&] {
        for (int i = 0; i < kEntries; ++i) {
            edit(*s, interfacesXml("cand", i, 1), Datastore::Candidate);
        }
        creating = false;
    });
    std::thread committer([&] {
        while (creating) {
            s->commit({});
        }
    });
    std::thread direct([&] {
        for (int i = 0; creating; ++i) {
            edit(*s, interfacesXml("run", i, 1));
        }
    });
    candidate.join();
    committer.join();
    direct.join();
    s->commit({});
    s->read(Datastore::Running, [&](const lyd_node* t) {
        const auto names = interfaceNames(t);
        for (int i = 0; i < kEntries; ++i) {
            EXPECT_EQ(std::count(names.begin(), names.end(), "cand" + std::to_string(i)), 1) << i;
        }
    });
}

} // namespace
