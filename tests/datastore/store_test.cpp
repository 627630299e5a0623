// Behaviour of the datastore as the server relies on it: persistence across reopen, all-or-nothing
// writes, write cost that follows the change, group commit; on both backends (the SQLite file and
// a dqlite database: the contract suite of issue 17), and start-up refusal on a corrupt file.
#include "backend.hpp"
#include "support.hpp"
#include "syncpoint.hpp"
#include "temp_store.hpp"
#include "test_support.hpp"

#include "ncstore/changes.hpp"
#include "ncstore/dqlite/client.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <mutex>
#include <thread>

using namespace ncstore;
using namespace ncstore::ds;
using ncstore::test::edit;
using ncstore::test::interfaceNames;
using ncstore::test::interfacesXml;
using ncstore::test::parseEdit;

namespace {

// An interface without its mandatory type: parses, but does not validate.
const std::string kEntryWithoutType = "<interfaces xmlns=\"urn:ietf:params:xml:ns:yang:ietf-interfaces\">"
                                      "<interface><name>bad</name></interface></interfaces>";

enum class BackendKind { Sqlite, Dqlite };

const char* nameOf(BackendKind kind) {
    return kind == BackendKind::Sqlite ? "sqlite" : "dqlite";
}
std::string backendName(const ::testing::TestParamInfo<BackendKind>& info) {
    return nameOf(info.param);
}
void PrintTo(BackendKind kind, std::ostream* os) {
    *os << nameOf(kind);
}

/// A store on either backend: the SQLite file in a temporary directory, or a database of a
/// one-node dqlite cluster (a real node, in a child process) whose data lives there too.
class StoreFixture {
protected:
    void start(BackendKind kind) {
        ctx_ = test::interfacesContext();
        kind_ = kind;
        if (kind == BackendKind::Dqlite) {
            const auto nodeDir = dir_.path() / "dqlite-node";
            std::filesystem::create_directory(nodeDir);
            node_ = std::make_unique<dqlite::test::ChildNode>(1, dqlite::test::freeAddress(), nodeDir,
                                                              std::chrono::milliseconds{0});
        }
    }

    StoreOptions options(Durability d = Durability::Full) const {
        StoreOptions o;
        o.file = dir_.path() / "ncstore.db";
        o.durability = d;
        if (kind_ == BackendKind::Dqlite) {
            o.dqlite = DqliteStoreOptions{{node_->address()}, "ncstore.db", std::chrono::milliseconds{5000}};
        }
        return o;
    }

    std::unique_ptr<Store> open(Durability d = Durability::Full) {
        return Store::open(ctx_.get(), options(d));
    }

    static std::string dump(const Store& s, Datastore ds) { return test::dump(s, ds, LYD_PRINT_WD_ALL_TAG); }

    /// Running shows `expected`, and still does after the store is closed and opened again.
    void expectRunningPersisted(std::unique_ptr<Store>& s, const std::string& expected) {
        EXPECT_EQ(dump(*s, Datastore::Running), expected);
        s.reset();
        s = open();
        EXPECT_EQ(dump(*s, Datastore::Running), expected);
    }

    Context ctx_;
    test::TempDir dir_;
    BackendKind kind_ = BackendKind::Sqlite;
    std::unique_ptr<dqlite::test::ChildNode> node_;
};

/// The datastore contract: what the server relies on, on both backends (issue 17).
class StoreTest : public StoreFixture, public ::testing::TestWithParam<BackendKind> {
protected:
    void SetUp() override { start(GetParam()); }
};
INSTANTIATE_TEST_SUITE_P(Backends, StoreTest, ::testing::Values(BackendKind::Sqlite, BackendKind::Dqlite),
                         backendName);

/// What only the SQLite file has: its format versions, its corruption, its WAL.
class StoreFileTest : public StoreFixture, public ::testing::Test {
protected:
    void SetUp() override { start(BackendKind::Sqlite); }
};

/// What only the dqlite backend has: a reader beside the cluster's servers (ncstore-db).
class DqliteReaderTest : public StoreFixture, public ::testing::Test {
protected:
    void SetUp() override { start(BackendKind::Dqlite); }
};

TEST_F(DqliteReaderTest, AReaderOpensWhileAWriterHoldsTheLockReadsTheDataAndWritesNothing) {
    auto writer = open();
    edit(*writer, interfacesXml("eth", 0, 3));
    // Another writer's transaction in flight, as a server's commit is while a reader opens.
    dqlite::Connection c = dqlite::Connection::connect(node_->address());
    const auto db = c.open("ncstore.db");
    c.exec(db, "BEGIN");
    c.exec(db, "INSERT INTO meta(key, value) VALUES('in-flight', 'yes')");

    StoreOptions o = options();
    o.dqlite->timeout = std::chrono::milliseconds{1500};
    EXPECT_THROW(Store::open(ctx_.get(), o), Error) << "a writer's open waits for the lock";
    o.dqlite->reader = true;
    auto reader = Store::open(ctx_.get(), o);
    reader->read(Datastore::Running, [](const lyd_node* t) { EXPECT_EQ(interfaceNames(t).size(), 3u); });
    EXPECT_THROW(edit(*reader, interfacesXml("eth", 3, 1)), Error);
    c.exec(db, "ROLLBACK");

    reader->read(Datastore::Running, [](const lyd_node* t) { EXPECT_EQ(interfaceNames(t).size(), 3u); });
    reader.reset();
    edit(*writer, interfacesXml("eth", 3, 1));
    writer->read(Datastore::Running, [](const lyd_node* t) { EXPECT_EQ(interfaceNames(t).size(), 4u); });
}

/// What a store on a dqlite cluster of three promises its readers (rule 3): no answer from
/// memory once its node may no longer lead. Node 1 leads; the store talks to it alone, as
/// ncstored talks to its embedded node.
class DqliteLeadershipTest : public ::testing::Test {
protected:
    static constexpr std::chrono::milliseconds kLease{250};

