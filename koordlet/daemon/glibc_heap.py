"""What the daemon asks of glibc's allocator: fewer heaps, and free heap pages given back.

glibc gives each thread that allocates while another holds a heap's lock a heap of its own
(up to 8 per core); the daemon's worker threads (the default executor's, cgroup-io) got
four besides the main one, each keeping free chunks of its own. `limit_arenas` caps them
at ARENA_LIMIT before any thread starts: the workers allocate little and mostly with the
GIL held, so they seldom wait on a shared heap's lock (CreateContainer p50 unchanged).

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
M_ARENA_MAX = -8  # glibc's malloc.h


def _libc_function(name: str) -> Any | None:
    """A function of the process's own C library, or None where it has none."""
    try:
        return getattr(ctypes.CDLL(None), name)  # the process's own symbols: its libc
    except (OSError, AttributeError):
        return None


def limit_arenas(limit: int = ARENA_LIMIT) -> bool:
    """Cap glibc's heaps at `limit` (call before threads start); whether glibc took it."""
    mallopt = _libc_function("mallopt")
    if mallopt is None:
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_ARENA_MAX, limit))


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
