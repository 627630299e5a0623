// The VFS that gathers a write-ahead log's writes (datastore/src/walvfs.hpp): fewer writes, and
// nothing a commit acknowledged is missing from the file, for other connections or after the
// process dies.
#include "faulty_vfs.hpp"
#include "walvfs.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <csignal>
#include <filesystem>
#include <memory>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;
using ncstore::ds::detail::gatheringWalVfs;
using ncstore::ds::detail::walWriteCounts;

struct CloseDb {
    void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using Db = std::unique_ptr<sqlite3, CloseDb>;

Db open(const fs::path& file, const char* vfs) {
    sqlite3* db = nullptr;
    const int rc = sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, vfs);
    Db owned{db};
    if (rc != SQLITE_OK) {
        throw std::runtime_error("open " + file.string() + ": " + sqlite3_errstr(rc));
    }
    return owned;
}

int exec(sqlite3* db, const std::string& sql) {
    return sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
}

long long scalar(sqlite3* db, const std::string& sql) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) {
        throw std::runtime_error(sqlite3_errmsg(db));
    }
    const long long v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_finalize(st);
    return v;
}

std::string text(sqlite3* db, const std::string& sql) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) {
        throw std::runtime_error(sqlite3_errmsg(db));
    }
    std::string v =
        sqlite3_step(st) == SQLITE_ROW ? reinterpret_cast<const char*>(sqlite3_column_text(st, 0)) : "";
    sqlite3_finalize(st);
    return v;
}

/// A writer as the SQLite backend opens it at durability full (it checkpoints from another
/// connection: a checkpoint of its own would read the WAL back, and so write what is kept).
Db openWriter(const fs::path& file) {
    Db db = open(file, gatheringWalVfs());
    if (exec(db.get(), "PRAGMA journal_mode=WAL") != SQLITE_OK ||
        exec(db.get(), "PRAGMA synchronous=FULL") != SQLITE_OK ||
        exec(db.get(), "PRAGMA wal_autocheckpoint=0") != SQLITE_OK ||
        exec(db.get(), "CREATE TABLE IF NOT EXISTS t(id INTEGER PRIMARY KEY, data BLOB NOT NULL)") !=
            SQLITE_OK) {
        throw std::runtime_error(sqlite3_errmsg(db.get()));
    }
    return db;
}

/// Row `i` holds `rowSize(i)` bytes, each the letter 'A' + i % 26: sizes from 1 KB to ~600 KB,
/// so that commits reach the file in one piece and in many (64 KiB each).
int rowSize(int i) {
    return 1000 + (i * 7919) % 600000;
}

std::string rowValue(int i) {
    return "CAST(printf('%.*c', " + std::to_string(rowSize(i)) + ", char(65 + " + std::to_string(i % 26) +
           ")) AS BLOB)";
}

int insertRow(sqlite3* db, int i) {
    return exec(db, "INSERT INTO t(id, data) VALUES(" + std::to_string(i) + ", " + rowValue(i) + ")");
}

class WalVfsTest : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("ncstore-walvfs-" + std::to_string(::getpid()) + "-" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }
    fs::path dir_;
};

TEST_F(WalVfsTest, ACommitReachesTheFileInOneWriteAndOtherConnectionsSeeIt) {
    const Db writer = openWriter(dir_ / "db");
    const Db reader = open(dir_ / "db", nullptr); // the default VFS, as the checkpointer's
    const auto before = walWriteCounts();
    for (int i = 1; i <= 200; ++i) {
        ASSERT_EQ(exec(writer.get(), "BEGIN; INSERT INTO t(id, data) VALUES(" + std::to_string(i) +
                                         ", randomblob(300)); COMMIT"),
                  SQLITE_OK);
        ASSERT_EQ(scalar(reader.get(), "SELECT count(*) FROM t"), i) << "commit " << i;
    }
    const auto after = walWriteCounts();
    const auto asked = after.asked - before.asked;
    const auto made = after.made - before.made;
    // Each commit asks at least two writes (a frame's header and its page) and makes one.
    EXPECT_GE(asked, 400u);
    EXPECT_LE(made, 200u + 5u) << asked << " writes asked";
}

/// Commits 40 transactions, then dies by SIGKILL in the middle of one more: a small one, or one
/// whose writes outgrow the gathering buffer (part of it is then in the file already).
void commitThenDie(const fs::path& file, bool bigLast) {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        try {
            const Db db = openWriter(file);
            for (int i = 1; i <= 40; ++i) {
                if (exec(db.get(), "BEGIN") != SQLITE_OK || insertRow(db.get(), i) != SQLITE_OK ||
                    exec(db.get(), "COMMIT") != SQLITE_OK) {
                    ::_exit(2);
                }
            }
            if (exec(db.get(), "BEGIN") != SQLITE_OK) {
                ::_exit(2);
            }
            for (int i = 41; i <= (bigLast ? 60 : 41); ++i) {
                exec(db.get(), "INSERT INTO t(id, data) VALUES(" + std::to_string(i) + ", randomblob(" +
                                   std::to_string(bigLast ? rowSize(i) : 100) + "))");
            }
            ::raise(SIGKILL); // with the connection open: nothing is closed or checkpointed
        } catch (...) {
            ::_exit(3);
        }
        ::raise(SIGKILL);
        ::_exit(4);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "child status " << status;

    const Db db = open(file, nullptr);
    EXPECT_EQ(text(db.get(), "PRAGMA integrity_check"), "ok");
    EXPECT_EQ(scalar(db.get(), "SELECT count(*) FROM t"), 40);
    for (int i = 1; i <= 40; ++i) {
        EXPECT_EQ(scalar(db.get(),
                         "SELECT count(*) FROM t WHERE id=" + std::to_string(i) + " AND data=" + rowValue(i)),
                  1)
            << "row " << i;
    }
}

TEST_F(WalVfsTest, WhatWasCommittedIsInTheFileWhenTheProcessDiesWithoutClosing) {
    commitThenDie(dir_ / "small", false);
    commitThenDie(dir_ / "big", true);
}

TEST_F(WalVfsTest, AWriteThatFailsFailsItsCommitAndTheDatabaseStaysAsItWas) {
    ncstore::test::FaultyVfs faulty; // the default VFS now: the gathering VFS writes through it
    const Db db = openWriter(dir_ / "db");
    for (int i = 1; i <= 10; ++i) {
        ASSERT_EQ(
            exec(db.get(), "INSERT INTO t(id, data) VALUES(" + std::to_string(i) + ", randomblob(3000))"),
            SQLITE_OK);
    }
    faulty.failWrites(1);
    EXPECT_NE(exec(db.get(), "INSERT INTO t(id, data) VALUES(11, randomblob(3000))"), SQLITE_OK);
    EXPECT_GT(faulty.injected(), 0);
    faulty.heal();
    EXPECT_EQ(scalar(db.get(), "SELECT count(*) FROM t"), 10);
    ASSERT_EQ(exec(db.get(), "INSERT INTO t(id, data) VALUES(12, randomblob(3000))"), SQLITE_OK);
    const Db reader = open(dir_ / "db", nullptr);
    EXPECT_EQ(scalar(reader.get(), "SELECT count(*) FROM t"), 11);
    EXPECT_EQ(text(reader.get(), "PRAGMA integrity_check"), "ok");
}

} // namespace
