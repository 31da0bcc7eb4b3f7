"""Reconnect after the runtime's socket comes back: watched, not a blind backoff.

The backoff in these tests is set far beyond every wait bound, so a stub that
slept through it instead of watching the socket path could not pass; no test
asserts a duration."""

import asyncio
import errno
import os
import socket

import pytest
from structlog.testing import capture_logs

from nri.stub.backoff import BackoffPolicy
from nri.stub.socket_watch import (
    RetryKind,
    SocketWatcher,
    WatchPolicy,
    names_in_events,
    retry_kind,
    watch_timeout,
)
from nri.stub.stub import Stub, StubConfig
from nri.testing.peer import RuntimePeer
from tests.nri.conftest import make_container, make_pod
from tests.polling import until

T = 5.0  # bound of any single wait
NEVER = BackoffPolicy(initial=60.0, factor=2.0, cap=60.0)  # longer than any test waits


class Recorder:
    def __init__(self):
        self.synced = []

    async def synchronize(self, pods, containers):
        self.synced.append((len(pods), len(containers)))
        return []

    async def create_container(self, pod, container):
        return None


def _stub(plugin, path, backoff=NEVER):
    # The first successful session ends with a backoff(1) sleep before redialing:
    # that one is short here, the rest (failures) would be a minute.
    config = StubConfig(socket_path=str(path), backoff=backoff)
    return Stub(plugin, name="watcher", index="10", config=config, environ={})


def _err(code):
    return OSError(code, os.strerror(code))


# -- the pure decisions ----------------------------------------------------------------


@pytest.mark.parametrize(
    "code, kind",
    [
        (errno.ENOENT, RetryKind.WATCH),
        (errno.ENOTDIR, RetryKind.WATCH),
        (errno.ECONNREFUSED, RetryKind.WATCH),
        (errno.EACCES, RetryKind.BACKOFF),
        (errno.EPERM, RetryKind.BACKOFF),
        (errno.ECONNRESET, RetryKind.BACKOFF),
        (errno.EMFILE, RetryKind.BACKOFF),
    ],
)
def test_only_an_absent_or_refusing_socket_is_watched(code, kind):
    assert retry_kind(_err(code)) is kind


def test_refused_socket_and_missing_inotify_poll_fast_a_watched_absence_waits_longer():
    policy = WatchPolicy(poll=0.05, watched_poll=0.7)
    assert watch_timeout(_err(errno.ECONNREFUSED), policy, inotify_active=True) == 0.05
    assert watch_timeout(_err(errno.ENOENT), policy, inotify_active=False) == 0.05
    assert watch_timeout(_err(errno.ENOENT), policy, inotify_active=True) == 0.7


def test_watch_policy_refuses_a_poll_longer_than_the_watched_poll():
    with pytest.raises(ValueError):
        WatchPolicy(poll=2.0, watched_poll=1.0)
    with pytest.raises(ValueError):
        WatchPolicy(poll=0.0)


def test_inotify_event_buffer_yields_names_and_the_end_of_the_watch():
    import struct

    def event(mask, name=b""):
        padded = name + b"\0" * (16 - len(name)) if name else b""
        return struct.pack("iIII", 1, mask, 0, len(padded)) + padded

    names, ended = names_in_events(event(0x100, b"nri.sock") + event(0x80, b"other"))
    assert (names, ended) == (["nri.sock", "other"], False)
    assert names_in_events(event(0x400) + event(0x8000)) == ([], True)
    assert names_in_events(b"") == ([], False)


# -- the watcher on a real directory -----------------------------------------------------


async def test_watcher_wakes_when_the_socket_is_created(socket_path):
    watcher = SocketWatcher(str(socket_path), asyncio.get_running_loop())
    try:
        assert await watcher.wait(T) is True  # arming counts as a change (nothing missed)
        assert watcher.active
        waiting = asyncio.ensure_future(watcher.wait(T))
        await asyncio.sleep(0)
        assert not waiting.done()
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(socket_path))
        try:
            assert await asyncio.wait_for(waiting, T) is True
        finally:
            listener.close()
    finally:
        watcher.close()


