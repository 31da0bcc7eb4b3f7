"""Give glibc's free heap pages back to the kernel now and then.

glibc keeps what Python frees inside its heaps (the main one and one per worker thread
that allocated): a freed chunk in the middle of a heap is reused later but stays resident,
and only the free top of a heap is returned on its own. At 1,000 pods the daemon's heaps
hold ~1.5-2.5 MiB of such free pages, and more each minute as rounds, reports and /metrics
renders come and go; `malloc_trim(0)` hands the whole free pages of every heap back
(madvise), in well under a millisecond (bench/daemon_scale.py, the notes of stop 40).
Nothing else changes: the allocator maps the pages again when it reuses them.

Without glibc (musl, another libc) there is no `malloc_trim` and nothing is done.
"""

from __future__ import annotations

import asyncio
import ctypes
from typing import Callable

TRIM_SECONDS = 60.0


def glibc_trim() -> Callable[[], int] | None:
    """glibc's `malloc_trim(0)`, or None where the C library has none."""
    try:
        trim = ctypes.CDLL(None).malloc_trim  # the process's own symbols: its libc
    except (OSError, AttributeError):
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
