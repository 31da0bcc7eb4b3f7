"""DeadlineTimer: many deadlines, one loop timer, each expiry reported once."""

from __future__ import annotations

import asyncio

from nri.ttrpc.deadline_timer import DeadlineTimer
from tests.polling import until


async def test_expiries_come_in_deadline_order_once_each():
    loop = asyncio.get_running_loop()
    fired: list[int] = []
    timer = DeadlineTimer(loop, fired.append)
    now = loop.time()
    timer.add(3, now + 0.03)
    timer.add(1, now + 0.01)
    timer.add(2, now + 0.02)
    await until(lambda: len(fired) >= 3)  # a busy machine runs the loop late, never out of order
    assert fired == [1, 2, 3]


async def test_discarded_and_closed_deadlines_never_fire():
    loop = asyncio.get_running_loop()
    fired: list[int] = []
    timer = DeadlineTimer(loop, fired.append)
    now = loop.time()
    timer.add(1, now + 0.01)
    timer.add(2, now + 0.02)
    timer.discard(1)
    await until(lambda: fired)  # 1 was due first: had it stayed, it would be here before 2
    assert fired == [2]
    timer.add(3, loop.time() + 0.01)
    timer.close()
    await asyncio.sleep(0.03)
    assert fired == [2]


async def test_a_past_deadline_fires_on_the_next_loop_turn():
    loop = asyncio.get_running_loop()
    fired: list[int] = []
    DeadlineTimer(loop, fired.append).add(7, loop.time() - 1)
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert fired == [7]
