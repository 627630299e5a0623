// kill -9 at random moments while several threads commit: every acknowledged edit must be there
// after restart, no edit may be half there, the journal written with the edits holds a row
// exactly for the edits present (so for every acknowledged one), with commit ids increasing
// across restarts, and SQLite's integrity check must pass. Cycles: NCSTORE_CRASH_CYCLES
// (default 20; the long mode is 1000). A full disk fails commits clearly, and once there is room
// again the next commit succeeds and nothing stale comes back after a restart.
#include "support.hpp"
#include "temp_dir.hpp"
#include "test_support.hpp"

#include "ncstore/changes.hpp"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <sstream>

using namespace ncstore;

namespace {

struct Child {
    pid_t pid = -1;
    int out = -1;
};

Child spawn(const std::vector<std::string>& args) {
    int fds[2];
    if (pipe(fds) != 0) {
        throw std::runtime_error("pipe failed");
    }
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        std::vector<char*> argv;
        for (const auto& a : args) {
            argv.push_back(const_cast<char*>(a.c_str()));
        }
        argv.push_back(nullptr);
        execv(argv[0], argv.data());
        _exit(127);
    }
    close(fds[1]);
    return {pid, fds[0]};
}

/// Reads the child's output for about `ms` milliseconds (or until it exits, or until `until`
/// appears in what was read when one is given).
std::string readFor(int fd, int ms, const char* until = nullptr) {
    std::string out;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < deadline && !(until && out.find(until) != std::string::npos)) {
        fd_set set;
        FD_ZERO(&set);
        FD_SET(fd, &set);
        timeval tv{0, 10000};
        if (select(fd + 1, &set, nullptr, nullptr, &tv) > 0) {
            char buf[65536];
            ssize_t n = read(fd, buf, sizeof buf);
            if (n <= 0) {
                break;
            }
            out.append(buf, static_cast<std::size_t>(n));
        }
    }
    return out;
}

/// The journal "acks" of the crash driver: per row the interfaces its write created.
struct Journal {
    std::vector<std::uint64_t> commitIds;
    std::map<std::string, std::uint64_t> rowOf; // interface -> commit id of its row
};

Journal readAcks(const ds::Store& store) {
    Journal j;
    store.readJournal("acks", 0, [&](const ds::JournalRow& row) {
        j.commitIds.push_back(row.commitId);
        std::istringstream names(row.data);
        for (std::string name; names >> name;) {
            j.rowOf[name] = row.commitId;
        }
    });
    return j;
}

std::set<std::string> acknowledged(const std::string& out) {
    std::set<std::string> tags;
    std::istringstream in(out);
    std::string line;
    while (std::getline(in, line)) {
        if (in.eof()) {
            break; // an unterminated last line is not an acknowledgement
        }
        if (line.rfind("ACK ", 0) == 0) {
            tags.insert(line.substr(4));
        }
    }
    return tags;
}

/// Cycles of: the driver commits from 4 threads and is killed with -9 at a random moment; then
/// the store is opened on `options` and checked. `target` is the driver's DBFILE argument;
/// `betweenCycles(cycle)` runs after each kill (the dqlite variant kills its node too).
void killCycles(const std::string& target, const ds::StoreOptions& options,
                const std::function<void(int cycle)>& betweenCycles = {}) {
    const char* env = std::getenv("NCSTORE_CRASH_CYCLES");
    const int cycles = env ? std::atoi(env) : 20;
    Context ctx = test::interfacesContext();
    std::mt19937 rng(std::random_device{}());
    std::set<std::string> allAcked;
    std::uint64_t lastCommitId = 0;
    for (int cycle = 0; cycle < cycles; ++cycle) {
        Child c = spawn({NCSTORE_CRASH_DRIVER, "commit", target, "4", "c" + std::to_string(cycle)});
        // Odd cycles kill 20-220 ms after the start, possibly while the store opens and recovers;
        // even ones 20-220 ms after the driver is ready, so that some cycles commit even where
        // the start-up alone takes longer than that (a sanitizer build on a busy machine).
        std::string out = cycle % 2 == 0 ? readFor(c.out, 60000, "READY\n") : std::string();
        out += readFor(c.out, 20 + static_cast<int>(rng() % 200));
        kill(c.pid, SIGKILL);
        out += readFor(c.out, 0);
        close(c.out);
        int status = 0;
        waitpid(c.pid, &status, 0);
        auto acked = acknowledged(out);
        allAcked.insert(acked.begin(), acked.end());
        if (betweenCycles) {
            betweenCycles(cycle);
        }

        auto store = ds::Store::open(ctx.get(), options);
        std::set<std::string> present;
        store->read(ds::Datastore::Running, [&](const lyd_node* t) {
            for (const auto& n : test::interfaceNames(t)) {
                present.insert(n);
            }
        });
        for (const auto& tag : allAcked) {
            ASSERT_TRUE(present.count(tag + "-a") && present.count(tag + "-b"))
                << "cycle " << cycle << ": acknowledged edit " << tag << " lost";
        }
        for (const auto& name : present) {
            const std::string tag = name.substr(0, name.size() - 2);
            ASSERT_TRUE(present.count(tag + "-a") && present.count(tag + "-b"))
                << "cycle " << cycle << ": half of edit " << tag << " is visible";
        }
        // The journal is exactly as durable as the edits: a row for each edit present (hence
        // for each acknowledged one), none for an edit that is not.
        const Journal journal = readAcks(*store);
        for (const auto& name : present) {
            ASSERT_TRUE(journal.rowOf.count(name)) << "cycle " << cycle << ": no journal row for " << name;
        }
        for (const auto& [name, commitId] : journal.rowOf) {
            ASSERT_TRUE(present.count(name)) << "cycle " << cycle << ": a journal row for " << name
                                             << " (commit " << commitId << ") whose edit is not there";
        }
        ASSERT_TRUE(std::adjacent_find(journal.commitIds.begin(), journal.commitIds.end(),
                                       std::greater_equal<>()) == journal.commitIds.end())
            << "cycle " << cycle << ": commit ids do not increase";
        ASSERT_GE(journal.commitIds.empty() ? 0 : journal.commitIds.back(), lastCommitId)
            << "cycle " << cycle << ": commit ids went back after a restart";
        lastCommitId = journal.commitIds.empty() ? 0 : journal.commitIds.back();
        ASSERT_EQ(store->integrityCheck(), "ok") << "cycle " << cycle;
    }
    EXPECT_GT(allAcked.size(), 0u) << "the driver never acknowledged anything";
}