    void SetUp() override {
        ctx_ = test::interfacesContext();
        std::vector<std::string> addresses;
        for (std::uint64_t id = 1; id <= 3; ++id) {
            const auto nodeDir = dir_.path() / ("node" + std::to_string(id));
            std::filesystem::create_directory(nodeDir);
            // 20 ms of latency: a 300 ms election timeout, so that a lost majority shows soon.
            nodes_.push_back(std::make_unique<dqlite::test::ChildNode>(
                id, dqlite::test::freeAddress(), nodeDir, std::chrono::milliseconds{20}));
            addresses.push_back(nodes_.back()->address());
        }
        dqlite::Cluster cluster(addresses);
        dqlite::Connection& leader = cluster.leader(std::chrono::seconds{5});
        for (std::uint64_t id = 2; id <= 3; ++id) {
            leader.add(id, addresses[id - 1]);
            leader.assign(id, dqlite::Role::Voter);
        }
    }

    std::unique_ptr<Store> open() {
        StoreOptions o;
        o.file = dir_.path() / "unused.db";
        o.dqlite = DqliteStoreOptions{{nodes_[0]->address()}, "ncstore.db", std::chrono::milliseconds{1500}};
        o.dqlite->readLease = kLease;
        return Store::open(ctx_.get(), o);
    }

    /// The meta row a read's leadership check rewrites ("" before the first).
    std::string leaderCheck() {
        dqlite::Connection c = dqlite::Connection::connect(nodes_[0]->address());
        const auto rows = c.query(c.open("ncstore.db"), "SELECT value FROM meta WHERE key='leader_check'");
        return rows.rows.empty() ? "" : std::get<std::string>(rows.rows.at(0).at(0));
    }

    static std::size_t count(const Store& s) {
        std::size_t n = 0;
        s.read(Datastore::Running, [&](const lyd_node* t) { n = interfaceNames(t).size(); });
        return n;
    }

