#include "walvfs.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>

namespace ncstore::ds::detail {

namespace {

std::atomic<std::uint64_t> asked{0};
std::atomic<std::uint64_t> made{0};

/// A write-ahead log opened through the gathering VFS. SQLite hands us szOsFile bytes for it:
/// this struct, then the default VFS's own file (`real`).
struct GatherFile {
    sqlite3_file base; // must be first: SQLite sees a GatherFile as a sqlite3_file
    sqlite3_file* real = nullptr;
    std::string kept;         // writes not yet made, contiguous, in file order
    sqlite3_int64 keptAt = 0; // the file offset of kept[0]
};

constexpr std::size_t kRealOffset = (sizeof(GatherFile) + 15) & ~std::size_t{15};

GatherFile& self(sqlite3_file* f) {
    return *reinterpret_cast<GatherFile*>(f);
}
const sqlite3_io_methods& realMethods(GatherFile& g) {
    return *g.real->pMethods;
}

// The most one write of the default VFS takes: SQLite's unix VFS masks a write's size with
// 0x1ffff (it never writes more than a page of 64 KiB and a frame header), so a write of exactly
// 128 KiB would write nothing and be reported as a full disk.
constexpr std::size_t kPiece = 64u << 10;

/// Makes the kept writes, in pieces of kPiece. What was kept is dropped even when a write fails:
/// it belongs to the transaction being committed (every commit syncs), which fails with it.
int flush(GatherFile& g) {
    int rc = SQLITE_OK;
    for (std::size_t at = 0; at < g.kept.size() && rc == SQLITE_OK; at += kPiece) {
        const std::size_t n = std::min(kPiece, g.kept.size() - at);
        rc = realMethods(g).xWrite(g.real, g.kept.data() + at, static_cast<int>(n),
                                   g.keptAt + static_cast<sqlite3_int64>(at));
        made.fetch_add(1, std::memory_order_relaxed);
    }
    g.kept.clear(); // its capacity stays: kGatherBytes, reserved once
    return rc;
}

int gatherClose(sqlite3_file* f) {
    GatherFile& g = self(f);
    const int flushed = flush(g);
    const int closed = g.real->pMethods ? realMethods(g).xClose(g.real) : SQLITE_OK;
    g.~GatherFile();
    return flushed != SQLITE_OK ? flushed : closed;
}

int gatherWrite(sqlite3_file* f, const void* data, int amount, sqlite3_int64 offset) {
    GatherFile& g = self(f);
    asked.fetch_add(1, std::memory_order_relaxed);
    const auto bytes = static_cast<const char*>(data);
    const auto n = static_cast<std::size_t>(amount);
    const sqlite3_int64 end = g.keptAt + static_cast<sqlite3_int64>(g.kept.size());
    if (!g.kept.empty() && offset >= g.keptAt && offset + amount <= end) {
        // A frame written again in the same transaction (SQLite rewrites checksums so).
        std::memcpy(g.kept.data() + (offset - g.keptAt), bytes, n);
        return SQLITE_OK;
    }
    // What is kept never outgrows the buffer reserved at the first write: a big transaction
    // reaches the file kGatherBytes at a time, without reallocations.
    if (!g.kept.empty() && (offset != end || g.kept.size() + n > kGatherBytes)) {
        if (const int rc = flush(g); rc != SQLITE_OK) {
            return rc;
        }
    }
    if (g.kept.capacity() < kGatherBytes || n > kGatherBytes) {
        try {
            g.kept.reserve(kGatherBytes);
        } catch (const std::bad_alloc&) {
        }
        if (g.kept.capacity() < kGatherBytes || n > kGatherBytes) {
            // No memory (or a write bigger than the buffer, which SQLite never makes): as it is.
            made.fetch_add(1, std::memory_order_relaxed);
            return realMethods(g).xWrite(g.real, data, amount, offset);
        }
    }
    if (g.kept.empty()) {
        g.keptAt = offset;
    }
    g.kept.append(bytes, n); // within the capacity: no allocation, no exception
    return SQLITE_OK;
}

/// A method that needs what is kept in the file first (it reads it, syncs it, sizes or cuts it,
/// or may do anything, as a file control): what is kept is written, then the call passed on.
template <auto Method, class... Args> int afterFlush(sqlite3_file* f, Args... args) {
    GatherFile& g = self(f);
    if (const int rc = flush(g); rc != SQLITE_OK) {
        return rc;
    }
    return (realMethods(g).*Method)(g.real, args...);
}

/// A method that does not touch the file's content (locks; shared memory and memory mapping,
/// which belong to database files, not to logs): passed on as it is.
template <auto Method, class... Args> auto passed(sqlite3_file* f, Args... args) {
    return (realMethods(self(f)).*Method)(self(f).real, args...);
}

using M = sqlite3_io_methods;
const sqlite3_io_methods kGatherMethods = {
    3,
    gatherClose,
    afterFlush<&M::xRead>,
    gatherWrite,
    afterFlush<&M::xTruncate>,
    afterFlush<&M::xSync>,
    afterFlush<&M::xFileSize>,
    passed<&M::xLock>,
    passed<&M::xUnlock>,
    passed<&M::xCheckReservedLock>,
    afterFlush<&M::xFileControl>,
    passed<&M::xSectorSize>,
    passed<&M::xDeviceCharacteristics>,
    passed<&M::xShmMap>,
    passed<&M::xShmLock>,
    passed<&M::xShmBarrier>,
    passed<&M::xShmUnmap>,
    afterFlush<&M::xFetch>,
    passed<&M::xUnfetch>,
};

/// The VFS under ours: SQLite's default when the call is made (a test may install another one,
/// which then sees our writes), never ours (it is not registered as the default).
sqlite3_vfs* realVfs(sqlite3_vfs*) {
    return sqlite3_vfs_find(nullptr);
}

int gatherOpen(sqlite3_vfs* vfs, const char* name, sqlite3_file* file, int flags, int* outFlags) {
    sqlite3_vfs* real = realVfs(vfs);
    if (real->szOsFile + static_cast<int>(kRealOffset) > vfs->szOsFile) {
        return SQLITE_CANTOPEN; // a default VFS installed later whose files are bigger than we allow
    }
    if (!(flags & SQLITE_OPEN_WAL)) {
        return real->xOpen(real, name, file, flags, outFlags); // our szOsFile covers the real one
    }
    auto* g = new (file) GatherFile{};
    g->base.pMethods = nullptr; // until the real file is open: SQLite then calls no xClose
    g->real = reinterpret_cast<sqlite3_file*>(reinterpret_cast<char*>(file) + kRealOffset);
    const int rc = real->xOpen(real, name, g->real, flags, outFlags);
    if (rc != SQLITE_OK) {
        if (g->real->pMethods) {
            g->real->pMethods->xClose(g->real);
        }
        g->~GatherFile();
        return rc;
    }
    if (g->real->pMethods->iVersion < 3) {
        g->real->pMethods->xClose(g->real);
        g->~GatherFile();
        return SQLITE_CANTOPEN; // every VFS of SQLite 3.8 and later is version 3
    }
    g->base.pMethods = &kGatherMethods;
    return SQLITE_OK;
}

// The rest is the default VFS's, called with the default VFS.
template <auto Method, class... Args> auto viaDefault(sqlite3_vfs* v, Args... args) {
    sqlite3_vfs* real = realVfs(v);
    return (real->*Method)(real, args...);
}

// Methods of later VFS versions, which the default VFS may not have (a test's wrapper).
int gatherCurrentTimeInt64(sqlite3_vfs* v, sqlite3_int64* out) {
    sqlite3_vfs* real = realVfs(v);
    if (real->iVersion >= 2 && real->xCurrentTimeInt64) {
        return real->xCurrentTimeInt64(real, out);
    }
    double days = 0;
    const int rc = real->xCurrentTime(real, &days);
    *out = static_cast<sqlite3_int64>(days * 86400000.0);
    return rc;
}
int gatherSetSystemCall(sqlite3_vfs* v, const char* n, sqlite3_syscall_ptr p) {
    sqlite3_vfs* real = realVfs(v);
    return real->iVersion >= 3 && real->xSetSystemCall ? real->xSetSystemCall(real, n, p) : SQLITE_NOTFOUND;
}
sqlite3_syscall_ptr gatherGetSystemCall(sqlite3_vfs* v, const char* n) {
    sqlite3_vfs* real = realVfs(v);
    return real->iVersion >= 3 && real->xGetSystemCall ? real->xGetSystemCall(real, n) : nullptr;
}
const char* gatherNextSystemCall(sqlite3_vfs* v, const char* n) {
    sqlite3_vfs* real = realVfs(v);
    return real->iVersion >= 3 && real->xNextSystemCall ? real->xNextSystemCall(real, n) : nullptr;
}

constexpr const char* kName = "ncstore-gather-wal";

} // namespace

const char* gatheringWalVfs() {
    static std::once_flag once;
    static sqlite3_vfs vfs{};
    std::call_once(once, [] {
        sqlite3_vfs* real = sqlite3_vfs_find(nullptr);
        if (!real) {
            throw std::runtime_error("SQLite has no default VFS");
        }
        vfs.iVersion = 3;
        // Room for the default VFS's file and for one that wraps it (the tests' faulty VFS).
        vfs.szOsFile = static_cast<int>(kRealOffset) + 2 * real->szOsFile + 1024;
        vfs.mxPathname = real->mxPathname;
        vfs.zName = kName;
        vfs.xOpen = gatherOpen;
        vfs.xDelete = viaDefault<&sqlite3_vfs::xDelete>;
        vfs.xAccess = viaDefault<&sqlite3_vfs::xAccess>;
        vfs.xFullPathname = viaDefault<&sqlite3_vfs::xFullPathname>;
        vfs.xDlOpen = viaDefault<&sqlite3_vfs::xDlOpen>;
        vfs.xDlError = viaDefault<&sqlite3_vfs::xDlError>;
        vfs.xDlSym = viaDefault<&sqlite3_vfs::xDlSym>;
        vfs.xDlClose = viaDefault<&sqlite3_vfs::xDlClose>;
        vfs.xRandomness = viaDefault<&sqlite3_vfs::xRandomness>;
        vfs.xSleep = viaDefault<&sqlite3_vfs::xSleep>;
        vfs.xCurrentTime = viaDefault<&sqlite3_vfs::xCurrentTime>;
        vfs.xGetLastError = viaDefault<&sqlite3_vfs::xGetLastError>;
        vfs.xCurrentTimeInt64 = gatherCurrentTimeInt64;
        vfs.xSetSystemCall = gatherSetSystemCall;
        vfs.xGetSystemCall = gatherGetSystemCall;
        vfs.xNextSystemCall = gatherNextSystemCall;
        if (sqlite3_vfs_register(&vfs, 0) != SQLITE_OK) {
            throw std::runtime_error("cannot register SQLite VFS " + std::string(kName));
        }
    });
    return kName;
}

WalWriteCounts walWriteCounts() {
    return {asked.load(std::memory_order_relaxed), made.load(std::memory_order_relaxed)};
}

} // namespace ncstore::ds::detail