async def test_watcher_ignores_other_names_and_times_out(socket_path):
    watcher = SocketWatcher(str(socket_path), asyncio.get_running_loop())
    try:
        await watcher.wait(T)
        (socket_path.parent / "unrelated").write_text("x")
        assert await watcher.wait(0.05) is False
    finally:
        watcher.close()


async def test_watcher_watches_the_nearest_ancestor_while_the_directory_is_missing(tmp_path):
    watcher = SocketWatcher(str(tmp_path / "absent" / "nri.sock"), asyncio.get_running_loop())
    try:
        assert await watcher.wait(0.01) is False
        assert watcher.active and not watcher.watching_socket_dir
        (tmp_path / "absent").mkdir()
        assert await watcher.wait(T) is True  # the socket's directory appeared and is watched now
        assert watcher.watching_socket_dir
    finally:
        watcher.close()


# -- the stub against the test peer ------------------------------------------------------


async def _stopped(stub, task):
    await stub.stop()
    await asyncio.wait_for(task, T)


async def test_restarted_peer_is_rejoined_when_its_socket_returns_not_after_a_backoff(socket_path):
    pod = make_pod(1)
    ctr = make_container(1, pod)
    transitions = []
    plugin = Recorder()
    async with RuntimePeer(socket_path) as peer:
        stub = _stub(plugin, socket_path, BackoffPolicy(initial=0.01, factor=6000.0, cap=60.0))
        stub.add_ready_callback(transitions.append)
        task = await stub.start(timeout=T)
        try:
            peer.state.pods[pod.id] = pod
            peer.state.containers[ctr.id] = ctr
            with capture_logs() as logs:
                dials = stub.dial_attempts
                await peer.stop()
                # several failed dials; each would be a minute of backoff if the stub were
                # not watching the path
                await until(lambda: transitions == [True, False] and stub.dial_attempts >= dials + 2)
                await peer.start()
                (p,) = await peer.wait_plugins(1, timeout=T)
                await asyncio.wait_for(stub.ready.wait(), T)
            assert p.record.methods()[:2] == ["Configure", "Synchronize"]
            assert plugin.synced == [(0, 0), (1, 1)]  # resynchronized with the new state
            assert transitions == [True, False, True]
            assert stub.connections == 2
            events = [entry["event"] for entry in logs]
            assert events.count("nri_runtime_unavailable") == 1  # once per outage
            assert events.count("nri_runtime_available") == 1
            assert events.index("nri_runtime_unavailable") < events.index("nri_runtime_available")
            assert next(e for e in logs if e["event"] == "nri_runtime_available")["attempts"] >= 2
        finally:
            await _stopped(stub, task)


async def test_stale_socket_file_that_refuses_is_polled_until_the_runtime_listens(socket_path):
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(socket_path))  # bound, never listening: dials are refused
    plugin = Recorder()
    stub = _stub(plugin, socket_path)
    task = asyncio.get_running_loop().create_task(stub.run())
    try:
        await until(lambda: stub.dial_attempts >= 2)  # refused, and dialed again
        assert not stub.is_ready
        stale.close()
        async with RuntimePeer(socket_path) as peer:  # replaces the stale file
            await peer.wait_plugins(1, timeout=T)
            await asyncio.wait_for(stub.ready.wait(), T)
            assert plugin.synced == [(0, 0)]
    finally:
        stale.close()
        await _stopped(stub, task)


async def test_a_runtime_that_accepts_and_drops_us_is_retried_with_backoff(socket_path):
    accepted = []

    def _drop(reader, writer):
        accepted.append(1)
        writer.close()

    server = await asyncio.start_unix_server(_drop, path=str(socket_path))
    stub = _stub(Recorder(), socket_path)  # backoff: a minute after the first drop
    task = asyncio.get_running_loop().create_task(stub.run())
    try:
        await until(lambda: len(accepted) == 1)
        await asyncio.sleep(0.5)  # a spinning stub would dial again here; a backing-off one does not
        assert len(accepted) == 1  # one dial, then backing off; no fast spin
        assert not stub.is_ready
    finally:
        server.close()
        await server.wait_closed()
        await _stopped(stub, task)


async def test_stop_during_an_outage_ends_run_promptly(socket_path):
    stub = _stub(Recorder(), socket_path)
    task = asyncio.get_running_loop().create_task(stub.run())
    await asyncio.sleep(0.05)
    await _stopped(stub, task)
    assert task.done()
