"""A path the daemon serves a socket on is never a file it deletes: a regular file (or a
symlink) there refuses the start; a stale socket is replaced only after nobody answered it."""

from __future__ import annotations

import socket

import grpc
import pytest

from koordlet.server.grpc_unix import serve_unix


@pytest.mark.parametrize("make", ["file", "symlink"])
async def test_a_non_socket_at_the_path_is_left_alone_and_refused(tmp_path, make):
    path = tmp_path / "kubelet.sock"
    if make == "file":
        path.write_text("precious")
    else:
        (tmp_path / "target").write_text("precious")
        path.symlink_to(tmp_path / "target")
    server = grpc.aio.server()
    with pytest.raises(OSError, match="is not a socket"):
        await serve_unix(server, path)
    assert path.read_text() == "precious"
    await server.stop(None)


async def test_a_stale_socket_is_replaced(tmp_path):
    path = tmp_path / "kubelet.sock"
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(path))
    stale.close()  # bound, never listened: nobody answers
    server = grpc.aio.server()
    await serve_unix(server, path)
    try:
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        probe.connect(str(path))
        probe.close()
    finally:
        await server.stop(None)


async def test_a_live_socket_is_not_taken_over(tmp_path):
    path = tmp_path / "kubelet.sock"
    live = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    live.bind(str(path))
    live.listen(1)
    server = grpc.aio.server()
    try:
        with pytest.raises(OSError, match="another process serves"):
            await serve_unix(server, path)
    finally:
        live.close()
        await server.stop(None)