TEST(CrashTest, AcknowledgedEditsSurviveKill9) {
    test::TempDir dir;
    ds::StoreOptions options;
    options.file = dir.path() / "crash.db";
    killCycles(options.file.string(), options);
}

TEST(CrashTest, AcknowledgedEditsSurviveKill9OfTheStoreAndOfItsDqliteNode) {
    // The dqlite backend (issue 17): a store killed in the middle of a transaction leaves it to
    // the node to roll back; every third cycle the node (a process of its own) is killed with -9
    // too and restarted on its data: what it acknowledged must come back from its Raft log.
    test::TempDir dir;
    const auto nodeDir = dir.path() / "node";
    std::filesystem::create_directory(nodeDir);
    const std::string address = dqlite::test::freeAddress();
    auto node = std::make_unique<dqlite::test::ChildNode>(1, address, nodeDir, std::chrono::milliseconds{0});
    ds::StoreOptions options;
    options.dqlite = ds::DqliteStoreOptions{{address}, "crash.db", std::chrono::seconds(10)};
    killCycles("dqlite:" + address, options, [&](int cycle) {
        if (cycle % 3 == 2) {
            node->kill();
            node.reset();
            node =
                std::make_unique<dqlite::test::ChildNode>(1, address, nodeDir, std::chrono::milliseconds{0});
        }
    });
}

TEST(CrashTest, FullDiskFailsCommitsClearlyAndKeepsTheStoreConsistent) {
    test::TempDir dir;
    const auto db = dir.path() / "full.db";
    Child c = spawn({NCSTORE_CRASH_DRIVER, "fill", db.string(), "1", "f"});
    std::string out = readFor(c.out, 120000);
    close(c.out);
    int status = 0;
    waitpid(c.pid, &status, 0);
    ASSERT_NE(out.find("FULL "), std::string::npos) << out;
    std::istringstream in(out.substr(out.find("FULL ") + 5));
    std::size_t acked = 0;
    std::size_t inMemory = 0;
    in >> acked >> inMemory;
    std::string message;
    std::getline(in, message);
    EXPECT_NE(message.find("could not commit"), std::string::npos) << message;
    EXPECT_EQ(inMemory, acked * 2) << "memory does not match what was acknowledged";
    // Room again: the next commit went through.
    EXPECT_NE(out.find("NEXT-OK"), std::string::npos) << out;

    Context ctx = test::interfacesContext();
    ds::StoreOptions options;
    options.file = db;
    auto store = ds::Store::open(ctx.get(), options);
    std::string firstEntry;
    store->read(ds::Datastore::Running, [&](const lyd_node* t) {
        EXPECT_EQ(test::interfaceNames(t).size(), acked * 2 + 2);
        lyd_node* description = nullptr;
        if (t && lyd_find_path(t, "/ietf-interfaces:interfaces/interface[name='f-0-a']/description", 0,
                               &description) == LY_SUCCESS) {
            firstEntry = lyd_get_value(description);
        }
    });
    EXPECT_EQ(firstEntry, "dnext") << "a value older than the last acknowledged write came back";
    const Journal journal = readAcks(*store);
    EXPECT_EQ(journal.commitIds.size(), acked + 1) << "one journal row per acknowledged write";
    EXPECT_EQ(journal.rowOf.count("f-next-a"), 1u);
    EXPECT_EQ(store->integrityCheck(), "ok");
}

} // namespace