    Context ctx_;
    test::TempDir dir_;
    std::vector<std::unique_ptr<dqlite::test::ChildNode>> nodes_;
};

TEST_F(DqliteLeadershipTest, AReadPastItsLeaseAsksTheMajorityAndFailsWithoutIt) {
    auto s = open();
    Tree e = parseEdit(ctx_.get(), interfacesXml("eth", 0, 3));
    s->edit({}, Datastore::Running, e.get());
    // Within the lease of the edit's commit: answered from memory, nothing written.
    EXPECT_EQ(count(*s), 3u);
    EXPECT_EQ(leaderCheck(), "");

    // Past it: the read writes a check through Raft first, and the reads within the new lease
    // write nothing more.
    std::this_thread::sleep_for(kLease * 2);
    EXPECT_EQ(count(*s), 3u);
    const std::string first = leaderCheck();
    EXPECT_NE(first, "");
    EXPECT_EQ(count(*s), 3u);
    EXPECT_EQ(leaderCheck(), first);
    std::this_thread::sleep_for(kLease * 2);
    EXPECT_EQ(count(*s), 3u);
    const std::string second = leaderCheck();
    EXPECT_NE(second, first);
    // A server told by its node that it may not lead revokes the lease: the next read checks.
    s->revokeReadLease();
    EXPECT_EQ(count(*s), 3u);
    EXPECT_NE(leaderCheck(), second);

    // The majority gone: once the lease ran out, node 1 answers no read from memory (another
    // node could lead by now and have changed the data).
    nodes_[1]->kill();
    nodes_[2]->kill();
    std::this_thread::sleep_for(kLease * 2);
    bool answered = false;
    try {
        count(*s);
        answered = true;
    } catch (const Error& refused) {
        EXPECT_EQ(refused.tag(), ErrorTag::OperationFailed);
        EXPECT_NE(std::string(refused.what()).find("leads"), std::string::npos) << refused.what();
    }
    EXPECT_FALSE(answered) << "a node without its majority answered a read past its lease";
}

TEST_P(StoreTest, EditsSurviveReopenInTheSameOrder) {
    std::string before;
    {
        auto s = open();
        edit(*s, interfacesXml("eth", 10, 3));
        edit(*s, interfacesXml("eth", 2, 2));
        before = dump(*s, Datastore::Running);
    }
    auto s = open();
    EXPECT_EQ(dump(*s, Datastore::Running), before);
    s->read(Datastore::Running, [](const lyd_node* t) {
        EXPECT_EQ(interfaceNames(t), (std::vector<std::string>{"eth10", "eth11", "eth12", "eth2", "eth3"}));
    });
}

TEST_P(StoreTest, EntriesUnderAnImplicitContainerSurviveReopen) {
    // The second open of an empty store adds the default (implicit, empty) interfaces container;
    // the entries created in it then have no shell record of their own parent.
    open().reset();
    {
        auto s = open();
        edit(*s, interfacesXml("eth", 0, 2));
    }
    auto s = open();
    s->read(Datastore::Running, [](const lyd_node* t) {
        EXPECT_EQ(interfaceNames(t), (std::vector<std::string>{"eth0", "eth1"}));
    });
}

TEST_P(StoreTest, DeletesSurviveReopen) {
    {
        auto s = open();
        edit(*s, interfacesXml("eth", 0, 5));
        edit(*s, interfacesXml("eth", 1, 2, "delete"));
    }
    auto s = open();
    s->read(Datastore::Running, [](const lyd_node* t) {
        EXPECT_EQ(interfaceNames(t), (std::vector<std::string>{"eth0", "eth3", "eth4"}));
    });
    // Deleting the top container removes every record below it.
    edit(*s, "<interfaces xmlns=\"urn:ietf:params:xml:ns:yang:ietf-interfaces\" "
             "xmlns:nc=\"urn:ietf:params:xml:ns:netconf:base:1.0\" nc:operation=\"delete\"/>");
    s.reset();
    s = open();
    EXPECT_EQ(dump(*s, Datastore::Running), "");
}

TEST_P(StoreTest, DeletingAnEntryKeepsEntriesWhosePathsItPrefixes) {
    {
        auto s = open();
        // eth1, eth1-0 and eth10: the deleted entry's path is a prefix of the others' paths.
        edit(*s, interfacesXml("eth", 1, 1) + interfacesXml("eth1-", 0, 1) + interfacesXml("eth", 10, 1));
        edit(*s, interfacesXml("eth", 1, 1, "delete"));
    }
    auto s = open();
    s->read(Datastore::Running, [](const lyd_node* t) {
        auto names = interfaceNames(t);
        std::sort(names.begin(), names.end());
        EXPECT_EQ(names, (std::vector<std::string>{"eth1-0", "eth10"}));
    });
}

TEST_P(StoreTest, FailedEditChangesNeitherMemoryNorDisk) {
    auto s = open();
    edit(*s, interfacesXml("eth", 0, 3));
    const std::string before = dump(*s, Datastore::Running);

    // create of an existing entry, after a valid part in the same edit
    try {
        edit(*s, interfacesXml("new", 0, 1, "create") + interfacesXml("eth", 1, 1, "create"));
        FAIL() << "create of an existing entry succeeded";
    } catch (const Error& e) {
        EXPECT_EQ(e.tag(), ErrorTag::DataExists);
        EXPECT_NE(e.path().find("eth1"), std::string::npos) << e.path();
    }
    EXPECT_EQ(dump(*s, Datastore::Running), before);

    // an entry without its mandatory type fails validation
    try {
        edit(*s, kEntryWithoutType);
        FAIL() << "invalid configuration accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("type"), std::string::npos) << e.what();
    }
    expectRunningPersisted(s, before);
}

TEST_P(StoreTest, ValidationErrorsCarryTheDataPath) {
    auto s = open();
    try {
        edit(*s, kEntryWithoutType);
        FAIL() << "invalid configuration accepted";
    } catch (const Error& e) {
        EXPECT_EQ(e.path().rfind("/ietf-interfaces:interfaces/interface", 0), 0u) << e.path();
        EXPECT_EQ(e.path().find("location"), std::string::npos) << e.path();
    }
}

TEST_F(StoreFileTest, MigratesAVersion1File) {
    {
        sqlite3* raw = nullptr;
        ASSERT_EQ(sqlite3_open((dir_.path() / "ncstore.db").c_str(), &raw), SQLITE_OK);
        std::unique_ptr<sqlite3, decltype(&sqlite3_close)> db(raw, sqlite3_close);
        ASSERT_EQ(sqlite3_exec(
                      db.get(),
                      "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
                      "INSERT INTO meta VALUES('schema_version', '1');"
                      "CREATE TABLE records(id INTEGER PRIMARY KEY, ds INTEGER NOT NULL, path TEXT NOT NULL,"
                      " parent TEXT NOT NULL, data BLOB NOT NULL, UNIQUE(ds, path));",
                      nullptr, nullptr, nullptr),
                  SQLITE_OK);
    }
    auto s = open();
    edit(*s, interfacesXml("eth", 0, 2));
    edit(*s, "<interfaces xmlns=\"urn:ietf:params:xml:ns:yang:ietf-interfaces\"><interface><name>eth0</name>"
             "<enabled>false</enabled></interface></interfaces>");
    s.reset();
    s = open();
    EXPECT_NE(dump(*s, Datastore::Running).find("<enabled>false</enabled>"), std::string::npos);
}

TEST_F(StoreFileTest, MigratesAVersion3FileKeepingItsJournalsInOrder) {
    {
        sqlite3* raw = nullptr;
        ASSERT_EQ(sqlite3_open((dir_.path() / "ncstore.db").c_str(), &raw), SQLITE_OK);
        std::unique_ptr<sqlite3, decltype(&sqlite3_close)> db(raw, sqlite3_close);
        ASSERT_EQ(
            sqlite3_exec(
                db.get(),
                "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
                "INSERT INTO meta VALUES('schema_version', '3');"
                "CREATE TABLE records(id INTEGER PRIMARY KEY, ds INTEGER NOT NULL, path TEXT NOT NULL,"
                " parent TEXT NOT NULL, data BLOB NOT NULL, UNIQUE(ds, path));"
                "CREATE TABLE patches(id INTEGER PRIMARY KEY, ds INTEGER NOT NULL, path TEXT NOT NULL,"
                " value TEXT NOT NULL, UNIQUE(ds, path));"
                "CREATE TABLE journal(name TEXT NOT NULL, commit_id INTEGER NOT NULL, seq INTEGER NOT NULL,"
                " data BLOB NOT NULL, PRIMARY KEY(name, commit_id, seq)) WITHOUT ROWID;"
                "INSERT INTO journal VALUES('log', 7, 1, 'b'), ('log', 7, 0, 'a'), ('other', 8, 0, 'x'),"
                " ('log', 9, 0, 'c');",
                nullptr, nullptr, nullptr),
            SQLITE_OK);
    }
    auto rows = [](const Store& s) {
        std::vector<std::pair<std::uint64_t, std::string>> out;
        s.readJournal("log", 0, [&](const JournalRow& r) { out.emplace_back(r.commitId, r.data); });
        return out;
    };
    using Rows = std::vector<std::pair<std::uint64_t, std::string>>;
    auto s = open();
    EXPECT_EQ(rows(*s), (Rows{{7, "a"}, {7, "b"}, {9, "c"}}));
    // Commit ids go on after the newest the old journal held.
    EXPECT_EQ(s->appendJournalDurable("log", "d"), 10u);
    s.reset();
    s = open();
    EXPECT_EQ(rows(*s), (Rows{{7, "a"}, {7, "b"}, {9, "c"}, {10, "d"}}));
}

TEST_P(StoreTest, TestOnlyValidatesWithoutChanging) {
    auto s = open();
    EditOptions o;
    o.testOption = TestOption::TestOnly;
    edit(*s, interfacesXml("eth", 0, 2), Datastore::Running, o);
    EXPECT_EQ(dump(*s, Datastore::Running), "");
    EXPECT_THROW(edit(*s, kEntryWithoutType, Datastore::Running, o), Error);
}

TEST_P(StoreTest, CopyReplaceAndClearArePersisted) {
    {
        auto s = open();
        edit(*s, interfacesXml("eth", 0, 3));
        s->copy({}, Datastore::Running, Datastore::Startup);
        edit(*s, interfacesXml("eth", 0, 1, "delete"));
    }
    auto s = open();
    s->read(Datastore::Startup, [](const lyd_node* t) { EXPECT_EQ(interfaceNames(t).size(), 3u); });
    s->read(Datastore::Running, [](const lyd_node* t) { EXPECT_EQ(interfaceNames(t).size(), 2u); });
    s->clear({}, Datastore::Startup);
    Tree cfg = parseData(ctx_.get(), interfacesXml("r", 0, 4), LYD_XML, LYD_PARSE_ONLY | LYD_PARSE_STRICT, 0);
    s->replace({}, Datastore::Running, cfg.get());
    s.reset();
    s = open();
    EXPECT_EQ(dump(*s, Datastore::Startup), "");
    s->read(Datastore::Running, [](const lyd_node* t) {
        EXPECT_EQ(interfaceNames(t), (std::vector<std::string>{"r0", "r1", "r2", "r3"}));
    });
}

TEST_P(StoreTest, CandidateTracksRunningUntilEditedThenCommits) {
    auto s = open();
    edit(*s, interfacesXml("eth", 0, 1));
    EXPECT_EQ(dump(*s, Datastore::Candidate), dump(*s, Datastore::Running));
    EXPECT_FALSE(s->candidateModified());
    edit(*s, interfacesXml("cand", 0, 1), Datastore::Candidate);
    EXPECT_TRUE(s->candidateModified());
    EXPECT_NE(dump(*s, Datastore::Candidate), dump(*s, Datastore::Running));
    s->discardChanges({});
    EXPECT_EQ(dump(*s, Datastore::Candidate), dump(*s, Datastore::Running));
    edit(*s, interfacesXml("cand", 0, 1), Datastore::Candidate);
    s->commit({});
    EXPECT_FALSE(s->candidateModified());
    s.reset();
    s = open();
    s->read(Datastore::Running, [](const lyd_node* t) {
        EXPECT_EQ(interfaceNames(t), (std::vector<std::string>{"eth0", "cand0"}));
    });
}

TEST_P(StoreTest, CommitWritesWhatCandidateEditsChangedAndStaysCorrectWhenRunningMoved) {
    auto s = open();
    edit(*s, interfacesXml("eth", 0, 100));
    // Several candidate edits: delete, create, leaf merge; running does not move meanwhile.
    edit(*s, interfacesXml("eth", 10, 5, "delete"), Datastore::Candidate);
    edit(*s, interfacesXml("new", 0, 2), Datastore::Candidate);
    edit(*s,
         "<interfaces xmlns=\"urn:ietf:params:xml:ns:yang:ietf-interfaces\"><interface><name>eth1</name>"
         "<enabled>false</enabled></interface></interfaces>",
         Datastore::Candidate);
    const std::string expected = dump(*s, Datastore::Candidate);
    const Stats before = s->stats();
    s->commit({});
    const Stats after = s->stats();
    EXPECT_LE(after.recordsWritten - before.recordsWritten, 3u) << "commit rewrote unchanged records";
    expectRunningPersisted(s, expected);

    // Running moves after the candidate was copied: commit still makes running = candidate.
    edit(*s, interfacesXml("cand", 0, 1), Datastore::Candidate);
    edit(*s, interfacesXml("run", 0, 1));
    const std::string candidate = dump(*s, Datastore::Candidate);
    s->commit({});
    expectRunningPersisted(s, candidate);
}

TEST_P(StoreTest, LeafMergeWritesOnlyTheTouchedRecords) {
    auto s = open();
    edit(*s, interfacesXml("eth", 0, 1000));
    const Stats before = s->stats();
    std::string merge = "<interfaces xmlns=\"urn:ietf:params:xml:ns:yang:ietf-interfaces\">";
    for (int i = 0; i < 10; ++i) {
        merge +=
            "<interface><name>eth" + std::to_string(i * 100) + "</name><enabled>false</enabled></interface>";
    }
    edit(*s, merge + "</interfaces>");
    const Stats after = s->stats();
    EXPECT_EQ(after.recordsWritten - before.recordsWritten, 10u);
    EXPECT_EQ(after.recordsDeleted - before.recordsDeleted, 0u);
}

TEST_P(StoreTest, LeafMergesSurviveReopenAndRecordRewrites) {
    const std::string ns = "<interfaces xmlns=\"urn:ietf:params:xml:ns:yang:ietf-interfaces\" "
                           "xmlns:ianaift=\"urn:ietf:params:xml:ns:yang:iana-if-type\">";
    {
        auto s = open();
        // "enabled" left to its default (true), then merged explicitly: a patch of a default leaf.
        edit(*s, ns +
                     "<interface><name>a</name><type>ianaift:ethernetCsmacd</type></interface>"
                     "<interface><name>b</name><type>ianaift:ethernetCsmacd</type></interface></interfaces>");
        edit(*s, ns + "<interface><name>a</name><enabled>false</enabled></interface></interfaces>");
        edit(*s, ns + "<interface><name>b</name><description>first</description></interface></interfaces>");
        edit(*s, ns + "<interface><name>b</name><description>second</description></interface></interfaces>");
    }
    auto s = open();
    const std::string dumped = dump(*s, Datastore::Running);
    const auto a = dumped.find("<name>a</name>");
    ASSERT_NE(a, std::string::npos) << dumped;
    EXPECT_NE(dumped.substr(a, dumped.find("</interface>", a) - a).find("<enabled>false</enabled>"),
              std::string::npos)
        << dumped;
    EXPECT_NE(dumped.find("<description>second</description>"), std::string::npos) << dumped;
    // Replacing the entry rewrites its record; the older patch must not come back.
    edit(*s, ns + "<interface xmlns:nc=\"urn:ietf:params:xml:ns:netconf:base:1.0\" nc:operation=\"replace\">"
                  "<name>b</name><type>ianaift:ethernetCsmacd</type></interface></interfaces>");
    s.reset();
    s = open();
    EXPECT_EQ(dump(*s, Datastore::Running).find("<description>"), std::string::npos);
}

TEST_P(StoreTest, ConcurrentCommitsShareTransactions) {
    constexpr int kThreads = 16;
    constexpr int kEach = 50;
    {
        auto s = open();
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t) {
            threads.emplace_back([&, t] {
                for (int i = 0; i < kEach; ++i) {
                    edit(*s, interfacesXml("t" + std::to_string(t) + "-", i, 1));
                }
            });
        }
        for (auto& th : threads) {
            th.join();
        }
        const Stats st = s->stats();
        EXPECT_EQ(st.writes, static_cast<std::uint64_t>(kThreads * kEach));
        EXPECT_LT(st.transactions, st.writes) << "no commit was shared";
    }
    auto s = open();
    s->read(Datastore::Running, [](const lyd_node* t) {
        EXPECT_EQ(interfaceNames(t).size(), static_cast<std::size_t>(kThreads * kEach));
    });
    EXPECT_EQ(s->integrityCheck(), "ok");
}

