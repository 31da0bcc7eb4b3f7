"""Fixtures for the NRI stub / test-peer tests: short socket paths, pods and
containers shaped like the ones containerd 2.3.4 sent (protocols.md §3.9)."""

import asyncio
import contextlib
import importlib.util
import shutil
import tempfile
from pathlib import Path

import pytest

from proto.nri.pkg.api.v1alpha1 import api_pb2 as api

# Our end-to-end files run on both event loops: plugins run on uvloop in production.
_BOTH_LOOPS = (
    "test_e2e",
    "test_peer_misbehaviour",
    "test_stub_capture_replay",
    "test_stub_docs_example",
    "test_stub_reconnect",
)


def pytest_asyncio_loop_factories(config, item):
    if importlib.util.find_spec("uvloop") is not None and item.path.name.startswith(_BOTH_LOOPS):
        import uvloop

        return {"asyncio": asyncio.new_event_loop, "uvloop": uvloop.new_event_loop}
    return {"asyncio": asyncio.new_event_loop}


@pytest.fixture
def socket_path():
    # unix socket paths are limited to 108 bytes: pytest's tmp_path can be longer.
    directory = Path(tempfile.mkdtemp(prefix="nri-", dir="/tmp"))
    try:
        yield directory / "nri.sock"
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def make_pod(n: int = 1, qos: str = "LS") -> api.PodSandbox:
    pod = api.PodSandbox(
        id="pod%02d" % n + "0" * 58,
        name="pod-%d" % n,
        uid="uid-%d" % n,
        namespace="default",
        annotations={"koordinator.sh/qosClass": qos},
    )
    pod.linux.cgroup_parent = "/kubepods/burstable/poduid-%d" % n
    return pod


def make_container(n: int = 1, pod: api.PodSandbox | None = None) -> api.Container:
    pod = pod or make_pod(n)
    ctr = api.Container(id="ctr%02d" % n + "0" * 58, pod_sandbox_id=pod.id, name="app-%d" % n)
    ctr.linux.cgroups_path = pod.linux.cgroup_parent + "/" + ctr.id
    ctr.linux.resources.cpu.shares.value = 1024
    ctr.linux.resources.cpu.quota.value = 100000
    ctr.linux.resources.cpu.period.value = 100000
    ctr.linux.resources.memory.limit.value = 256 << 20
    return ctr


@contextlib.asynccontextmanager
async def started(stub, timeout: float = 5.0):
    """The stub started and connected; stopped, and its run task awaited, on the way out
    whatever the body did, so a failing test leaves no task behind."""
    task = await stub.start(timeout=timeout)
    try:
        yield stub
    finally:
        await stub.stop()
        await asyncio.wait_for(task, timeout)
