"""CPU suppress live: spinning LS and BE processes in real v1 cgroups, usage measured by the
metrics advisor's node and pod collectors from the real /proc and cpuacct, the cfsQuota
policy at 50 % writing the BE tier's real quota, and the kernel throttling the BE spinner.

This 2-CPU machine is shared: system usage (everyone else) moves the budget, so each
expectation is the published formula applied to the figures the collectors measured.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

import pytest

from koordlet.apis.qos import KoordQoSClass
from koordlet.metriccache.api import Metric, SeriesKey
from koordlet.metricsadvisor.collectors.node_resource import NodeResourceCollector
from koordlet.metricsadvisor.collectors.pod_resource import PodResourceCollector
from koordlet.metricsadvisor.framework import CollectContext
from koordlet.qosmanager.cpu_suppress import CPUSuppress
from koordlet.slo.spec import parse_node_slo_spec
from koordlet.statesinformer.model import NodeInfo
from system.cgroup_files import CgroupFiles
from system.cgroup_readers import CgroupReader
from system.usage_reader import UsageReader
from tests.koordlet.qosmanager.helpers import Rig, container, feed, pod
from tests.polling import until_blocking

pytestmark = pytest.mark.kernel

PERIOD = 100_000


def spin_in(host, name: str, relative: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    for controller in ("cpu", "cpuacct"):
        Path(host.cgroup(controller, name, relative, "cgroup.procs")).write_text(str(proc.pid))
    return proc


def expected_quota(rig: Rig, capacity_cores: int, current: int) -> int | None:
    """anchors §2.6: BE = alloc * 50 % - LS.used - max(0, node.used - sum(pod.used));
    quota = BE * 100000, at least 2000 us, unchanged under 1 % of the node, +10 % of it at most."""
    last = lambda key: rig.cache.latest(key).value  # noqa: E731
    node = int(last(SeriesKey.of(Metric.NODE_CPU_USAGE_CORES)) * 1000)
    ls = int(last(SeriesKey.of(Metric.POD_CPU_USAGE_CORES, "ls1")) * 1000)
    be = int(last(SeriesKey.of(Metric.POD_CPU_USAGE_CORES, "be1")) * 1000)
    budget = capacity_cores * 1000 * 50 // 100 - ls - max(0, node - ls - be)
    wanted = max(budget * PERIOD // 1000, 2000)
    node_quota = capacity_cores * PERIOD
    base = node_quota if current == -1 else current
    if abs(wanted - base) < node_quota // 100 and wanted != 2000:
        return None
    return min(wanted, base + node_quota // 10)


def test_be_quota_follows_busy_ls_and_throttles_the_be_spinner(sandbox):
    host, name = sandbox
    cpus = 2
    node = NodeInfo("node-live", capacity={"cpu": cpus * 1000}, allocatable={"cpu": cpus * 1000})
    rig = Rig(host, node, prefix=name, clock=time.time)  # the collectors stamp wall time
    rig.states.put(pod("be1", KoordQoSClass.BE, f"{name}/kubepods/besteffort/podbe1", containers=(
        container("cbe1", "be1", f"{name}/kubepods/besteffort/podbe1/cbe1"),)))
    rig.states.put(pod("ls1", KoordQoSClass.LS, f"{name}/kubepods/burstable/podls1", containers=(
        container("cls1", "ls1", f"{name}/kubepods/burstable/podls1/cls1"),)))
    rig.set_slo(parse_node_slo_spec({"resourceUsedThresholdWithBE": {
        "enable": True, "cpuSuppressThresholdPercent": 50, "cpuSuppressPolicy": "cfsQuota"}}))
    reader = CgroupReader(CgroupFiles(host), keep_open=False)
    usage_reader = UsageReader(reader.files, keep_open=False)
    ctx = CollectContext(host, rig.cache, node.name, reader.files, reader, rig.states, usage_reader)
    collectors = [NodeResourceCollector(1.0), PodResourceCollector(1.0)]
    for collector in collectors:
        collector.setup(ctx)
    quota_file = Path(host.cgroup("cpu", name, "kubepods/besteffort", "cpu.cfs_quota_us"))
    throttled_file = Path(host.cgroup("cpu", name, "kubepods/besteffort", "cpu.stat"))
    strategy = CPUSuppress()

    def tick() -> None:
        for collector in collectors:
            now = time.time()
            feed(rig.cache, collector.collect(now), now)

    def suppress_round() -> tuple[int, int | None]:
        before = int(quota_file.read_text())
        time.sleep(1.0)
        tick()
        want = expected_quota(rig, cpus, before)
        asyncio.run(strategy.run(rig.ctx))
        return int(quota_file.read_text()), want

    ls = spin_in(host, name, "kubepods/burstable/podls1/cls1")
    be = spin_in(host, name, "kubepods/besteffort/podbe1/cbe1")
    try:
        tick()
        got, want = suppress_round()  # LS spinning on a full core
        assert want is not None and got == want
        assert got <= 50_000  # at most half a core left for BE while LS takes one of the two cores
        def nr_throttled() -> int:
            return int(dict(line.split() for line in throttled_file.read_text().splitlines())["nr_throttled"])

        until_blocking(lambda: nr_throttled() > 0)  # the kernel enforces the quota on the BE spinner

        ls.kill()
        ls.wait()
        for _ in range(3):  # LS gone: the quota grows back, at most 10 % of the node a round
            before = got
            got, want = suppress_round()
            assert got == (before if want is None else want)
            assert got - before <= cpus * PERIOD // 10
    finally:
        for proc in (ls, be):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        reader.close()
        usage_reader.close()
        rig.close()