/// A context with ietf-interfaces (`interfacesFeatures`), iana-if-type, ietf-netconf with
/// `netconfFeatures`, and `more` modules (tests/datastore/yang or the IETF directory).
Context contextWith(const char** interfacesFeatures, const char** netconfFeatures,
                    const std::vector<std::string>& more = {}) {
    ly_ctx* raw = nullptr;
    if (ly_ctx_new(NCSTORE_IETF_YANG_DIR, LY_CTX_NO_YANGLIBRARY, &raw) != LY_SUCCESS) {
        throw std::runtime_error("ly_ctx_new failed");
    }
    Context ctx{raw};
    ly_ctx_set_searchdir(raw, NCSTORE_TEST_YANG_DIR);
    if (!ly_ctx_load_module(raw, "ietf-interfaces", nullptr, interfacesFeatures) ||
        !ly_ctx_load_module(raw, "iana-if-type", nullptr, nullptr) ||
        !ly_ctx_load_module(raw, "ietf-netconf", nullptr, netconfFeatures)) {
        throw YangError("cannot load the modules", raw);
    }
    for (const auto& name : more) {
        if (!ly_ctx_load_module(raw, name.c_str(), nullptr, nullptr)) {
            throw YangError("cannot load " + name, raw);
        }
    }
    return ctx;
}

