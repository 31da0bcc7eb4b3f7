"""What the daemon asks of glibc: fewer heaps for its threads, and a periodic malloc_trim
that really hands free heap pages back."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import pytest

from koordlet.daemon import glibc_heap

CHUNK = 64 * 1024  # below glibc's mmap threshold: these come from the heap

# Four threads allocate from the heap, one after the other, each kept alive until all
# have: glibc gives each a heap of its own while it may make more; prints how many heaps
# malloc_info lists.
HEAPS_AFTER_THREADS = """
import ctypes, os, sys, tempfile, threading
from koordlet.daemon import glibc_heap
if sys.argv[1] == "limit" and not glibc_heap.limit_arenas(2):  # not an assert: run under -O too
    sys.exit("glibc did not take the limit")
libc = ctypes.CDLL(None)
done, chunks = threading.Event(), []
def work():
    chunks.append(bytes(65536))
    done.wait()
threads = [threading.Thread(target=work) for _ in range(4)]
for thread in threads:
    thread.start()
while len(chunks) < 4:
    pass
with tempfile.TemporaryFile() as out:
    libc.fdopen.restype = ctypes.c_void_p
    stream = ctypes.c_void_p(libc.fdopen(os.dup(out.fileno()), b"w"))
    libc.malloc_info(0, stream)
    libc.fclose(stream)
    out.seek(0)
    print(out.read().count(b"<heap nr="))
done.set()
"""


# A large block mapped and freed, then a smaller one that is still above glibc's default
# threshold: prints whether that one got a mapping of its own (malloc_info's mmap count).
MAPPED_AFTER_A_FREE = """
import ctypes, os, re, sys, tempfile
from koordlet.daemon import glibc_heap
if sys.argv[1] == "fixed" and not glibc_heap.fix_mmap_threshold():  # not an assert: run under -O too
    sys.exit("glibc did not take the threshold")
libc = ctypes.CDLL(None)
libc.fdopen.restype = ctypes.c_void_p
def mapped():
    with tempfile.TemporaryFile() as out:
        stream = ctypes.c_void_p(libc.fdopen(os.dup(out.fileno()), b"w"))
        libc.malloc_info(0, stream)
        libc.fclose(stream)
        out.seek(0)
        return int(re.findall(rb'<total type="mmap" count="([0-9]+)"', out.read())[-1])
big = bytes(4 << 20)
del big  # glibc's dynamic threshold: now 4 MiB, unless fixed
before = mapped()
kept = bytes(512 << 10)
print(mapped() - before)
"""


def test_large_blocks_stay_mapped_apart_after_a_larger_one_is_freed() -> None:
    if glibc_heap.glibc_trim() is None:
        pytest.skip("no glibc in this process")
    counts = {how: subprocess.run([sys.executable, "-c", MAPPED_AFTER_A_FREE, how], check=True, capture_output=True,
                                  text=True).stdout.strip() for how in ("default", "fixed")}
    assert counts == {"default": "0", "fixed": "1"}  # glibc's own behaviour first: the test can see the fix


def rss_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_glibc_trim_returns_the_free_pages_inside_the_heap() -> None:
    trim = glibc_heap.glibc_trim()
    if trim is None:
        pytest.skip("no glibc malloc_trim in this process")
    trim()
    chunks = [bytes(CHUNK) for _ in range(512)]  # 32 MiB, each page touched
    pin = bytes(CHUNK)  # after them: their space is not the heap's free top, which glibc trims alone
    grown = rss_kib()
    del chunks[:]
    kept = rss_kib()
    trim()
    trimmed = rss_kib()
    assert pin and grown - trimmed >= 16 * 1024, (grown, kept, trimmed)


def heaps_after_threads(mode: str) -> int:
    run = subprocess.run([sys.executable, "-c", HEAPS_AFTER_THREADS, mode], capture_output=True, text=True,
                         timeout=60, check=True)
    return int(run.stdout)


def test_limit_arenas_caps_the_heaps_threads_get() -> None:
    if glibc_heap.glibc_trim() is None:
        pytest.skip("no glibc malloc in this process")
    assert heaps_after_threads("plain") >= 3  # the main heap and one per thread (up to 8 per core)
    assert heaps_after_threads("limit") <= 2


def test_trim_periodically_calls_until_cancelled() -> None:
    calls: list[float] = []

    def trim() -> int:
        calls.append(time.monotonic())
        return 1

    async def scenario() -> int:
        task = asyncio.ensure_future(glibc_heap.trim_periodically(0.01, trim))
        deadline = time.monotonic() + 10
        while len(calls) < 3 and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return len(calls)

    after_cancel = asyncio.run(scenario())
    assert after_cancel >= 3 and len(calls) == after_cancel


def test_trim_periodically_without_a_trim_returns_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(glibc_heap, "glibc_trim", lambda: None)
    asyncio.run(asyncio.wait_for(glibc_heap.trim_periodically(3600.0), 5.0))
