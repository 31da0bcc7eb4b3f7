"""The daemon's periodic malloc_trim: glibc's call really hands free heap pages back, and
the periodic task calls it until cancelled."""

from __future__ import annotations

import asyncio
import time

import pytest

from koordlet.daemon import heap_trim

CHUNK = 64 * 1024  # below glibc's mmap threshold: these come from the heap


def rss_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_glibc_trim_returns_the_free_pages_inside_the_heap() -> None:
    trim = heap_trim.glibc_trim()
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


def test_trim_periodically_calls_until_cancelled() -> None:
    calls: list[float] = []

    def trim() -> int:
        calls.append(time.monotonic())
        return 1

    async def scenario() -> int:
        task = asyncio.ensure_future(heap_trim.trim_periodically(0.01, trim))
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
    monkeypatch.setattr(heap_trim, "glibc_trim", lambda: None)
    asyncio.run(asyncio.wait_for(heap_trim.trim_periodically(3600.0), 5.0))
