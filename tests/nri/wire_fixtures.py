"""Shared helpers for the asyncio wire tests: two trunks over a real socketpair."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest

from nri.loop import run, uvloop_available
from nri.mux.trunk import PLUGIN_SERVICE_CONN, Trunk
from nri.ttrpc.client import TtrpcClient
from nri.ttrpc.server import Handler, TtrpcServer
from tests.polling import until

PLUGIN_SERVICE = "nri.pkg.api.v1alpha1.Plugin"
RUNTIME_SERVICE = "nri.pkg.api.v1alpha1.Runtime"


def on_both_loops(test: Callable[[], Coroutine[Any, Any, None]]) -> Callable[[str], None]:
    """Turn `async def test_x()` into a sync test run once on asyncio and once on uvloop."""

    @pytest.mark.parametrize("loop_kind", ["asyncio", "uvloop"])
    def run_test(loop_kind: str) -> None:
        if loop_kind == "uvloop" and not uvloop_available():
            pytest.skip("uvloop is not installed")
        run(test(), prefer_uvloop=loop_kind == "uvloop")

    run_test.__name__ = test.__name__
    run_test.__qualname__ = test.__qualname__
    run_test.__doc__ = test.__doc__
    return run_test


async def wait_until(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    """Poll `condition` until true (tests.polling.until); fail the test instead of hanging."""
    await until(condition, timeout)


@dataclass
class Pair:
    runtime: Trunk
    plugin: Trunk
    client: TtrpcClient  # runtime side, conn 1
    server: TtrpcServer  # plugin side, conn 1
    serve_task: asyncio.Task[None]


@asynccontextmanager
async def trunk_pair() -> AsyncIterator[tuple[Trunk, Trunk]]:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    left = await Trunk.open(a)
    right = await Trunk.open(b)
    try:
        yield left, right
    finally:
        left.close("test done")
        right.close("test done")
        await asyncio.sleep(0)


@asynccontextmanager
async def rpc_pair(handlers: Mapping[tuple[str, str], Handler]) -> AsyncIterator[Pair]:
    async with trunk_pair() as (runtime, plugin):
        server = TtrpcServer(plugin.conn(PLUGIN_SERVICE_CONN), handlers)
        client = TtrpcClient(runtime.conn(PLUGIN_SERVICE_CONN))
        task = asyncio.get_running_loop().create_task(server.serve())
        try:
            yield Pair(runtime, plugin, client, server, task)
        finally:
            plugin.close("test done")
            await asyncio.wait_for(asyncio.gather(task, return_exceptions=True), 5)
