"""Unix-socket plumbing for NRI trunks: dial the runtime, or serve plugins (test peer)."""

from __future__ import annotations

import asyncio
import os
import socket
import stat
from collections.abc import Awaitable, Callable
from pathlib import Path

import structlog

from nri.mux.trunk import Trunk

log = structlog.get_logger(__name__)

DEFAULT_NRI_SOCKET = "/var/run/nri/nri.sock"
PLUGIN_SOCKET_ENV = "NRI_PLUGIN_SOCKET"

TrunkHandler = Callable[[Trunk], Awaitable[None]]


async def dial(path: str | os.PathLike[str] = DEFAULT_NRI_SOCKET, *, paused: bool = False) -> Trunk:
    """Connect to the runtime's NRI socket and wrap it in a Trunk."""
    loop = asyncio.get_running_loop()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.setblocking(False)
    try:
        await loop.sock_connect(sock, os.fspath(path))
    except BaseException:
        sock.close()
        raise
    return await Trunk.open(sock, paused=paused)


async def from_inherited_fd(fd: int, *, paused: bool = False) -> Trunk:
    """Wrap the pre-connected trunk a runtime hands a launched plugin (fd 3)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM, fileno=fd)
    return await Trunk.open(sock, paused=paused)


def _remove_stale_socket(path: Path) -> None:
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise FileExistsError(str(path) + " exists and is not a socket")
    path.unlink()


async def serve_unix(
    path: str | os.PathLike[str], on_trunk: TrunkHandler, mode: int = 0o600
) -> asyncio.AbstractServer:
    """Listen on a unix socket; run `await on_trunk(trunk)` for every connection.

    The trunk starts reading once on_trunk has run up to its first await, so it can
    open its virtual connections first. A failing on_trunk closes that trunk only.
    """
    loop = asyncio.get_running_loop()
    sock_path = Path(path)
    sock_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    _remove_stale_socket(sock_path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(os.fspath(sock_path))
        os.chmod(sock_path, mode)
        sock.listen(16)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    sessions: set[asyncio.Task[None]] = set()

    async def _session(trunk: Trunk) -> None:
        try:
            await on_trunk(trunk)
        except asyncio.CancelledError:
            trunk.close("server stopped")
            raise
        except Exception as err:  # one bad session must not stop the listener
            log.error("nri_trunk_handler_failed", error=repr(err), exc_info=True)
            trunk.close("handler failed: " + repr(err))

    def _on_connected(trunk: Trunk) -> None:
        task = loop.create_task(_session(trunk))
        sessions.add(task)
        task.add_done_callback(sessions.discard)
        loop.call_soon(trunk.resume_reading)  # runs after the session's first step

    server = await loop.create_unix_server(
        lambda: Trunk.for_server_connection(loop, _on_connected), sock=sock
    )
    log.info("nri_socket_listening", path=os.fspath(sock_path), mode=oct(mode))
    return server
