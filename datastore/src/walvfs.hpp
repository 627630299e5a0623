// An SQLite VFS that gathers the writes of a write-ahead log into one write per commit. Private
// to the SQLite backend.
//
// SQLite writes each WAL frame as two writes (its 24-byte header, then its page): a single-entry
// commit of ours made 14 pwrite calls, ~6 us of CPU each on the VMs we measure on (a
// virtual machine's system calls are expensive), where one pwrite of the same 29 KB costs ~8 us.
//
// Promises:
//  - Files other than write-ahead logs go straight to the default VFS (the one SQLite has when
//    the file is opened), unchanged.
//  - A WAL's writes are kept in memory, in file order, and reach the file (in writes of 64 KiB at
//    most, what SQLite's unix VFS takes in one) before its
//    next sync, read, size, truncate, file control or close, before a write that does not
//    continue or overwrite what is kept, and before what is kept would outgrow kGatherBytes (its
//    buffer, reserved once per open WAL). So when a sync returns, every write before it is in
//    the file, as without this VFS.
//  - Correct only where SQLite syncs a WAL before it lets other connections see the frames it
//    wrote: WAL mode with synchronous=FULL or EXTRA (SQLite syncs the WAL at each commit, before
//    publishing it in the wal-index). At synchronous=NORMAL or OFF a reader could be told of
//    frames still in memory: do not use it there.
//  - A failed write is reported by the call that made it reach the file (a sync, mostly): what
//    was kept then belonged to the transaction being committed, which SQLite then rolls back.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ncstore::ds::detail {

inline constexpr std::size_t kGatherBytes = 4u << 20;

/// The VFS's name (registered on the first call; thread-safe), to open connections with.
const char* gatheringWalVfs();

/// Writes asked of write-ahead logs opened through this VFS, and writes made to their files,
/// since the process started (what the tests check).
struct WalWriteCounts {
    std::uint64_t asked = 0;
    std::uint64_t made = 0;
};
WalWriteCounts walWriteCounts();

} // namespace ncstore::ds::detail
