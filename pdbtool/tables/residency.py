"""Keeping mapped tables in memory: pre-faulting, locking, and measuring residency.

A memory-mapped table costs disk reads wherever its pages are not in the page cache: after
a start, or after the kernel dropped cold pages. ``prefault`` asks for the pages
(madvise WILLNEED) and reads one byte per page; ``lock`` pins them (mlock); ``resident_bytes``
counts the pages in memory (mincore); ``detach`` swaps a table's file pages for zero pages
(mmap MAP_FIXED), so a file that shrinks later cannot fault the process, and ``attach``
maps the file back at the same addresses. Linux and other
POSIX systems; loads no numba.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os

import numpy as np

PAGE = mmap.PAGESIZE
STEP = 64 << 20  # pre-fault in slices, so a long pass can be stopped between them

_libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
_libc.mincore.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte))
_libc.mlock.argtypes = _libc.munlock.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
_libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
_libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                       ctypes.c_long)
_libc.mmap.restype = ctypes.c_void_p
MAP_FAILED = ctypes.c_void_p(-1).value


def _span(data: np.ndarray, start: int = 0, length: int | None = None) -> tuple[int, int]:
    """Page-aligned (address, length) covering data[start:start + length]."""
    length = data.nbytes - start if length is None else length
    addr = data.ctypes.data + start
    aligned = addr - addr % PAGE
    return aligned, length + (addr - aligned)


def resident_bytes(data: np.ndarray) -> int:
    """Bytes of ``data`` (a mapped array) in memory now."""
    if data.nbytes == 0:
        return 0
    addr, length = _span(data)
    pages = (length + PAGE - 1) // PAGE
    vec = (ctypes.c_ubyte * pages)()
    if _libc.mincore(ctypes.c_void_p(addr), length, vec) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mincore: {os.strerror(err)}")
    resident = int(np.count_nonzero(np.frombuffer(vec, np.uint8) & 1))
    return min(data.nbytes, resident * PAGE)


def prefault(data: np.ndarray, stop=None) -> None:
    """Bring every page of ``data`` into memory: WILLNEED, then read one byte per page.
    ``stop`` (a threading.Event) ends the pass early."""
    madv = getattr(mmap, "MADV_WILLNEED", 3)
    for start in range(0, data.nbytes, STEP):
        if stop is not None and stop.is_set():
            return
        length = min(STEP, data.nbytes - start)
        addr, span = _span(data, start, length)
        _libc.madvise(ctypes.c_void_p(addr), span, madv)  # advice only: errors do not matter
        first = (-(data.ctypes.data + start)) % PAGE  # offset of the first page start
        int(data[start + first:start + length:PAGE].sum())


def lock(data: np.ndarray) -> None:
    """Pin ``data``'s pages in memory (they are read in first); OSError naming the limit."""
    if data.nbytes == 0:
        return
    addr, length = _span(data)
    if _libc.mlock(ctypes.c_void_p(addr), length) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"cannot lock {data.nbytes / 2**20:,.1f} MiB of tables in memory: "
                           f"{os.strerror(err)} (raise `ulimit -l` or grant CAP_IPC_LOCK)")


def detach(data: np.ndarray) -> None:
    """Replace the pages under ``data`` (a mapped array) with anonymous zero pages, at the
    same addresses and read-only: every view of it stays valid and reads zeros, and the
    file it was mapped from no longer backs it (truncating the file cannot fault a reader).
    Atomic for a thread reading it meanwhile. Takes no lock (a signal handler calls it)."""
    if data.nbytes == 0:
        return
    addr, length = _span(data)
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | getattr(mmap, "MAP_FIXED", 0x10)
    if _libc.mmap(ctypes.c_void_p(addr), length, mmap.PROT_READ, flags, -1, 0) in (None, MAP_FAILED):
        err = ctypes.get_errno()
        raise OSError(err, f"mmap: {os.strerror(err)}")


def attach(data: np.ndarray, fd: int) -> None:
    """Map the file open as ``fd`` back under ``data`` (a np.memmap of it, detached
    before), at the same addresses, read-only and shared: every view reads the file again."""
    offset = getattr(data, "offset", None)
    if data.nbytes == 0 or offset is None:
        return
    addr, length = _span(data)
    start = offset - (data.ctypes.data - addr)  # the file offset of the first page
    flags = mmap.MAP_SHARED | getattr(mmap, "MAP_FIXED", 0x10)
    if _libc.mmap(ctypes.c_void_p(addr), length, mmap.PROT_READ, flags, fd, start) in (None, MAP_FAILED):
        err = ctypes.get_errno()
        raise OSError(err, f"mmap: {os.strerror(err)}")