TEST_P(StoreTest, OnlyASchemaChangeOfStoredDataMakesTheNextStartValidateWholeTree) {
    const char* all[] = {"*", nullptr};
    const char* fewer[] = {"writable-running", nullptr};
    int validations = 0;
    auto openWith = [&](const Context& ctx) {
        validations = 0;
        return Store::open(ctx.get(), options());
    };
    detail::SyncPoints::set("loader:validating", [&] { ++validations; });
    {
        auto s = open();
        edit(*s, interfacesXml("eth", 0, 3));
        s->copy({}, Datastore::Running, Datastore::Startup);
    }
    const Context same = contextWith(all, all);
    openWith(same).reset();
    EXPECT_EQ(validations, 0) << "the same modules";

    // Another protocol feature set, and the modules of other data (NACM, notifications).
    const Context protocol = contextWith(all, fewer, {"ietf-netconf-acm", "ietf-netconf-notifications"});
    openWith(protocol).reset();
    EXPECT_EQ(validations, 0) << "protocol features and modules without stored data";
    openWith(same).reset();
    EXPECT_EQ(validations, 0);

    // A deviation of a module with stored data: its compiled schema changed. (A feature change
    // of such a module is refused earlier: libyang's LYB needs the features it was written with.)
    const Context deviated = contextWith(all, all, {"ncstore-test-deviation"});
    openWith(deviated).reset();
    EXPECT_EQ(validations, 2) << "running and startup";
    openWith(deviated).reset();
    EXPECT_EQ(validations, 0) << "validated once, then trusted";

    // A module augmenting stored data: a mandatory leaf the stored interfaces lack.
    const Context augmented = contextWith(all, all, {"ncstore-test-augment"});
    EXPECT_THROW(openWith(augmented), Error);
    detail::SyncPoints::clear();
}

