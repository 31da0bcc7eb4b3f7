"""One render for the scrapes that ask for the same exposition at about the same time.

A /metrics render at 1,000 pods is ~12 ms of CPU and a few MB of text while it is built.
Clients that scrape at once (a Prometheus HA pair, a dashboard beside it, or any client
looping on the port) each started their own before: their CPU added up, and the renders in
flight at once (up to the worker pool's size) raised the allocators' peak, which stays in
the RSS afterwards. Here a request waits for the render of its kind already under way, and
one that arrives within `reuse_seconds` of the start of the last finished render gets
that one: a client looping on /metrics costs at most one render of each kind that often,
and a body is at most `reuse_seconds` plus one render older than the request (the
collectors sample once a second). The kept body is dropped when its reuse ends, so nothing
is held between two ordinary scrapes.
"""

from __future__ import annotations

import asyncio
import time
from typing import Awaitable, Callable, Generic, Hashable, TypeVar

_Result = TypeVar("_Result")


class SharedRender(Generic[_Result]):
    """Renders by key: one at a time for each key, its result shared by the callers that
    asked while it ran, and by those that ask within `reuse_seconds` of its start."""

    def __init__(self, reuse_seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        if not reuse_seconds >= 0:
            raise ValueError("reuse_seconds must be 0 or more, got %r" % (reuse_seconds,))
        self._reuse_seconds = reuse_seconds
        self._clock = clock
        self._running: dict[Hashable, asyncio.Future[_Result]] = {}
        self._finished: dict[Hashable, tuple[float, _Result]] = {}

    @property
    def kept(self) -> int:
        """Finished results still kept for reuse."""
        return len(self._finished)

    async def get(self, key: Hashable, render: Callable[[], Awaitable[_Result]]) -> _Result:
        """The result for `key`: a finished one still fresh, the one being made, or a new one
        from `render()`. A caller that is cancelled does not cancel the render the others wait for."""
        finished = self._finished.get(key)
        if finished is not None and self._clock() - finished[0] < self._reuse_seconds:
            return finished[1]
        running = self._running.get(key)
        if running is None:
            running = asyncio.ensure_future(self._render(key, render))
            running.add_done_callback(_retrieved)  # its error is each waiter's, or no one's
            self._running[key] = running
        return await asyncio.shield(running)

    async def _render(self, key: Hashable, render: Callable[[], Awaitable[_Result]]) -> _Result:
        started = self._clock()
        try:
            result = await render()
        finally:
            del self._running[key]
        if self._reuse_seconds > 0:
            entry = (started, result)
            self._finished[key] = entry
            asyncio.get_running_loop().call_later(self._reuse_seconds, self._forget, key, entry)
        return result

    def _forget(self, key: Hashable, entry: tuple[float, _Result]) -> None:
        if self._finished.get(key) is entry:  # not a newer render's
            del self._finished[key]


def _retrieved(future: asyncio.Future) -> None:
    if not future.cancelled():
        future.exception()  # marks it retrieved: no "never retrieved" log when every waiter left
