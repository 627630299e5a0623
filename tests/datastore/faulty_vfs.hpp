// A SQLite VFS for tests that wraps the default one and makes chosen calls fail on demand: a
// full disk (writes), a failing disk (reads, fsyncs). It affects the database and WAL files
// opened while it is installed, in this process only.
#pragma once

#include <sqlite3.h>

#include <atomic>

namespace ncstore::test {

class FaultyVfs {
public:
    /// Installs itself as SQLite's default VFS. One at a time.
    FaultyVfs();
    /// Uninstalls; every connection opened through it must be closed first.
    ~FaultyVfs();
    FaultyVfs(const FaultyVfs&) = delete;
    FaultyVfs& operator=(const FaultyVfs&) = delete;

    /// The next `n` writes fail with SQLITE_FULL (as a full disk does).
    void failWrites(int n) { writes_ = n; }
    /// The next `n` reads fail with SQLITE_IOERR_READ.
    void failReads(int n) { reads_ = n; }
    /// The next `n` fsyncs fail with SQLITE_IOERR_FSYNC.
    void failSyncs(int n) { syncs_ = n; }
    /// No more failures.
    void heal() { writes_ = reads_ = syncs_ = 0; }
    /// How many calls were made to fail so far.
    int injected() const { return injected_; }

    /// Used by the file methods.
    bool take(std::atomic<int>& budget);
    std::atomic<int> writes_{0};
    std::atomic<int> reads_{0};
    std::atomic<int> syncs_{0};

private:
    std::atomic<int> injected_{0};
    sqlite3_vfs vfs_{};
    sqlite3_vfs* base_ = nullptr;
};

} // namespace ncstore::test
