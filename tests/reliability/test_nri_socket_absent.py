"""No NRI directory yet: the stub watches the nearest existing ancestor (no busy poll),
follows the directories down as they appear, registers once the runtime listens, and
never says the runtime is available when it never came."""

from __future__ import annotations

import asyncio

from structlog.testing import capture_logs

from nri.stub.backoff import BackoffPolicy
from nri.stub.socket_watch import WatchPolicy, nearest_existing, next_below
from nri.stub.stub import Stub, StubConfig
from nri.testing.peer import RuntimePeer
from tests.polling import until

NEVER = BackoffPolicy(initial=60.0, factor=2.0, cap=60.0)


class Quiet:
    async def synchronize(self, pods, containers):
        return []

    async def create_container(self, pod, container):
        return None


def stub_for(path, watched_poll: float = 60.0) -> Stub:
    # a safety poll longer than the test: only inotify can bring the stub back in time
    config = StubConfig(socket_path=str(path), backoff=NEVER, watch=WatchPolicy(poll=0.1, watched_poll=watched_poll))
    return Stub(Quiet(), name="watcher", index="10", config=config, environ={})


def test_the_nearest_existing_ancestor_and_the_next_step_down(tmp_path):
    target = tmp_path / "a" / "b" / "c"
    assert nearest_existing(str(target)) == str(tmp_path)
    assert next_below(str(tmp_path), str(target)) == "a"
    (tmp_path / "a").mkdir()
    assert nearest_existing(str(target)) == str(tmp_path / "a")


async def test_missing_directories_are_followed_down_without_polling(tmp_path):
    socket_path = tmp_path / "var" / "run" / "nri" / "nri.sock"
    stub = stub_for(socket_path)
    task = asyncio.get_running_loop().create_task(stub.run())
    try:
        await until(lambda: stub.dial_attempts >= 1)
        await asyncio.sleep(0.3)  # three 0.1 s polls' worth: a polling stub would dial again here
        assert stub.dial_attempts == 1
        for step in ("var", "var/run", "var/run/nri"):
            (tmp_path / step).mkdir()
        async with RuntimePeer(socket_path) as peer:
            await asyncio.wait_for(peer.wait_plugins(1), 10)
        assert stub.dial_attempts <= 3  # the first, the one the socket's directory woke, the live one
    finally:
        await stub.stop()
        await asyncio.gather(task, return_exceptions=True)


async def test_a_runtime_that_never_came_is_not_announced_at_stop(tmp_path):
    stub = stub_for(tmp_path / "nowhere" / "nri.sock")
    with capture_logs() as logs:
        task = asyncio.get_running_loop().create_task(stub.run())
        await until(lambda: stub.dial_attempts >= 1)
        await stub.stop()
        await asyncio.gather(task, return_exceptions=True)
    events = [entry["event"] for entry in logs]
    assert "nri_runtime_unavailable" in events and "nri_runtime_available" not in events
