"""gRPC servers on unix sockets that the daemon owns (PodResources, QRM registration)."""

from __future__ import annotations

import errno
import os
import socket as socket_module
import stat
from pathlib import Path

import grpc


def socket_mode(group: int | None) -> int:
    """0600, or 0660 when a group is to share the socket."""
    return 0o600 if group is None else 0o660


async def serve_unix(server: grpc.aio.Server, socket: Path, mode: int = 0o600, group: int | None = None) -> None:
    """Bind `server` on a unix socket (replacing a stale one) with `mode` (and `group`), and start it."""
    socket.parent.mkdir(parents=True, exist_ok=True)
    if os.path.lexists(socket):
        if not stat.S_ISSOCK(os.lstat(socket).st_mode):  # never remove what is not ours to remove
            raise OSError(errno.EEXIST, "%s exists and is not a socket" % socket)
        if _someone_listens(socket):
            raise OSError(errno.EADDRINUSE, "another process serves %s" % socket)
        socket.unlink()  # stale: left by a process that died
    old_umask = os.umask(0o777 & ~mode)  # the socket is born with `mode`, no window
    try:
        server.add_insecure_port("unix://" + str(socket))
        await server.start()
    finally:
        os.umask(old_umask)
    if group is not None:
        os.chown(socket, -1, group)
    os.chmod(socket, mode)


def _someone_listens(path: Path) -> bool:
    probe = socket_module.socket(socket_module.AF_UNIX, socket_module.SOCK_STREAM)
    try:
        probe.connect(str(path))
    except OSError:
        return False
    finally:
        probe.close()
    return True
