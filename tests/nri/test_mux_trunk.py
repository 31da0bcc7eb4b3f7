"""The asyncio Trunk over real sockets: framing on the wire, reassembly, bad input."""

from __future__ import annotations

import asyncio
import socket

from nri.mux.frame import MuxDecoder
from nri.mux.trunk import PLUGIN_SERVICE_CONN, RUNTIME_SERVICE_CONN, Trunk
from tests.nri.wire_fixtures import on_both_loops, trunk_pair, wait_until


async def _raw_and_trunk() -> tuple[socket.socket, Trunk]:
    raw, other = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    raw.setblocking(False)
    return raw, await Trunk.open(other)


async def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    loop = asyncio.get_running_loop()
    out = b""
    while len(out) < size:
        chunk = await asyncio.wait_for(loop.sock_recv(sock, size - len(out)), 5)
        assert chunk, "peer closed"
        out += chunk
    return out


@on_both_loops
async def test_a_large_message_leaves_as_a_4096_byte_frame_then_the_rest() -> None:
    raw, trunk = await _raw_and_trunk()
    message = bytes(range(256)) * 40  # 10240 bytes
    trunk.conn(PLUGIN_SERVICE_CONN).write(message)
    wire = await _recv_exactly(raw, 8 + 4096 + 8 + (10240 - 4096))
    frames = MuxDecoder().feed(wire)
    assert [(c, len(p)) for c, p in frames] == [(1, 4096), (1, 6144)]
    assert b"".join(p for _, p in frames) == message
    trunk.close()
    raw.close()


@on_both_loops
async def test_bytes_split_anywhere_on_the_socket_are_reassembled_per_connection() -> None:
    raw, trunk = await _raw_and_trunk()
    one, two = trunk.conn(PLUGIN_SERVICE_CONN), trunk.conn(RUNTIME_SERVICE_CONN)
    wire = (
        (1).to_bytes(4, "big") + (5).to_bytes(4, "big") + b"hello"
        + (2).to_bytes(4, "big") + (3).to_bytes(4, "big") + b"abc"
        + (1).to_bytes(4, "big") + (6).to_bytes(4, "big") + b" world"
    )
    loop = asyncio.get_running_loop()
    for i in range(len(wire)):
        await loop.sock_sendall(raw, wire[i : i + 1])
        await asyncio.sleep(0)
    got_one = b""
    while len(got_one) < 11:
        got_one += await asyncio.wait_for(one.read(), 5)
    assert got_one == b"hello world"
    assert await asyncio.wait_for(two.read(), 5) == b"abc"
    trunk.close()
    raw.close()


@on_both_loops
async def test_frames_for_unopened_connections_are_dropped_and_the_trunk_lives_on() -> None:
    raw, trunk = await _raw_and_trunk()
    one = trunk.conn(PLUGIN_SERVICE_CONN)
    loop = asyncio.get_running_loop()
    await loop.sock_sendall(raw, (7).to_bytes(4, "big") + (2).to_bytes(4, "big") + b"xx")
    await loop.sock_sendall(raw, (1).to_bytes(4, "big") + (2).to_bytes(4, "big") + b"ok")
    assert await asyncio.wait_for(one.read(), 5) == b"ok"
    assert not trunk.is_closed
    trunk.close()
    raw.close()


@on_both_loops
async def test_an_absurd_frame_length_closes_the_trunk_and_every_connection() -> None:
    raw, trunk = await _raw_and_trunk()
    one, two = trunk.conn(1), trunk.conn(2)
    loop = asyncio.get_running_loop()
    await loop.sock_sendall(raw, (1).to_bytes(4, "big") + (0xFFFFFFFF).to_bytes(4, "big"))
    cause = await asyncio.wait_for(trunk.closed, 5)
    assert cause is not None and "protocol error" in cause
    assert one.is_closed and two.is_closed
    assert await one.read() == b""
    raw.close()


@on_both_loops
async def test_peer_eof_closes_every_virtual_connection() -> None:
    async with trunk_pair() as (left, right):
        conn = right.conn(2)
        reader = asyncio.create_task(conn.read())
        left.close("bye")
        assert await asyncio.wait_for(reader, 5) == b""
        assert await asyncio.wait_for(conn.closed, 5) == "eof"


@on_both_loops
async def test_paused_trunk_delivers_nothing_until_resumed() -> None:
    a, b = socket.socketpair()
    sender = await Trunk.open(a)
    receiver = await Trunk.open(b, paused=True)
    sender.conn(1).write(b"early")
    await asyncio.sleep(0.05)
    conn = receiver.conn(1)  # opened late: the frame must still be there
    receiver.resume_reading()
    assert await asyncio.wait_for(conn.read(), 5) == b"early"
    sender.close()
    receiver.close()


@on_both_loops
async def test_a_failing_receiver_closes_only_its_own_connection() -> None:
    async with trunk_pair() as (left, right):
        def explode(data: bytes) -> None:
            raise RuntimeError("receiver bug")

        bad = right.conn(1)
        bad.set_receiver(explode, lambda cause: None)
        good = right.conn(2)
        left.conn(1).write(b"boom")
        left.conn(2).write(b"fine")
        assert await asyncio.wait_for(good.read(), 5) == b"fine"
        await wait_until(lambda: bad.is_closed)
        assert not right.is_closed


@on_both_loops
async def test_from_streams_carries_the_same_frames() -> None:
    a, b = socket.socketpair()
    reader, writer = await asyncio.open_unix_connection(sock=a)
    streamed = Trunk.from_streams(reader, writer)
    native = await Trunk.open(b)
    native.conn(2).write(b"x" * 5000)
    got = b""
    conn = streamed.conn(2)
    while len(got) < 5000:
        got += await asyncio.wait_for(conn.read(), 5)
    streamed.conn(1).write(b"back")
    assert await asyncio.wait_for(native.conn(1).read(), 5) == b"back"
    assert got == b"x" * 5000
    native.close()
    await asyncio.wait_for(streamed.closed, 5)


@on_both_loops
async def test_writing_to_a_closed_connection_raises_connection_error() -> None:
    async with trunk_pair() as (left, _right):
        conn = left.conn(1)
        conn.close()
        try:
            conn.write(b"late")
        except ConnectionError:
            return
        raise AssertionError("write on a closed connection did not raise")


@on_both_loops
async def test_an_unread_connection_pauses_the_trunk_instead_of_buffering_without_bound() -> None:
    from nri.mux import trunk as trunk_module

    async with trunk_pair() as (sender, receiver):
        slow = receiver.conn(2)
        chunk = bytes(range(256)) * 4096  # 1 MiB
        total = trunk_module.QUEUE_HIGH_WATER + 4 * len(chunk)
        for _ in range(total // len(chunk)):
            sender.conn(2).write(chunk)
        await wait_until(lambda: receiver._flow_paused)
        got = 0
        while got < total:
            data = await asyncio.wait_for(slow.read(), 5)
            assert data, "closed early"
            got += len(data)
        assert got == total
        assert not receiver._flow_paused
