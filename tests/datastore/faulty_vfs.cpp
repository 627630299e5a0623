#include "faulty_vfs.hpp"

#include <stdexcept>

namespace ncstore::test {

namespace {

FaultyVfs* installed = nullptr;

struct File {
    sqlite3_file base;
    sqlite3_file* real;
    bool watched; // the database or its WAL
};

sqlite3_file* real(sqlite3_file* f) {
    return reinterpret_cast<File*>(f)->real;
}
bool watched(sqlite3_file* f) {
    return reinterpret_cast<File*>(f)->watched && installed;
}

int xClose(sqlite3_file* f) {
    return real(f)->pMethods->xClose(real(f));
}
int xRead(sqlite3_file* f, void* buf, int amt, sqlite3_int64 off) {
    if (watched(f) && installed->take(installed->reads_)) {
        return SQLITE_IOERR_READ;
    }
    return real(f)->pMethods->xRead(real(f), buf, amt, off);
}
int xWrite(sqlite3_file* f, const void* buf, int amt, sqlite3_int64 off) {
    if (watched(f) && installed->take(installed->writes_)) {
        return SQLITE_FULL;
    }
    return real(f)->pMethods->xWrite(real(f), buf, amt, off);
}
int xTruncate(sqlite3_file* f, sqlite3_int64 size) {
    return real(f)->pMethods->xTruncate(real(f), size);
}
int xSync(sqlite3_file* f, int flags) {
    if (watched(f) && installed->take(installed->syncs_)) {
        return SQLITE_IOERR_FSYNC;
    }
    return real(f)->pMethods->xSync(real(f), flags);
}
int xFileSize(sqlite3_file* f, sqlite3_int64* size) {
    return real(f)->pMethods->xFileSize(real(f), size);
}
int xLock(sqlite3_file* f, int level) {
    return real(f)->pMethods->xLock(real(f), level);
}
int xUnlock(sqlite3_file* f, int level) {
    return real(f)->pMethods->xUnlock(real(f), level);
}
int xCheckReservedLock(sqlite3_file* f, int* out) {
    return real(f)->pMethods->xCheckReservedLock(real(f), out);
}
int xFileControl(sqlite3_file* f, int op, void* arg) {
    return real(f)->pMethods->xFileControl(real(f), op, arg);
}
int xSectorSize(sqlite3_file* f) {
    return real(f)->pMethods->xSectorSize(real(f));
}
int xDeviceCharacteristics(sqlite3_file* f) {
    return real(f)->pMethods->xDeviceCharacteristics(real(f));
}
int xShmMap(sqlite3_file* f, int region, int size, int extend, void volatile** out) {
    return real(f)->pMethods->xShmMap(real(f), region, size, extend, out);
}
int xShmLock(sqlite3_file* f, int offset, int n, int flags) {
    return real(f)->pMethods->xShmLock(real(f), offset, n, flags);
}
void xShmBarrier(sqlite3_file* f) {
    real(f)->pMethods->xShmBarrier(real(f));
}
int xShmUnmap(sqlite3_file* f, int deleteFlag) {
    return real(f)->pMethods->xShmUnmap(real(f), deleteFlag);
}
int xFetch(sqlite3_file* f, sqlite3_int64 off, int amt, void** out) {
    // No memory-mapped reads: every read goes through xRead, where faults are injected.
    (void)f;
    (void)off;
    (void)amt;
    *out = nullptr;
    return SQLITE_OK;
}
int xUnfetch(sqlite3_file* f, sqlite3_int64 off, void* p) {
    (void)f;
    (void)off;
    (void)p;
    return SQLITE_OK;
}

const sqlite3_io_methods kMethods = {
    3,
    xClose,
    xRead,
    xWrite,
    xTruncate,
    xSync,
    xFileSize,
    xLock,
    xUnlock,
    xCheckReservedLock,
    xFileControl,
    xSectorSize,
    xDeviceCharacteristics,
    xShmMap,
    xShmLock,
    xShmBarrier,
    xShmUnmap,
    xFetch,
    xUnfetch,
};

int xOpen(sqlite3_vfs* vfs, const char* name, sqlite3_file* f, int flags, int* outFlags) {
    auto* base = static_cast<sqlite3_vfs*>(vfs->pAppData);
    auto* file = reinterpret_cast<File*>(f);
    file->real = reinterpret_cast<sqlite3_file*>(file + 1);
    file->watched = flags & (SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_WAL);
    const int rc = base->xOpen(base, name, file->real, flags, outFlags);
    f->pMethods = file->real->pMethods ? &kMethods : nullptr;
    return rc;
}
int xDelete(sqlite3_vfs* vfs, const char* name, int syncDir) {
    auto* base = static_cast<sqlite3_vfs*>(vfs->pAppData);
    return base->xDelete(base, name, syncDir);
}
int xAccess(sqlite3_vfs* vfs, const char* name, int flags, int* out) {
    auto* base = static_cast<sqlite3_vfs*>(vfs->pAppData);
    return base->xAccess(base, name, flags, out);
}
int xFullPathname(sqlite3_vfs* vfs, const char* name, int n, char* out) {
    auto* base = static_cast<sqlite3_vfs*>(vfs->pAppData);
    return base->xFullPathname(base, name, n, out);
}
void* xDlOpen(sqlite3_vfs* vfs, const char* name) {
    auto* base = static_cast<sqlite3_vfs*>(vfs->pAppData);
    return base->xDlOpen(base, name);
}
void xDlError(sqlite3_vfs* vfs, int n, char* out) {
    auto* base = static_cast<sqlite3_vfs*>(vfs->pAppData);
    base->xDlError(base, n, out);
}
void (*xDlSym(sqlite3_vfs* vfs, void* handle, const char* sym))(void) {
    auto* base = static_cast<sqlite3_vfs*>(vfs->pAppData);
    return base->xDlSym(base, handle, sym);
}
void xDlClose(sqlite3_vfs* vfs, void* handle) {
    auto* base = static_cast<sqlite3_vfs*>(vfs->pAppData);
    base->xDlClose(base, handle);
}
int xRandomness(sqlite3_vfs* vfs, int n, char* out) {
    auto* base = static_cast<sqlite3_vfs*>(vfs->pAppData);
    return base->xRandomness(base, n, out);
}
int xSleep(sqlite3_vfs* vfs, int us) {
    auto* base = static_cast<sqlite3_vfs*>(vfs->pAppData);
    return base->xSleep(base, us);
}
int xCurrentTime(sqlite3_vfs* vfs, double* out) {
    auto* base = static_cast<sqlite3_vfs*>(vfs->pAppData);
    return base->xCurrentTime(base, out);
}
int xGetLastError(sqlite3_vfs* vfs, int n, char* out) {
    auto* base = static_cast<sqlite3_vfs*>(vfs->pAppData);
    return base->xGetLastError ? base->xGetLastError(base, n, out) : 0;
}
int xCurrentTimeInt64(sqlite3_vfs* vfs, sqlite3_int64* out) {
    auto* base = static_cast<sqlite3_vfs*>(vfs->pAppData);
    return base->xCurrentTimeInt64(base, out);
}

} // namespace

FaultyVfs::FaultyVfs() {
    if (installed) {
        throw std::logic_error("a FaultyVfs is installed already");
    }
    base_ = sqlite3_vfs_find(nullptr);
    if (!base_ || base_->iVersion < 2) {
        throw std::runtime_error("no usable default SQLite VFS");
    }
    vfs_.iVersion = 2;
    vfs_.szOsFile = static_cast<int>(sizeof(File)) + base_->szOsFile;
    vfs_.mxPathname = base_->mxPathname;
    vfs_.zName = "ncstore-faulty";
    vfs_.pAppData = base_;
    vfs_.xOpen = xOpen;
    vfs_.xDelete = xDelete;
    vfs_.xAccess = xAccess;
    vfs_.xFullPathname = xFullPathname;
    vfs_.xDlOpen = xDlOpen;
    vfs_.xDlError = xDlError;
    vfs_.xDlSym = xDlSym;
    vfs_.xDlClose = xDlClose;
    vfs_.xRandomness = xRandomness;
    vfs_.xSleep = xSleep;
    vfs_.xCurrentTime = xCurrentTime;
    vfs_.xGetLastError = xGetLastError;
    vfs_.xCurrentTimeInt64 = xCurrentTimeInt64;
    installed = this;
    if (sqlite3_vfs_register(&vfs_, 1) != SQLITE_OK) {
        installed = nullptr;
        throw std::runtime_error("cannot register the faulty VFS");
    }
}

FaultyVfs::~FaultyVfs() {
    sqlite3_vfs_unregister(&vfs_);
    sqlite3_vfs_register(base_, 1);
    installed = nullptr;
}

bool FaultyVfs::take(std::atomic<int>& budget) {
    int left = budget.load();
    while (left > 0) {
        if (budget.compare_exchange_weak(left, left - 1)) {
            ++injected_;
            return true;
        }
    }
    return false;
}

} // namespace ncstore::test
