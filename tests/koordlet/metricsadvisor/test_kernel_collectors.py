"""Collectors on real cgroups of this kernel: a busy child moves usage, throttling, PSI and
software-event perf counts as it must. Our own sandbox cgroups only, always removed."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from koordlet.apis.qos import KoordQoSClass, PodQoS
from koordlet.metriccache.api import Metric, SeriesKey
from koordlet.metriccache.store import MetricStore
from koordlet.metricsadvisor.collectors.cpi import CPICollector
from koordlet.metricsadvisor.collectors.pod_resource import PodResourceCollector
from koordlet.metricsadvisor.collectors.pod_throttled import PodThrottledCollector
from koordlet.metricsadvisor.collectors.psi import PSICollector
from koordlet.metricsadvisor.framework import CollectContext, CollectorUnsupported
from koordlet.statesinformer.api import StaticStates
from koordlet.statesinformer.model import ContainerInfo, ContainerState, NodeInfo, PodInfo, SandboxState
from koordlet.util.host_facts import HostFacts
from system.cgroup_readers import CgroupReader
from system.host import Host
from system.perf_events import PerfEvent, extension_available
from system.usage_reader import UsageReader
from tests.system.cgroup_sandbox import SandboxUnavailable, cgroup_sandbox, make_child

pytestmark = pytest.mark.kernel

HOST = Host()
CONTROLLERS = ("cpu", "cpuacct", "cpuset", "memory")
SOFTWARE_PAIR = (PerfEvent.TASK_CLOCK, PerfEvent.CONTEXT_SWITCHES)

_BUSY = textwrap.dedent("""
    import os, sys, time
    for procs in sys.argv[2:]:
        with open(procs, "w") as f:
            f.write(str(os.getpid()))
    print("joined", flush=True)
    end = time.monotonic() + float(sys.argv[1])
    while time.monotonic() < end:
        pass
    """)


@dataclass
class Sandbox:
    pod: PodInfo
    roots: list[Path]
    ctx: CollectContext

    @property
    def container(self) -> ContainerInfo:
        return self.pod.containers[0]

    def procs_files(self) -> list[str]:
        return [str(root / self.container.cgroup_dir / "cgroup.procs") for root in self.roots]

    @contextmanager
    def busy(self, seconds: float, count: int = 1) -> Iterator[None]:
        children = [subprocess.Popen([sys.executable, "-c", _BUSY, str(seconds), *self.procs_files()],
                                     stdout=subprocess.PIPE) for _ in range(count)]
        try:
            for child in children:
                assert child.stdout.readline().strip() == b"joined"
            yield
        finally:
            for child in children:
                child.kill()
                child.wait(timeout=10)
                child.stdout.close()


@pytest.fixture
def sandbox() -> Iterator[Sandbox]:
    try:
        with cgroup_sandbox(controllers=CONTROLLERS, unified=True, host=HOST) as name:
            roots = [HOST.cgroup(c) for c in CONTROLLERS] + [HOST.cgroup("unified")]
            make_child(HOST, name + "/ctr", roots)
            container = ContainerInfo("ctr-" + name, "app", name, ContainerState.RUNNING, name + "/ctr")
            pod = PodInfo(name, "busy", "default", "sb", SandboxState.READY, name,
                          PodQoS(KoordQoSClass.LS), containers=(container,))
            facts = HostFacts(HOST)
            files = facts.files
            ctx = CollectContext(HOST, MetricStore(), "node", files, CgroupReader(files),
                                 StaticStates(NodeInfo("node"), [pod]), UsageReader(files), facts=facts)
            try:
                yield Sandbox(pod, roots, ctx)
            finally:
                ctx.reader.close()
                ctx.usage.close()
    except SandboxUnavailable as exc:
        pytest.skip(str(exc))


def values(pairs) -> dict[SeriesKey, float]:
    return dict(pairs)


def test_cpu_usage_of_a_busy_container_and_its_pod(sandbox: Sandbox):
    collector = PodResourceCollector(1.0)
    collector.setup(sandbox.ctx)
    uid, cid = sandbox.pod.uid, sandbox.container.id
    with sandbox.busy(5.0):
        collector.collect(time.time())
        time.sleep(1.0)
        busy = values(collector.collect(time.time()))
    container_cores = busy[SeriesKey.of(Metric.CONTAINER_CPU_USAGE_CORES, uid, cid)]
    assert 0.3 < container_cores <= 1.1  # one busy thread on a shared 2-CPU machine
    assert busy[SeriesKey.of(Metric.POD_CPU_USAGE_CORES, uid)] >= container_cores * 0.95
    assert busy[SeriesKey.of(Metric.CONTAINER_MEMORY_USAGE_BYTES, uid, cid)] > 0
    time.sleep(0.3)
    collector.collect(time.time())
    time.sleep(0.5)
    idle = values(collector.collect(time.time()))
    assert idle[SeriesKey.of(Metric.CONTAINER_CPU_USAGE_CORES, uid, cid)] < 0.02


def test_a_cfs_quota_shows_as_throttling(sandbox: Sandbox):
    pod_dir = HOST.cgroup("cpu") / sandbox.pod.cgroup_parent
    (pod_dir / "cpu.cfs_quota_us").write_text("20000")  # 0.2 CPU per 100 ms period
    collector = PodThrottledCollector(1.0)
    collector.setup(sandbox.ctx)
    with sandbox.busy(5.0):
        collector.collect(time.time())
        time.sleep(1.0)
        ratios = values(collector.collect(time.time()))
    pod_ratio = ratios[SeriesKey.of(Metric.POD_CPU_THROTTLED_RATIO, sandbox.pod.uid)]
    assert pod_ratio > 0.5  # the busy child wants 1 CPU and gets 0.2: nearly every period throttled


def test_four_busy_processes_on_two_cpus_raise_cpu_pressure(sandbox: Sandbox):
    collector = PSICollector(10.0)
    collector.setup(sandbox.ctx)
    container = (sandbox.pod.uid, sandbox.container.id)

    def cpu_some_avg10() -> float:
        collector.collect(time.time())
        return collector.snapshot[container]["cpu"][0][0]

    before = cpu_some_avg10()
    assert before < 5.0
    with sandbox.busy(30.0, count=4):
        deadline = time.monotonic() + 25.0  # avg10 is recomputed every 2 s
        during = cpu_some_avg10()
        while during <= 10.0 and time.monotonic() < deadline:
            time.sleep(0.5)
            during = cpu_some_avg10()
    assert during > 10.0 and during > before


@pytest.mark.skipif(not extension_available(), reason="system._perf_ext not built")
def test_cpi_path_counts_software_events_only_while_busy(sandbox: Sandbox):
    collector = CPICollector(60.0, 0.5, events=SOFTWARE_PAIR)
    collector.setup(sandbox.ctx)
    uid, cid = sandbox.pod.uid, sandbox.container.id
    cycles_key = SeriesKey.of(Metric.CONTAINER_CPU_CYCLES, uid, cid)
    collector.begin(time.time())
    assert collector.open_fds == 2 * len(collector._cpus)
    time.sleep(0.3)
    idle = values(collector.collect(time.time()))
    assert collector.open_fds == 0  # closed after every window
    assert idle[cycles_key] == 0.0  # task-clock of an idle cgroup
    with sandbox.busy(5.0):
        collector.begin(time.time())
        time.sleep(0.5)
        busy = values(collector.collect(time.time()))
    assert busy[cycles_key] > 0.02e9  # ns of task-clock in a 0.5 s window (the machine is shared)
    assert busy[SeriesKey.of(Metric.CONTAINER_INSTRUCTIONS, uid, cid)] >= 0


@pytest.mark.skipif(Path("/sys/bus/event_source/devices/cpu").exists(), reason="this machine has a PMU")
def test_without_a_pmu_the_cpi_collector_is_unsupported(sandbox: Sandbox):
    with pytest.raises(CollectorUnsupported, match="event_unsupported|extension_missing"):
        CPICollector(60.0, 10.0).setup(sandbox.ctx)
