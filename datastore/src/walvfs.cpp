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

int gatherRead(sqlite3_file* f, void* out, int amount, sqlite3_int64 offset) {
    GatherFile& g = self(f);
    if (const int rc = flush(g); rc != SQLITE_OK) {
        return rc;
    }
    return realMethods(g).xRead(g.real, out, amount, offset);
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

int gatherTruncate(sqlite3_file* f, sqlite3_int64 size) {
    GatherFile& g = self(f);
    if (const int rc = flush(g); rc != SQLITE_OK) {
        return rc;
    }
    return realMethods(g).xTruncate(g.real, size);
}

int gatherSync(sqlite3_file* f, int flags) {
    GatherFile& g = self(f);
    if (const int rc = flush(g); rc != SQLITE_OK) {
        return rc;
    }
    return realMethods(g).xSync(g.real, flags);
}

int gatherFileSize(sqlite3_file* f, sqlite3_int64* size) {
    GatherFile& g = self(f);
    if (const int rc = flush(g); rc != SQLITE_OK) {
        return rc;
    }
    return realMethods(g).xFileSize(g.real, size);
}

int gatherLock(sqlite3_file* f, int level) {
    return realMethods(self(f)).xLock(self(f).real, level);
}
int gatherUnlock(sqlite3_file* f, int level) {
    return realMethods(self(f)).xUnlock(self(f).real, level);
}
int gatherCheckReservedLock(sqlite3_file* f, int* out) {
    return realMethods(self(f)).xCheckReservedLock(self(f).real, out);
}

int gatherFileControl(sqlite3_file* f, int op, void* arg) {
    GatherFile& g = self(f);
    if (const int rc = flush(g); rc != SQLITE_OK) {
        return rc;
    }
    return realMethods(g).xFileControl(g.real, op, arg);
}

int gatherSectorSize(sqlite3_file* f) {
    return realMethods(self(f)).xSectorSize(self(f).real);
}
int gatherDeviceCharacteristics(sqlite3_file* f) {
    return realMethods(self(f)).xDeviceCharacteristics(self(f).real);
}

// Shared memory and memory mapping belong to database files, not to logs; passed on all the same.
int gatherShmMap(sqlite3_file* f, int region, int size, int extend, void volatile** out) {
    return realMethods(self(f)).xShmMap(self(f).real, region, size, extend, out);
}
int gatherShmLock(sqlite3_file* f, int offset, int n, int flags) {
    return realMethods(self(f)).xShmLock(self(f).real, offset, n, flags);
}
void gatherShmBarrier(sqlite3_file* f) {
    realMethods(self(f)).xShmBarrier(self(f).real);
}
int gatherShmUnmap(sqlite3_file* f, int deleteFlag) {
    return realMethods(self(f)).xShmUnmap(self(f).real, deleteFlag);
}
int gatherFetch(sqlite3_file* f, sqlite3_int64 offset, int amount, void** out) {
    GatherFile& g = self(f);
    if (const int rc = flush(g); rc != SQLITE_OK) {
        return rc;
    }
    return realMethods(g).xFetch(g.real, offset, amount, out);
}
int gatherUnfetch(sqlite3_file* f, sqlite3_int64 offset, void* p) {
    return realMethods(self(f)).xUnfetch(self(f).real, offset, p);
}

const sqlite3_io_methods kGatherMethods = {
    3,
    gatherClose,
    gatherRead,
    gatherWrite,
    gatherTruncate,
    gatherSync,
    gatherFileSize,
    gatherLock,
    gatherUnlock,
    gatherCheckReservedLock,
    gatherFileControl,
    gatherSectorSize,
    gatherDeviceCharacteristics,
    gatherShmMap,
    gatherShmLock,
    gatherShmBarrier,
    gatherShmUnmap,
    gatherFetch,
    gatherUnfetch,
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
int gatherDelete(sqlite3_vfs* v, const char* n, int s) {
    return realVfs(v)->xDelete(realVfs(v), n, s);
}
int gatherAccess(sqlite3_vfs* v, const char* n, int f, int* out) {
    return realVfs(v)->xAccess(realVfs(v), n, f, out);
}
int gatherFullPathname(sqlite3_vfs* v, const char* n, int size, char* out) {
    return realVfs(v)->xFullPathname(realVfs(v), n, size, out);
}
void* gatherDlOpen(sqlite3_vfs* v, const char* n) {
    return realVfs(v)->xDlOpen(realVfs(v), n);
}
void gatherDlError(sqlite3_vfs* v, int n, char* out) {
    realVfs(v)->xDlError(realVfs(v), n, out);
}
void (*gatherDlSym(sqlite3_vfs* v, void* h, const char* s))(void) {
    return realVfs(v)->xDlSym(realVfs(v), h, s);
}
void gatherDlClose(sqlite3_vfs* v, void* h) {
    realVfs(v)->xDlClose(realVfs(v), h);
}
int gatherRandomness(sqlite3_vfs* v, int n, char* out) {
    return realVfs(v)->xRandomness(realVfs(v), n, out);
}
int gatherSleep(sqlite3_vfs* v, int us) {
    return realVfs(v)->xSleep(realVfs(v), us);
}
int gatherCurrentTime(sqlite3_vfs* v, double* out) {
    return realVfs(v)->xCurrentTime(realVfs(v), out);
}
int gatherGetLastError(sqlite3_vfs* v, int n, char* out) {
    return realVfs(v)->xGetLastError(realVfs(v), n, out);
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
        vfs.xDelete = gatherDelete;
        vfs.xAccess = gatherAccess;
        vfs.xFullPathname = gatherFullPathname;
        vfs.xDlOpen = gatherDlOpen;
        vfs.xDlError = gatherDlError;
        vfs.xDlSym = gatherDlSym;
        vfs.xDlClose = gatherDlClose;
        vfs.xRandomness = gatherRandomness;
        vfs.xSleep = gatherSleep;
        vfs.xCurrentTime = gatherCurrentTime;
        vfs.xGetLastError = gatherGetLastError;
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
