"""kill -9 the real daemon in the middle of a stream of admissions coming over NRI from the
runtime test peer; one pod goes away while it is down; restart it: every container the
runtime still has keeps exactly its CPUs, the gone pod's CPUs are released once NRI has
resynchronized, nothing is held twice."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path

import pytest

from nri.testing import RuntimePeer
from system.cpuset import parse_cpuset
from tests.koordlet.daemon_process import start_daemon
from tests.koordlet.runtimehooks.nri_pods import nri_container, nri_pod
from tests.koordlet.runtimehooks.test_daemon_e2e import get, until
from tests.nri.conftest import socket_path  # noqa: F401  (fixture)
from tests.system.fake_trees import build_hybrid_tree, build_topology_tree

pytestmark = pytest.mark.slow
DEDICATED = {"katalyst.kubewharf.io/qos_level": "dedicated_cores"}


def daemon_args(host: Path, tmp: Path, socket: Path) -> list[str]:
    return ["--runtime-hooks-nri-socket-path", str(socket), "--runtime-hooks-mode", "nri",
            "--cgroup-root-dir", str(host / "sys" / "fs" / "cgroup"), "--sys-root-dir", str(host / "sys"),
            "--proc-root-dir", str(host / "proc"), "--topology-policy-name", "single-numa-node",
            "--reserved-cpus", "0", "--orm-reconcile-period", "200ms",
            "--pod-resources-server-endpoint", "unix:" + str(tmp / "pr.sock"), "--qrm-socket-dirs", str(tmp / "qrm")]


async def allocations(daemon) -> dict[str, str]:
    status, body = await get(daemon, "/api/v1/topology")
    assert status == 200
    return {row["podUid"]: row["allocationResult"] for row in json.loads(body)["allocations"]
            if row["resourceName"] == "cpu"}


async def test_allocations_survive_kill_9_of_the_daemon(tmp_path, socket_path) -> None:  # noqa: F811
    host = tmp_path / "host"
    build_hybrid_tree(host, cpus="0-15")
    build_topology_tree(host, sockets=2, nodes_per_socket=2, cores_per_node=2, threads_per_core=2)
    peer = RuntimePeer(socket_path)
    await peer.start()
    args = daemon_args(host, tmp_path, socket_path)
    daemon = await asyncio.to_thread(start_daemon, tmp_path / "state", args)
    acked: dict[str, str] = {}
    killed = asyncio.Event()

    async def stream() -> None:
        for i in range(14):
            if killed.is_set():
                return
            pod = nri_pod("d%02d" % i, "LSR", DEDICATED)
            await peer.run_pod_sandbox(pod)
            try:
                created = await peer.create_container(pod, nri_container(pod, "main", shares=1024, quota=100000))
            except Exception:  # noqa: BLE001 - the plugin died under this call
                return
            if not killed.is_set():
                acked[pod.uid] = created.linux.resources.cpu.cpus

    try:
        await peer.wait_plugins(1, timeout=10)
        runner = asyncio.create_task(stream())
        assert await until(lambda: _at_least(acked, 6))
        os.kill(daemon.proc.pid, signal.SIGKILL)
        killed.set()
        await asyncio.to_thread(daemon.stop)
        await runner
        assert all(cpus and 0 not in parse_cpuset(cpus) for cpus in acked.values())
        gone_uid = sorted(acked)[0]
        gone = peer.state.pods[next(k for k, p in peer.state.pods.items() if p.uid == gone_uid)]
        await peer.stop_pod_sandbox(gone)
        await peer.remove_pod_sandbox(gone)
        del acked[gone_uid]

        daemon = await asyncio.to_thread(start_daemon, tmp_path / "state", args)
        assert await until(lambda: _has_all(daemon, acked), 15)
        assert await until(lambda: _released(daemon, gone_uid), 15), "the gone pod kept its CPUs"
        after = await allocations(daemon)
        for uid, cpus in acked.items():
            assert after[uid] == cpus, "a container the runtime created lost or changed its CPUs"
        assert set(after) <= {pod.uid for pod in peer.state.pods.values()}, "an allocation for a pod nobody has"
        held = [cpu for cpus in after.values() for cpu in parse_cpuset(cpus)]
        assert len(held) == len(set(held)) and 0 not in held
    finally:
        if daemon.proc.poll() is None:
            await asyncio.to_thread(daemon.terminate)
        daemon.stop()
        await peer.stop()


async def _at_least(acked: dict, count: int) -> bool:
    return len(acked) >= count


async def _has_all(daemon, acked: dict) -> bool:
    try:
        rows = await allocations(daemon)
    except (OSError, AssertionError):
        return False
    return set(acked) <= set(rows)


async def _released(daemon, uid: str) -> bool:
    return uid not in await allocations(daemon)
