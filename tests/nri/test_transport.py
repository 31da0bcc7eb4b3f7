"""Unix-socket plumbing: serve_unix/dial with a ttrpc call across, modes, stale sockets, fd 3."""

from __future__ import annotations

import asyncio
import os
import socket
import stat
from pathlib import Path

import pytest

from nri.loop import loop_name, new_event_loop, uvloop_available
from nri.mux.trunk import PLUGIN_SERVICE_CONN, RUNTIME_SERVICE_CONN, Trunk
from nri.transport import dial, from_inherited_fd, serve_unix
from nri.ttrpc.client import TtrpcClient
from nri.ttrpc.server import CallContext, TtrpcServer
from proto.nri.pkg.api.v1alpha1 import api_pb2 as api
from tests.nri.wire_fixtures import RUNTIME_SERVICE, on_both_loops

_SOCKET_DIR = Path("/tmp")


def _socket_path() -> Path:
    return _SOCKET_DIR / ("koordlet-test-" + os.urandom(4).hex()) / "nri.sock"


@on_both_loops
async def test_plugin_dials_and_registers_with_a_serving_runtime() -> None:
    path = _socket_path()
    registered: list[tuple[str, str]] = []

    async def register(req: api.RegisterPluginRequest, ctx: CallContext) -> api.Empty:
        registered.append((req.plugin_name, req.plugin_idx))
        return api.Empty()

    async def on_trunk(trunk: Trunk) -> None:
        server = TtrpcServer(
            trunk.conn(RUNTIME_SERVICE_CONN),
            {(RUNTIME_SERVICE, "RegisterPlugin"): (api.RegisterPluginRequest, register)},
        )
        await server.serve()

    server = await serve_unix(path, on_trunk)
    try:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        trunk = await dial(path)
        client = TtrpcClient(trunk.conn(RUNTIME_SERVICE_CONN))
        await client.call(
            RUNTIME_SERVICE, "RegisterPlugin",
            api.RegisterPluginRequest(plugin_name="koordlet", plugin_idx="10"),
            api.Empty, timeout=2,
        )
        assert trunk.peer_pid() == os.getpid()
        trunk.close()
    finally:
        server.close()
        await server.wait_closed()
        path.unlink(missing_ok=True)
        path.parent.rmdir()
    assert registered == [("koordlet", "10")]


@on_both_loops
async def test_a_stale_socket_is_replaced_but_a_regular_file_is_not() -> None:
    path = _socket_path()
    path.parent.mkdir(mode=0o700)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(path))
    stale.close()

    async def ignore(trunk: Trunk) -> None:
        return None

    server = await serve_unix(path, ignore, mode=0o660)
    assert stat.S_IMODE(path.stat().st_mode) == 0o660
    server.close()
    await server.wait_closed()
    path.unlink()
    path.write_text("not a socket")
    try:
        with pytest.raises(FileExistsError):
            await serve_unix(path, ignore)
    finally:
        path.unlink()
        path.parent.rmdir()


@on_both_loops
async def test_a_failing_session_handler_closes_only_its_trunk() -> None:
    path = _socket_path()

    async def broken(trunk: Trunk) -> None:
        raise RuntimeError("handler bug")

    server = await serve_unix(path, broken)
    try:
        first = await dial(path)
        assert await asyncio.wait_for(first.closed, 5) == "eof"
        second = await dial(path)  # the listener still accepts
        await asyncio.wait_for(second.closed, 5)
    finally:
        server.close()
        await server.wait_closed()
        path.unlink(missing_ok=True)
        path.parent.rmdir()


@on_both_loops
async def test_inherited_fd_becomes_a_trunk() -> None:
    runtime_end, plugin_end = socket.socketpair()
    runtime = await Trunk.open(runtime_end)
    plugin = await from_inherited_fd(os.dup(plugin_end.fileno()))
    plugin_end.close()
    runtime.conn(PLUGIN_SERVICE_CONN).write(b"configure")
    assert await asyncio.wait_for(plugin.conn(PLUGIN_SERVICE_CONN).read(), 5) == b"configure"
    runtime.close()
    plugin.close()


def test_new_event_loop_prefers_uvloop_when_installed() -> None:
    loop = new_event_loop()
    try:
        assert loop_name(loop) == ("uvloop" if uvloop_available() else "asyncio")
    finally:
        loop.close()
    plain = new_event_loop(prefer_uvloop=False)
    try:
        assert loop_name(plain) == "asyncio"
    finally:
        plain.close()
