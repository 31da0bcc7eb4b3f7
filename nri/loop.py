"""Event-loop choice: uvloop when it is installed, the stdlib loop otherwise."""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def uvloop_available() -> bool:
    return importlib.util.find_spec("uvloop") is not None


def new_event_loop(prefer_uvloop: bool = True) -> asyncio.AbstractEventLoop:
    """A fresh event loop; uvloop's when available and wanted."""
    if prefer_uvloop and uvloop_available():
        import uvloop

        return uvloop.new_event_loop()
    return asyncio.new_event_loop()


def loop_factory(prefer_uvloop: bool = True) -> Callable[[], asyncio.AbstractEventLoop]:
    """For asyncio.Runner(loop_factory=...)."""
    return lambda: new_event_loop(prefer_uvloop)


def run(main: Coroutine[Any, Any, T], prefer_uvloop: bool = True) -> T:
    """asyncio.run() on the preferred loop."""
    with asyncio.Runner(loop_factory=loop_factory(prefer_uvloop)) as runner:
        return runner.run(main)


def loop_name(loop: asyncio.AbstractEventLoop) -> str:
    """'uvloop' or 'asyncio', for logs and benchmark output."""
    return "uvloop" if type(loop).__module__.startswith("uvloop") else "asyncio"
