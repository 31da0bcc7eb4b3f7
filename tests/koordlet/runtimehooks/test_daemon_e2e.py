"""The whole daemon, started as a process, registered to the NRI test peer."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from nri.testing import RuntimePeer
from tests.koordlet.daemon_process import DaemonProcess, start_daemon
from tests.koordlet.runtimehooks.fixtures import batch, ext_spec
from tests.koordlet.runtimehooks.nri_pods import nri_container, nri_pod
from tests.nri.conftest import socket_path  # noqa: F401  (fixture)
from tests.system.fake_trees import build_hybrid_tree, build_topology_tree

GiB = 1 << 30


async def get(daemon: DaemonProcess, path: str) -> tuple[int, bytes]:
    status, body, _ = await asyncio.to_thread(daemon.get, path)
    return status, body


async def until(check, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if await check():
            return True
        await asyncio.sleep(0.05)
    return False


@pytest.fixture
def fake_host(tmp_path: Path) -> Path:
    # the daemon's cgroup and sysfs roots: a fake tree, so nothing real is touched
    build_hybrid_tree(tmp_path / "host", cpus="0-3")
    build_topology_tree(tmp_path / "host", sockets=1, nodes_per_socket=1, cores_per_node=2, threads_per_core=2)
    return tmp_path / "host"


async def test_daemon_shapes_be_and_ls_pods_and_resyncs_after_runtime_restart(tmp_path, socket_path,
                                                                                fake_host) -> None:
    peer = RuntimePeer(socket_path)
    await peer.start()
    daemon = await asyncio.to_thread(start_daemon, tmp_path / "state", [
        "--runtime-hooks-nri-socket-path", str(socket_path), "--runtime-hooks-mode", "nri",
        "--cgroup-root-dir", str(fake_host / "sys" / "fs" / "cgroup"), "--sys-root-dir", str(fake_host / "sys"),
        "--proc-root-dir", str(fake_host / "proc"), "--log-level", "debug"])
    try:
        (plugin,) = await peer.wait_plugins(1, timeout=10)
        assert (plugin.name, plugin.index) == ("koordlet_nri", "00")
        assert await until(lambda: _ready(daemon))
        be = nri_pod("be1", "BE", {"node.koordinator.sh/extended-resource-spec": ext_spec(main=batch("1000", "2Gi"))})
        ls = nri_pod("ls1", "LS")
        for pod in (be, ls):
            await peer.run_pod_sandbox(pod)
        be_ctr = await peer.create_container(be, nri_container(be, "main"))
        ls_ctr = await peer.create_container(ls, nri_container(ls, "main", shares=512, quota=50_000, memory=GiB))
        res = be_ctr.linux.resources
        assert (res.cpu.shares.value, res.cpu.quota.value, res.memory.limit.value, res.cpu.cpus) == (
            1024, 100_000, 2 * GiB, "0-3")
        res = ls_ctr.linux.resources
        assert (res.cpu.shares.value, res.cpu.quota.value, res.memory.limit.value, res.cpu.cpus) == (
            512, 50_000, GiB, "0-3")
        status, body = await get(daemon, "/api/v1/pods")
        pods = {p["name"]: p for p in json.loads(body)["pods"]}
        assert status == 200 and pods["pod-be1"]["qosClass"] == "BE" and pods["pod-ls1"]["qosClass"] == "LS"
        assert pods["pod-be1"]["containers"][0]["spec"]["cpu_shares"] == 1024

        # the runtime restarts: the plugin comes back, is resynchronized, and shapes new pods
        await peer.stop()
        assert await until(lambda: _not_ready(daemon), 5)  # /readyz follows the NRI connection
        await asyncio.sleep(0.3)
        await peer.start()
        returned = time.monotonic()
        await peer.wait_plugins(1, timeout=10)
        print("reconnected and resynchronized %.2f s after the socket returned" % (time.monotonic() - returned))
        assert await until(lambda: _ready(daemon))
        be2 = nri_pod("be2", "BE", {"node.koordinator.sh/extended-resource-spec": ext_spec(main=batch("250", "1Gi"))})
        await peer.run_pod_sandbox(be2)
        created = await peer.create_container(be2, nri_container(be2, "main"))
        assert (created.linux.resources.cpu.shares.value, created.linux.resources.cpu.quota.value) == (256, 25_000)
    finally:
        code, _ = await asyncio.to_thread(daemon.terminate)
        await peer.stop()
    assert code == 0
    decisions = [json.loads(line) for line in daemon.stderr().splitlines()
                 if line.startswith("{") and '"runtime_hook_decision"' in line]
    created = [d for d in decisions if d["stage"] == "create_container"]
    # a debug line per decision, all made after RunPodSandbox: each pod's unnamed answer and
    # one per name its extended-resource-spec lists (be1 and be2: main); the creates reused them
    assert len(created) == 5 and {d["qos"] for d in created} == {"BE", "LS"}


async def _ready(daemon: DaemonProcess) -> bool:
    return (await get(daemon, "/readyz"))[0] == 200


async def _not_ready(daemon: DaemonProcess) -> bool:
    return (await get(daemon, "/readyz"))[0] == 503
