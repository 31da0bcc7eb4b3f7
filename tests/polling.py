"""Waiting in tests without a fixed sleep: poll a condition to a generous deadline, so a
busy machine makes a test slower, never red."""

from __future__ import annotations

import asyncio
import time
from typing import Awaitable, Callable, TypeVar

T = TypeVar("T")


async def until(predicate: Callable[[], object], timeout: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.005)


def until_blocking(predicate: Callable[[], object], timeout: float = 30.0, step: float = 0.05) -> None:
    """`until` for a test without an event loop: polls in the calling thread."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(step)


async def until_answer(ask: Callable[[], Awaitable[T]], predicate: Callable[[T], object],
                       timeout: float = 30.0) -> T:
    """Ask again (an async route, say) until the answer satisfies `predicate`; returns it."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate(answer := await ask()):
        assert asyncio.get_running_loop().time() < deadline, "answer not reached in time"
        await asyncio.sleep(0.005)
    return answer


class LoopTurns:
    """`async with LoopTurns() as turns:` counts the turns another task gets on the loop
    while the block runs (`turns.count`): work done in steps that yield lets it run."""

    def __init__(self) -> None:
        self.count = 0
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> LoopTurns:
        self._task = asyncio.ensure_future(self._tick())
        await asyncio.sleep(0)  # the ticker is running
        self.count = 0
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._task is not None
        self._task.cancel()

    async def _tick(self) -> None:
        while True:
            self.count += 1
            await asyncio.sleep(0)
