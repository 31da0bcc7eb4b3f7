"""What the daemon asks of glibc's allocator: fewer heaps, large blocks always mapped apart,
and free heap pages given back.

glibc gives each thread that allocates while another holds a heap's lock a heap of its own
(up to 8 per core); the daemon's worker threads (the default executor's, cgroup-io) got
four besides the main one, each keeping free chunks of its own. `limit_arenas` caps them
at ARENA_LIMIT before any thread starts: the workers allocate little and mostly with the
GIL held, so they seldom wait on a shared heap's lock (CreateContainer p50 unchanged).

glibc serves a block of MMAP_THRESHOLD bytes or more with a mapping of its own, returned at
free; but by default, once such a block is freed, it raises the threshold to that block's
size (up to 32 MiB), so the next ones of that size come from the heap. The daemon's large
blocks come and go (read batches' outputs and path blobs rebuilt as pods come and go,
/metrics pieces, report texts): in the heap they left holes that kept it growing with pod
churn. `fix_mmap_threshold` keeps the threshold at glibc's default of 128 KiB (bench
daemon_scale --drift: the figures in docs/PERFORMANCE.md, twenty-second pass).

A freed chunk in the middle of a heap is reused later but stays resident, and only the
free top of a heap is returned on its own. At 1,000 pods the heaps hold ~1.5-2.5 MiB of
such free pages, more as rounds, reports, /metrics renders and pod churn come and go;
`malloc_trim(0)` every TRIM_SECONDS hands the whole free pages of every heap back
(madvise), in well under a millisecond. The allocator maps them again when it reuses them.
Figures: the notes of stop 40 (bench/daemon_scale.py at 1,000 pods).

Without glibc (musl, another libc) neither call exists and nothing is done.
"""

from __future__ import annotations

import asyncio
import ctypes
from typing import Any, Callable

TRIM_SECONDS = 60.0
ARENA_LIMIT = 2
MMAP_THRESHOLD_BYTES = 128 * 1024  # glibc's default, kept from moving
M_ARENA_MAX = -8  # glibc's malloc.h
M_MMAP_THRESHOLD = -3


def _libc_function(name: str) -> Any | None:
    """A function of the process's own C library, or None where it has none."""
    try:
        return getattr(ctypes.CDLL(None), name)  # the process's own symbols: its libc
    except (OSError, AttributeError):
        return None


def limit_arenas(limit: int = ARENA_LIMIT) -> bool:
    """Cap glibc's heaps at `limit` (call before threads start); whether glibc took it."""
    return _mallopt(M_ARENA_MAX, limit)


def fix_mmap_threshold(threshold: int = MMAP_THRESHOLD_BYTES) -> bool:
    """Serve blocks of `threshold` bytes or more with their own mappings, whatever was freed
    before (glibc's dynamic threshold off); whether glibc took it."""
    return _mallopt(M_MMAP_THRESHOLD, threshold)


def _mallopt(option: int, value: int) -> bool:
    mallopt = _libc_function("mallopt")
    if mallopt is None:
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(option, value))


def glibc_trim() -> Callable[[], int] | None:
    """glibc's `malloc_trim(0)`, or None where the C library has none."""
    trim = _libc_function("malloc_trim")
    if trim is None:
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return lambda: trim(0)


async def trim_periodically(every: float = TRIM_SECONDS, trim: Callable[[], int] | None = None) -> None:
    """Call `trim` (glibc's by default) every `every` seconds, until cancelled."""
    trim = trim if trim is not None else glibc_trim()
    if trim is None:
        return
    while True:
        await asyncio.sleep(every)
        trim()
