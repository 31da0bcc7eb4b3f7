"""Standalone eviction end to end on the real kernel.

A best-effort and a latency-sensitive workload (real processes) sit in real v1 cpu and
memory cgroups made by the test. Node memory usage comes from a fake procfs root whose
meminfo crosses the 70 % threshold; the metrics advisor's node and pod collectors feed it
(and the pods' real memory cgroup usage) into the metric store. The QoS manager, built by its agent spec with
--qos-standalone-eviction, kills the BE workload; the LS one keeps running.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from koordlet.apis.qos import KoordQoSClass
from koordlet.daemon.cli import parse_args
from koordlet.metricsadvisor.collectors.node_resource import NodeResourceCollector
from koordlet.metricsadvisor.collectors.pod_resource import PodResourceCollector
from koordlet.metricsadvisor.framework import CollectContext
from koordlet.qosmanager.agent import SPEC as QOS_MANAGER
from koordlet.slo.agent import SPEC as NODE_SLO
from koordlet.statesinformer.api import StaticStates
from koordlet.statesinformer.model import NodeInfo
from system.cgroup_files import CgroupFiles
from system.cgroup_readers import CgroupReader
from system.host import Host
from system.usage_reader import UsageReader
from tests.koordlet.hubs_helper import hubs_for
from tests.koordlet.qosmanager.helpers import FedMetricStore, container, feed, pod
from tests.system.fake_trees import build_proc_tree

pytestmark = pytest.mark.kernel

GiB = 1 << 30


def meminfo(total_kb: int, available_kb: int) -> str:
    return (f"MemTotal:       {total_kb} kB\nMemFree:        {available_kb} kB\n"
            f"MemAvailable:   {available_kb} kB\nBuffers:           0 kB\nCached:           0 kB\n")


def spawn_into(host: Host, name: str, relative: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", "import time\nwhile True: time.sleep(1)"])
    for controller in ("cpu", "memory"):
        Path(host.cgroup(controller, name, relative, "cgroup.procs")).write_text(str(proc.pid))
    return proc


def collect(host: Host, cache: FedMetricStore, states: StaticStates, now: float) -> None:
    """One tick of the metrics advisor's node and pod collectors, reading the fake procfs
    root and the real cgroups."""
    files = CgroupFiles(host)
    reader = CgroupReader(files, keep_open=False)
    usage = UsageReader(files, keep_open=False)
    ctx = CollectContext(host, cache, "node-e2e", files, reader, states, usage)
    for collector in (NodeResourceCollector(1.0), PodResourceCollector(1.0)):
        collector.setup(ctx)
        feed(cache, collector.collect(now), now)
    reader.close()
    usage.close()


def test_be_workload_killed_ls_untouched(sandbox, tmp_path, monkeypatch):
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)  # standalone
    real, name = sandbox
    be_proc = spawn_into(real, name, "kubepods/besteffort/podbe1/cbe1")
    ls_proc = spawn_into(real, name, "kubepods/burstable/podls1/cls1")
    try:
        # 16 GiB node, 4 GiB available: 75 % used >= memoryEvictThresholdPercent 70
        build_proc_tree(tmp_path, meminfo=meminfo(16 * GiB // 1024, 4 * GiB // 1024))
        host = Host(real.cgroup_root, Path(tmp_path, "proc"), real.sys_root)
        slo = tmp_path / "nodeslo.yaml"
        slo.write_text("resourceUsedThresholdWithBE: {enable: true, memoryEvictThresholdPercent: 70}\n")
        config = parse_args([
            "--qos-standalone-eviction=true", "--node-slo-config", str(slo), "--state-dir", str(tmp_path),
            "--proc-root-dir", str(tmp_path / "proc"),
            "--feature-gates=BEMemoryEvict=true,BECPUSuppress=false,CPUBurst=false,CgroupReconcile=false"])
        node = NodeInfo("node-e2e", capacity={"cpu": 2000, "memory": 16 * GiB})
        states = StaticStates(node, [
            pod("be1", KoordQoSClass.BE, f"{name}/kubepods/besteffort/podbe1", containers=(
                container("cbe1", "be1", f"{name}/kubepods/besteffort/podbe1/cbe1"),)),
            pod("ls1", KoordQoSClass.LS, f"{name}/kubepods/burstable/podls1", containers=(
                container("cls1", "ls1", f"{name}/kubepods/burstable/podls1/cls1"),)),
        ])
        cache = FedMetricStore()
        hubs = hubs_for(config, states=states, metric_cache=cache)
        node_slo_modules = NODE_SLO.build(hubs).modules
        (manager,) = QOS_MANAGER.build(hubs).modules

        async def scenario() -> None:
            for module in node_slo_modules:
                await module.start()
            collect(host, cache, states, time.time())
            await manager.run_round()
            await manager.stop()
            for module in node_slo_modules:
                await module.stop()
            hubs.executor.close()

        asyncio.run(scenario())
        assert be_proc.wait(timeout=10) == -signal.SIGKILL
        assert ls_proc.poll() is None
        assert hubs.registry.get_sample_value("koordlet_pod_eviction_total",
                                         {"node": config.common.node_name, "reason": "EvictPodByNodeMemoryUsage",
                                          "result": "evicted"}) == 1
    finally:
        for proc in (be_proc, ls_proc):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