TEST_P(StoreTest, ParallelReadersSeeEveryWritersEditsInOrder) {
    // Readers run beside the writers (and the commit thread): each read sees, for every writer,
    // exactly its first k entries, since a writer's next edit starts once the last one returned.
    constexpr int kWriters = 4;
    constexpr int kReaders = 4;
    constexpr int kEach = 40;
    auto s = open(Durability::Normal);
    std::atomic<int> writersLeft{kWriters};
    std::vector<std::string> errors;
    std::mutex errorsMutex;
    std::vector<std::thread> threads;
    for (int w = 0; w < kWriters; ++w) {
        threads.emplace_back([&, w] {
            for (int i = 0; i < kEach; ++i) {
                edit(*s, interfacesXml("w" + std::to_string(w) + "-", i, 1));
            }
            --writersLeft;
        });
    }
    for (int r = 0; r < kReaders; ++r) {
        threads.emplace_back([&] {
            do {
                std::vector<std::string> names;
                s->read(Datastore::Running, [&](const lyd_node* t) { names = interfaceNames(t); });
                for (int w = 0; w < kWriters; ++w) {
                    const std::string prefix = "w" + std::to_string(w) + "-";
                    std::vector<int> seen;
                    for (const auto& n : names) {
                        if (n.rfind(prefix, 0) == 0) {
                            seen.push_back(std::stoi(n.substr(prefix.size())));
                        }
                    }
                    std::sort(seen.begin(), seen.end());
                    for (std::size_t i = 0; i < seen.size(); ++i) {
                        if (seen[i] != static_cast<int>(i)) {
                            std::lock_guard lock(errorsMutex);
                            errors.push_back("a read saw " + prefix + std::to_string(seen[i]) + " as entry " +
                                             std::to_string(i));
                            break;
                        }
                    }
                }
            } while (writersLeft > 0);
        });
    }
    for (auto& th : threads) {
        th.join();
    }
    EXPECT_TRUE(errors.empty()) << (errors.empty() ? std::string() : errors.front());
    s->read(Datastore::Running, [](const lyd_node* t) {
        EXPECT_EQ(interfaceNames(t).size(), static_cast<std::size_t>(kWriters * kEach));
    });
}

TEST_P(StoreTest, KeysAndValuesThatLookLikeSqlAreStoredAsTheyAre) {
    // Quotes, semicolons and comments in keys (record paths) and values: data, never SQL.
    const std::string name = "it's; DROP TABLE records; --";
    const std::string xml = "<interfaces xmlns=\"urn:ietf:params:xml:ns:yang:ietf-interfaces\" "
                            "xmlns:ianaift=\"urn:ietf:params:xml:ns:yang:iana-if-type\"><interface><name>" +
                            name + "</name><type>ianaift:ethernetCsmacd</type></interface></interfaces>";
    const std::string merge =
        "<interfaces xmlns=\"urn:ietf:params:xml:ns:yang:ietf-interfaces\"><interface><name>" + name +
        "</name><description>'); DELETE FROM patches; -- \u00e9</description>"
        "</interface></interfaces>";
    {
        auto s = open();
        edit(*s, xml);
        edit(*s, merge);
        edit(*s, interfacesXml("eth", 0, 2));
    }
    auto s = open();
    const std::string dumped = dump(*s, Datastore::Running);
    EXPECT_NE(dumped.find("<name>it's; DROP TABLE records; --</name>"), std::string::npos) << dumped;
    EXPECT_NE(dumped.find("<description>'); DELETE FROM patches; -- \u00e9</description>"), std::string::npos)
        << dumped;
    s->read(Datastore::Running, [](const lyd_node* t) { EXPECT_EQ(interfaceNames(t).size(), 3u); });
}

std::vector<std::pair<std::uint64_t, std::string>> journalRows(const Store& s, const std::string& name,
                                                               std::uint64_t after) {
    std::vector<std::pair<std::uint64_t, std::string>> rows;
    s.readJournal(name, after, [&](const JournalRow& r) { rows.emplace_back(r.commitId - after, r.data); });
    return rows;
}

TEST_P(StoreTest, JournalRowsAndCommitIdsSurviveReopenInCommitOrderAndTrimsToo) {
    std::uint64_t after = 0;
    {
        auto s = open();
        s->addJournal("log", [](const ChangeSet& cs) { return std::vector<std::string>{cs.user}; });
        after = s->appendJournalDurable("log", "first") - 1;
        edit(*s, interfacesXml("eth", 0, 1));
        s->appendJournalDurable("log", "second");
        EXPECT_EQ(journalRows(*s, "log", after),
                  (std::vector<std::pair<std::uint64_t, std::string>>{{1, "first"}, {2, ""}, {3, "second"}}));
        s->trimJournal("log", after + 2);
    }
    auto s = open();
    EXPECT_EQ(journalRows(*s, "log", after),
              (std::vector<std::pair<std::uint64_t, std::string>>{{3, "second"}}));
    // Commit ids go on from the last one persisted (the trim's own included).
    EXPECT_GT(s->appendJournalDurable("log", "third"), after + 3);
}

