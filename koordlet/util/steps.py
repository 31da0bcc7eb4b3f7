"""Long pure computations as generators that yield between chunks, so the daemon can
give the event loop back every few milliseconds while a test simply runs them through.

A step function is a generator that yields None between chunks and returns its result.
"""

from __future__ import annotations

import asyncio
from typing import Generator, TypeVar

T = TypeVar("T")
Steps = Generator[None, None, T]

# Pods handled between two yields: 25 pods hold the loop ~2-5 ms on this 2-core machine under load
# (bench/nodemetric_build.py prints the figure). The reports and the NRI plugin's update flush use
# it; the reconciler takes fewer a step (its pods cost file reads and writes).
PODS_PER_STEP = 25


def _driven(steps: Steps[T], result: list[T]) -> Generator[None, None, None]:
    """Yields where `steps` yields; puts its return value in `result` at the end."""
    result.append((yield from steps))


def run_steps(steps: Steps[T]) -> T:
    """Run to the end without yielding (tests, benches, anything off the loop)."""
    result: list[T] = []
    for _ in _driven(steps, result):
        pass
    return result[0]


async def run_steps_on_loop(steps: Steps[T]) -> T:
    """Run to the end, letting other tasks run at every yield."""
    result: list[T] = []
    for _ in _driven(steps, result):
        await asyncio.sleep(0)
    return result[0]
