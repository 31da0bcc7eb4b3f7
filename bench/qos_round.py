"""One round of every QoS strategy with 1,000 pods: CPU milliseconds per round.

Run from the project root:  .venv/bin/python -m bench.qos_round [--pods N] [--rounds N]

Builds a fake cgroup v2 + resctrl + 96-CPU topology tree in a temp dir (memory QoS,
cpu.max.burst and resctrl need files this host lacks), 1,000 pods (50 % LS with CPU
limits, 10 % LSR, 40 % BE; one container each) and a metric cache holding the usage the
strategies read. Every strategy is on: CPU suppress (cpuset), memory evict and CPU evict
(configured, not triggered), CPU burst (auto), memory QoS (LS and BE), resctrl (BE).
The first rounds write (printed apart); the measured rounds are the steady state.
By default the clock stands still and the cache holds one sample per series; with
--collect the clock moves 1 s and every series gets a new sample (same value) before each
round, as the collectors do, outside the measured time: a strategy must then read its
inputs again, and the 10 s cpuset and 60 s resync passes fall inside the measured rounds.
With --churn K, K pods (taken in turn) are handed to the strategies again as new objects
before each round, as the informer does while pods start and change: what a strategy
derives from the whole pod list must then be made again (or only for those pods).

Floor, same run: one executor batch of 1,000 cached no-op updates (the cheapest thing a
round could do per pod). Prints p50/p99 CPU (process_time) for both and the ratio.
Second floor: that batch plus the metric reads koordlet's rules need every round, one
latest_value per known pod (CPU suppress sums pod usage) and per LS container with a CPU
limit (CPU burst's throttling ratio), through the cache's public per-series read.
"""
from __future__ import annotations

import argparse
import asyncio
import cProfile
import dataclasses
import logging
import pstats
import statistics
import tempfile
import time
from pathlib import Path

import structlog

from koordlet.apis.qos import KoordQoSClass
from koordlet.metriccache.api import Metric, SeriesKey
from koordlet.qosmanager.cpu_burst import CPUBurst
from koordlet.qosmanager.cpu_evict import CPUEvict
from koordlet.qosmanager.cpu_suppress import CPUSuppress
from koordlet.qosmanager.framework import QoSManager
from koordlet.qosmanager.memory_evict import MemoryEvict
from koordlet.qosmanager.memory_qos import MemoryQoS
from koordlet.qosmanager.resctrl import ResctrlQoS
from koordlet.slo.spec import parse_node_slo_spec
from koordlet.statesinformer.model import NodeInfo
from system.topology import read_cpu_topology
from tests.koordlet.qosmanager.helpers import Rig, container, pod
from tests.resourceexecutor.conftest import FakeTreeIO
from tests.system.fake_trees import add_cgroup, build_resctrl_tree, build_topology_tree, build_v2_tree, write_file

GiB = 1 << 30
SLO = {
    "resourceUsedThresholdWithBE": {"enable": True, "cpuSuppressPolicy": "cpuset",
                                    "cpuEvictBESatisfactionLowerPercent": 40,
                                    "cpuEvictBESatisfactionUpperPercent": 80},
    "cpuBurstStrategy": {"policy": "auto"},
    "resourceQOSStrategy": {
        "lsClass": {"memoryQOS": {"enable": True, "minLimitPercent": 50, "throttlingPercent": 90}},
        "beClass": {"memoryQOS": {"enable": True, "throttlingPercent": 80},
                    "resctrlQOS": {"enable": True, "catRangeEndPercent": 30, "mbaPercent": 50}}},
}