/// The backend under the store, given batches as the writer makes them: many rows of one kind
/// (which the dqlite backend sends as multi-row statements), one path written twice in a batch,
/// journal rows and trims of several change sets, and a trim that reaches rows of its own batch.
TEST_P(StoreTest, ABackendKeepsEveryRowOfABatchInOrderAndTheLastWriteOfAPath) {
    std::unique_ptr<detail::Backend> backend = detail::openBackend(options());
    const auto upsert = [](int i, const std::string& data) {
        return detail::RecordOp{detail::RecordOp::Kind::Upsert, "/m:top/e[k='" + std::to_string(i) + "']",
                                "/m:top", data};
    };
    // Two change sets in one batch: 700 records (longer than one multi-row statement), then the
    // second rewrites records 5 and 600 (600 in the same multi-row statement both times) and adds
    // 701, then writes a patch; values with a NUL, a quote and a semicolon.
    detail::RecordSet first{Datastore::Running, {}, 1};
    for (int i = 0; i < 700; ++i) {
        first.ops.push_back(upsert(i, std::string("v\0'", 3) + std::to_string(i) + ";"));
    }
    first.journal = {{"log", "a1"}, {"log", "a2"}, {"other", "o1"}};
    detail::RecordSet second{Datastore::Running,
                             {upsert(5, "rewritten"),
                              upsert(600, "again"),
                              upsert(701, "new"),
                              {detail::RecordOp::Kind::Patch, "/m:top/e[k='3']/leaf", "", "p'3"}},
                             2};
    second.journal = {{"log", "b1"}};
    backend->apply({&first, &second});

    // Then: trims of two change sets below the batch's rows (merged into one per journal).
    detail::RecordSet third{Datastore::Running, {}, 3};
    third.journal = {{"log", "c1"}};
    third.trims = {{"log", 1}};
    detail::RecordSet fourth{Datastore::Running, {}, 4};
    fourth.journal = {{"log", "d1"}, {"other", "o4"}};
    fourth.trims = {{"log", 0}, {"other", 1}};
    backend->apply({&third, &fourth});
    const auto rows = [&](const std::string& name) {
        std::vector<std::pair<std::uint64_t, std::string>> out;
        backend->readJournal(name, 0, [&](const JournalRow& r) { out.emplace_back(r.commitId, r.data); });
        return out;
    };
    EXPECT_EQ(rows("log"),
              (std::vector<std::pair<std::uint64_t, std::string>>{{2, "b1"}, {3, "c1"}, {4, "d1"}}));
    EXPECT_EQ(rows("other"), (std::vector<std::pair<std::uint64_t, std::string>>{{4, "o4"}}));
    // A trim that reaches past its own change set keeps the batch's order: the row of the change
    // set after it stays.
    detail::RecordSet fifth{Datastore::Running, {}, 5};
    fifth.journal = {{"log", "e1"}};
    fifth.trims = {{"log", 6}};
    detail::RecordSet sixth{Datastore::Running, {}, 6};
    sixth.journal = {{"log", "f1"}};
    backend->apply({&fifth, &sixth});

    backend.reset();
    backend = detail::openBackend(options());
    std::vector<std::pair<std::string, std::string>> records;
    backend->load(Datastore::Running,
                  [&](const std::string& path, const std::string& parent, const std::string& data) {
                      EXPECT_EQ(parent, "/m:top");
                      records.emplace_back(path, data);
                  });
    ASSERT_EQ(records.size(), 701u);
    for (int i = 0; i < 700; ++i) {
        EXPECT_EQ(records[i].first, "/m:top/e[k='" + std::to_string(i) + "']");
        EXPECT_EQ(records[i].second, i == 5     ? std::string("rewritten")
                                     : i == 600 ? std::string("again")
                                                : std::string("v\0'", 3) + std::to_string(i) + ";");
    }
    EXPECT_EQ(records[700], std::make_pair(std::string("/m:top/e[k='701']"), std::string("new")));
    std::vector<std::pair<std::string, std::string>> patches;
    backend->loadPatches(Datastore::Running, [&](const std::string& path, const std::string& value) {
        patches.emplace_back(path, value);
    });
    EXPECT_EQ(patches, (std::vector<std::pair<std::string, std::string>>{{"/m:top/e[k='3']/leaf", "p'3"}}));
    EXPECT_EQ(rows("log"), (std::vector<std::pair<std::uint64_t, std::string>>{{6, "f1"}}));
    EXPECT_EQ(rows("other"), (std::vector<std::pair<std::uint64_t, std::string>>{{4, "o4"}}));
    EXPECT_EQ(backend->lastCommitId(), 6u);
    EXPECT_EQ(backend->integrityCheck(), "ok");
}

