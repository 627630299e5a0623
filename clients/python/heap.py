"""Keeps this process's freed memory for reuse, so that a timing client is not slowed by page faults.

By default glibc gives every large buffer (128 KiB and up) its own mapping and returns it to the
kernel when freed; a client that receives tens of MB (paramiko's packets, the framed messages,
ncclient's replies) then touches fresh pages all the time. On some virtual machines a page fault
costs ~10 us: measured with notify_bench.py's replay of 65 MB, 137,000 faults and 2.6 s of client CPU
against 11,000 faults and 0.6 s with the heap kept, while the server spent 0.37 s on it. A client
that is slower than the server measures itself, hence this.
"""
import ctypes
import ctypes.util

# glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD = -1
_M_TOP_PAD = -2
_M_MMAP_THRESHOLD = -3


def keep_freed_memory():
    """Large buffers come from the heap, which keeps what is freed (True), or False where the C
    library has no glibc mallopt (nothing changes then)."""
    name = ctypes.util.find_library("c")
    if not name:
        return False
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    # 32 MiB is the largest mmap threshold glibc accepts on 64-bit hosts.
    return all(mallopt(param, value) == 1 for param, value in (
        (_M_MMAP_THRESHOLD, 32 << 20), (_M_TRIM_THRESHOLD, 1 << 30), (_M_TOP_PAD, 64 << 20)))
