"""SharedRender: callers of one key during a render share it, a finished render is reused
within its window and then rendered again, failures are not kept, a cancelled caller does
not cancel the others' render."""

from __future__ import annotations

import asyncio

import pytest

from koordlet.server.shared_render import SharedRender
from tests.polling import until


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class GatedRender:
    """A render that counts its calls and finishes when the test opens the gate."""

    def __init__(self) -> None:
        self.calls = 0
        self.gate = asyncio.Event()

    async def __call__(self) -> str:
        self.calls += 1
        call = self.calls
        await self.gate.wait()
        return "body %d" % call


async def test_callers_during_a_render_share_it_and_other_keys_render_their_own():
    share: SharedRender[str] = SharedRender(0.0)
    render = GatedRender()
    waiting = [asyncio.ensure_future(share.get("text", render)) for _ in range(5)]
    other = asyncio.ensure_future(share.get("gzip", render))
    await until(lambda: render.calls == 2)
    render.gate.set()
    assert await asyncio.gather(*waiting) == ["body 1"] * 5
    assert await other == "body 2"
    assert render.calls == 2


async def test_without_reuse_a_caller_after_the_render_gets_a_new_one_and_nothing_is_kept():
    share: SharedRender[str] = SharedRender(0.0)
    render = GatedRender()
    render.gate.set()
    assert await share.get("k", render) == "body 1"
    assert await share.get("k", render) == "body 2"
    assert share.kept == 0


async def test_a_finished_render_is_reused_within_the_window_from_its_start_then_rendered_again():
    clock = Clock()
    share: SharedRender[str] = SharedRender(1.0, clock)
    render = GatedRender()
    render.gate.set()
    assert await share.get("k", render) == "body 1"
    clock.now += 0.9
    assert await share.get("k", render) == "body 1"
    clock.now += 0.1  # 1 s after the render started
    assert await share.get("k", render) == "body 2"
    assert render.calls == 2


async def test_a_kept_render_is_dropped_when_its_reuse_ends():
    share: SharedRender[str] = SharedRender(0.05)
    render = GatedRender()
    render.gate.set()
    await share.get("k", render)
    assert share.kept == 1
    await until(lambda: share.kept == 0)


async def test_a_failed_render_fails_every_waiter_and_is_not_kept():
    share: SharedRender[str] = SharedRender(60.0)
    gate = asyncio.Event()
    calls = 0

    async def failing() -> str:
        nonlocal calls
        calls += 1
        await gate.wait()
        raise OSError("render failed")

    waiting = [asyncio.ensure_future(share.get("k", failing)) for _ in range(3)]
    await until(lambda: calls == 1)
    gate.set()
    for outcome in await asyncio.gather(*waiting, return_exceptions=True):
        assert isinstance(outcome, OSError)
    with pytest.raises(OSError):
        await share.get("k", failing)
    assert calls == 2 and share.kept == 0


async def test_a_cancelled_caller_leaves_the_render_to_the_others():
    share: SharedRender[str] = SharedRender(0.0)
    render = GatedRender()
    first = asyncio.ensure_future(share.get("k", render))
    second = asyncio.ensure_future(share.get("k", render))
    await until(lambda: render.calls == 1)
    first.cancel()
    await asyncio.gather(first, return_exceptions=True)
    render.gate.set()
    assert await second == "body 1"
    assert render.calls == 1


def test_a_negative_reuse_window_is_refused():
    with pytest.raises(ValueError):
        SharedRender(-1.0)
