"""Waiting in tests without a fixed sleep: poll a condition to a generous deadline, so a
busy machine makes a test slower, never red."""

from __future__ import annotations

import asyncio
from typing import Callable


async def until(predicate: Callable[[], object], timeout: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.005)
