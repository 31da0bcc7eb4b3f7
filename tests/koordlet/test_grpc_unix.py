"""Our gRPC sockets: born 0600, a stale socket file is replaced, a live one is never stolen."""

from __future__ import annotations

import errno
import socket

import grpc
import pytest

from koordlet.server.grpc_unix import serve_unix


async def test_a_stale_socket_file_is_replaced(tmp_path) -> None:
    path = tmp_path / "kubelet.sock"
    dead = socket.socket(socket.AF_UNIX)
    dead.bind(str(path))
    dead.close()  # the file stays, nobody listens
    server = grpc.aio.server()
    await serve_unix(server, path)
    try:
        assert path.stat().st_mode & 0o777 == 0o600
    finally:
        await server.stop(None)


async def test_a_live_socket_is_not_taken_over(tmp_path) -> None:
    path = tmp_path / "kubelet.sock"
    live = socket.socket(socket.AF_UNIX)
    live.bind(str(path))
    live.listen()
    try:
        with pytest.raises(OSError) as info:
            await serve_unix(grpc.aio.server(), path)
        assert info.value.errno == errno.EADDRINUSE
        assert path.exists()
    finally:
        live.close()