TEST_P(StoreTest, ALongJournalReadsWholeAndInOrderFromAnyPoint) {
    // Three rows per commit, more rows than one page of the dqlite backend's reads (500): a page
    // ends inside a commit's rows.
    auto s = open();
    s->addJournal("three", [](const ChangeSet& cs) {
        const std::string id = std::to_string(cs.changes.size());
        return std::vector<std::string>{"a" + id, "b" + id, "c" + id};
    });
    std::uint64_t first = 0;
    for (int i = 0; i < 250; ++i) {
        edit(*s, interfacesXml("j", i, 1));
        if (i == 0) {
            s->readJournal("three", 0, [&](const JournalRow& r) { first = r.commitId; });
        }
    }
    std::vector<std::pair<std::uint64_t, std::string>> rows;
    s->readJournal("three", 0, [&](const JournalRow& r) { rows.emplace_back(r.commitId, r.data); });
    ASSERT_EQ(rows.size(), 750u);
    for (std::size_t i = 0; i < rows.size(); ++i) {
        EXPECT_EQ(rows[i].second[0], "abc"[i % 3]) << "row " << i;
        if (i > 0) {
            EXPECT_EQ(rows[i].first, rows[i - 1].first + (i % 3 == 0 ? 1 : 0)) << "row " << i;
        }
    }
    EXPECT_EQ(rows.front().first, first);
    // From the middle: the commits after it, each with its three rows.
    std::size_t after = 0;
    s->readJournal("three", first + 166, [&](const JournalRow& r) {
        EXPECT_GT(r.commitId, first + 166);
        ++after;
    });
    EXPECT_EQ(after, 3u * (250 - 167));
}

TEST_P(StoreTest, ABackupIsAStoreFileWithTheSameData) {
    std::string running;
    std::string startup;
    {
        auto s = open();
        edit(*s, interfacesXml("eth", 0, 3));
        s->copy({}, Datastore::Running, Datastore::Startup);
        edit(*s,
             "<interfaces xmlns=\"urn:ietf:params:xml:ns:yang:ietf-interfaces\"><interface><name>eth1</name>"
             "<enabled>false</enabled></interface></interfaces>");
        edit(*s, interfacesXml("eth", 2, 1, "delete"));
        s->appendJournalDurable("log", "kept");
        s->backup(dir_.path() / "copy.db");
        running = dump(*s, Datastore::Running);
        startup = dump(*s, Datastore::Startup);
        EXPECT_EQ(s->integrityCheck(), "ok");
    }
    StoreOptions o;
    o.file = dir_.path() / "copy.db";
    auto copy = Store::open(ctx_.get(), o);
    EXPECT_EQ(dump(*copy, Datastore::Running), running);
    EXPECT_EQ(dump(*copy, Datastore::Startup), startup);
    std::vector<std::string> rows;
    copy->readJournal("log", 0, [&](const JournalRow& r) { rows.push_back(r.data); });
    EXPECT_EQ(rows, std::vector<std::string>{"kept"});
}

TEST_F(StoreFileTest, RefusesACorruptFileAndNamesTheBackup) {
    {
        auto s = open();
        edit(*s, interfacesXml("eth", 0, 3));
        s->backup(dir_.path() / "ncstore.db.backup-1");
    }
    std::filesystem::remove(dir_.path() / "ncstore.db-wal");
    std::filesystem::remove(dir_.path() / "ncstore.db-shm");
    {
        std::ofstream f(dir_.path() / "ncstore.db", std::ios::binary | std::ios::trunc);
        f << std::string(8192, 'x');
    }
    try {
        open();
        FAIL() << "a corrupt store was opened";
    } catch (const Error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("ncstore.db"), std::string::npos) << what;
        EXPECT_NE(what.find("ncstore.db.backup-1"), std::string::npos) << what;
    }
    // The backup itself is a working store.
    std::filesystem::rename(dir_.path() / "ncstore.db.backup-1", dir_.path() / "ncstore.db");
    auto s = open();
    s->read(Datastore::Running, [](const lyd_node* t) { EXPECT_EQ(interfaceNames(t).size(), 3u); });
}

} // namespace

TEST_F(StoreFileTest, TheWalStaysBoundedUnderAStreamOfCommits) {
    // Without the writer's restarts the WAL grew without end under steady commits (the soak run
    // saw 218 MB in 3 minutes): SQLite starts it again only when a checkpoint finds it wholly
    // copied at the start of a transaction, which a steady stream of commits never leaves time for.
    StoreOptions o;
    o.file = dir_.path() / "ncstore.db";
    o.durability = Durability::Off;
    o.maxWalBytes = 256 * 1024;
    std::uint64_t largest = 0;
    std::atomic<bool> done{false};
    {
        auto s = Store::open(ctx_.get(), o);
        std::vector<std::thread> threads;
        for (int t = 0; t < 4; ++t) {
            threads.emplace_back([&, t] {
                for (int i = 0; i < 400; ++i) {
                    edit(*s, interfacesXml("w" + std::to_string(t) + "-", i, 1));
                }
            });
        }
        std::thread watch([&] {
            const auto wal = o.file.string() + "-wal";
            for (int i = 0; i < 2000 && !done; ++i) {
                std::error_code ec;
                largest = std::max<std::uint64_t>(largest, std::filesystem::file_size(wal, ec));
                std::this_thread::sleep_for(std::chrono::milliseconds(2));
            }
        });
        for (auto& th : threads) {
            th.join();
        }
        done = true;
        watch.join();
        s->read(Datastore::Running, [](const lyd_node* t) { EXPECT_EQ(interfaceNames(t).size(), 1600u); });
    }
    // A transaction may end past the bound before the writer restarts the WAL; never by much.
    EXPECT_LT(largest, 4 * o.maxWalBytes) << "largest WAL seen: " << largest;
    EXPECT_GT(largest, 0u);
}
