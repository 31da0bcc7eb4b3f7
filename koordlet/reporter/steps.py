"""Long pure computations as generators that yield between chunks, so the daemon can
give the event loop back every few milliseconds while a test simply runs them through.

A step function is a generator that yields None between chunks and returns its result.
"""

from __future__ import annotations

import asyncio
from typing import Generator, TypeVar

T = TypeVar("T")
Steps = Generator[None, None, T]

# Pods handled between two yields: ~50 pods is a few ms of aggregation on a busy core.
PODS_PER_STEP = 50


def run_steps(steps: Steps[T]) -> T:
    """Run to the end without yielding (tests, benches, anything off the loop)."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


async def run_steps_on_loop(steps: Steps[T]) -> T:
    """Run to the end, letting other tasks run at every yield."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value
        await asyncio.sleep(0)