def build(root: Path, pods: int) -> Rig:
    build_topology_tree(root, sockets=2, nodes_per_socket=2, cores_per_node=12, threads_per_core=2)
    host = build_v2_tree(root, cpus="0-95")
    build_resctrl_tree(root)
    groups = {"LSR": [], "LS": [], "BE": []}
    for i in range(pods):  # a regular file cannot list the tasks written to it: pre-fill as the kernel would
        groups["BE" if i % 10 < 4 else "LSR" if i % 10 == 4 else "LS"].append("%d\n" % (10_000 + i))
    for group, tids in groups.items():
        write_file(host.sys("fs", "resctrl", group, "schemata"), "L3:0=7ff;1=7ff\nMB:0=100;1=100\n")
        write_file(host.sys("fs", "resctrl", group, "tasks"), "".join(tids))
    node = NodeInfo("bench", capacity={"cpu": 96_000, "memory": 384 * GiB},
                    allocatable={"cpu": 96_000, "memory": 384 * GiB})
    rig = Rig(host, node, topology=read_cpu_topology(host), io=FakeTreeIO(), keep_open=True)
    rig.set_slo(parse_node_slo_spec(SLO))
    for tier in ("kubepods", "kubepods/burstable", "kubepods/besteffort"):
        add_cgroup(host, tier)
    now = rig.clock()
    rig.cache.put(Metric.NODE_CPU_USAGE_CORES, 30.0, now)
    rig.cache.put(Metric.NODE_MEMORY_USAGE_BYTES, 100 * GiB, now)
    rig.cache.put(Metric.BE_CPU_USAGE_CORES, 0.02 * (pods * 4 // 10), now)  # the collector's BE sum
    for i in range(pods):
        uid = "p%04d" % i
        cls = KoordQoSClass.BE if i % 10 < 4 else KoordQoSClass.LSR if i % 10 == 4 else KoordQoSClass.LS
        tier = "besteffort" if cls is KoordQoSClass.BE else "burstable"
        pod_dir = "kubepods/%s/pod%s" % (tier, uid)
        add_cgroup(host, pod_dir, {"cpu.max": "200000 100000"})
        add_cgroup(host, pod_dir + "/c0", {"cpu.max": "200000 100000", "cgroup.threads": "%d\n" % (10_000 + i)})
        resources = ({"kubernetes.io/batch-cpu": 1000, "memory": GiB}, {"memory": 2 * GiB}) \
            if cls is KoordQoSClass.BE else ({"cpu": 1000, "memory": GiB}, {"cpu": 2000, "memory": 2 * GiB})
        rig.states.put(pod(uid, cls, pod_dir, priority=5000, containers=(
            container("c%04d" % i, uid, pod_dir + "/c0", requests=resources[0], limits=resources[1]),)))
        rig.cache.put(Metric.POD_CPU_USAGE_CORES, 0.02, now, uid)
        rig.cache.put(Metric.POD_MEMORY_USAGE_BYTES, 0.5 * GiB, now, uid)
        rig.cache.put(Metric.CONTAINER_CPU_USAGE_CORES, 0.02, now, uid, "c%04d" % i)
        rig.cache.put(Metric.CONTAINER_CPU_THROTTLED_RATIO, 0.0, now, uid, "c%04d" % i)
    return rig


def pct(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, max(0, int(round(p * len(ordered))) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--collect", action="store_true",
                        help="advance the clock 1 s and append a fresh sample of every series before each round")
    parser.add_argument("--churn", type=int, default=0, metavar="K",
                        help="hand K pods again as new objects before each round (the informer's pods() changes)")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="print the N costliest calls (cProfile, cumulative) of the measured rounds")
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    with tempfile.TemporaryDirectory(prefix="qos-round-", dir="/dev/shm" if Path("/dev/shm").is_dir() else None) \
            as tmp:
        rig = build(Path(tmp), args.pods)
        strategies = [CPUSuppress(), MemoryEvict(), CPUEvict(), CPUBurst(), MemoryQoS(), ResctrlQoS()]
        manager = QoSManager(strategies, lambda: rig.ctx)
        latest = [(key, rig.cache.latest_value(key)) for metric in Metric for key in rig.cache.keys(metric)]

        churned = [0]

        def churn() -> None:
            pods = rig.states.pods()
            for _ in range(args.churn):
                rig.states.put(dataclasses.replace(pods[churned[0] % len(pods)]))
                churned[0] += 1

        def collect() -> None:
            churn()
            if args.collect:
                rig.clock.now += 1.0  # type: ignore[attr-defined]  # the Rig's settable Clock
                rig.cache.append_at(rig.clock(), [(key, last[1]) for key, last in latest if last is not None])

        async def rounds() -> list[float]:
            start = time.process_time()
            await manager.run_round()  # the first round writes everything
            print("first round (writes every file): cpu %.1f ms" % ((time.process_time() - start) * 1000))
            for _ in range(10):  # the BE cpuset grows by at most 10 % of the CPUs a round
                await manager.run_round()
            cpu: list[float] = []
            profiler = cProfile.Profile() if args.profile else None
            for _ in range(args.rounds):
                collect()
                start = time.process_time()
                if profiler is not None:
                    profiler.enable()
                await manager.run_round()
                if profiler is not None:
                    profiler.disable()
                cpu.append((time.process_time() - start) * 1000)
            if profiler is not None:
                pstats.Stats(profiler).sort_stats("cumulative").print_stats(args.profile)
                pstats.Stats(profiler).sort_stats("tottime").print_stats(args.profile)
            return cpu

        per_round = asyncio.run(rounds())
        dirs = [p.cgroup_parent for p in rig.states.pods()]
        noop = [rig.executor.updater("cpu.shares", dirs[i % len(dirs)], 1024) for i in range(1000)]
        reads = [SeriesKey(Metric.POD_CPU_USAGE_CORES, p.uid) for p in rig.states.pods()] + \
            [SeriesKey(Metric.CONTAINER_CPU_THROTTLED_RATIO, p.uid, c.id) for p in rig.states.pods()
             if p.qos.effective is KoordQoSClass.LS for c in p.containers]

        async def floors() -> tuple[list[float], list[float]]:
            """The no-op batch as the strategies apply theirs (in the executor's IO thread;
            process CPU, so the thread's part counts), alone and with the metric reads."""
            await rig.executor.apply_batch(noop)
            alone: list[float] = []
            with_reads: list[float] = []
            for _ in range(args.rounds):
                start = time.process_time()
                await rig.executor.apply_batch(noop)
                alone.append((time.process_time() - start) * 1000)
            for _ in range(args.rounds):
                start = time.process_time()
                await rig.executor.apply_batch(noop)
                list(map(rig.cache.latest_value, reads))
                with_reads.append((time.process_time() - start) * 1000)
            return alone, with_reads

        floor, with_reads = asyncio.run(floors())
        print("qos round, %d pods, 6 strategies%s%s: cpu p50 %.2f ms  p99 %.2f ms  (mean %.2f, %d rounds)"
              % (args.pods, ", fresh samples each round" if args.collect else "",
                 ", %d pods changed each round" % args.churn if args.churn else "", pct(per_round, .5),
                 pct(per_round, .99), statistics.mean(per_round), args.rounds))
        print("floor: 1,000 cached no-op executor updates: cpu p50 %.3f ms  p99 %.3f ms"
              % (pct(floor, .5), pct(floor, .99)))
        print("floor + %d latest_value reads: cpu p50 %.3f ms  p99 %.3f ms"
              % (len(reads), pct(with_reads, .5), pct(with_reads, .99)))
        print("ratio round / floor (p50): %.1f   round / floor with reads: %.1f"
              % (pct(per_round, .5) / max(pct(floor, .5), 1e-9), pct(per_round, .5) / max(pct(with_reads, .5), 1e-9)))
        rig.close()


if __name__ == "__main__":
    main()
