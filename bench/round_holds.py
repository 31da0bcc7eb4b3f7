"""How long a per-pod collection round holds the event loop between its yields, steady and
right after the listing changed (a pod came or went), as the scheduler drives it.

    .venv/bin/python -m bench.round_holds [--pods 1000] [--rounds 15] [--fake]

Real cgroup v1/v2 dirs (root; koordlet-bench-<hex8>, removed after), or a fake hybrid tree
with --fake or when not root. N pods x 2 containers; the 1 s usage round (a tenth of the containers a round),
the 10 s throttling round and the 10 s PSI round (pods only), with the daemon's default
intervals, each driven by drive_async + append_in_slices as Scheduler._finish_round does.
Each measured step is a steady round then a round after a pod is added (or removed, in
turn). Per kind: the longest hold of a round (wall and loop-thread CPU, ms; p50 and max),
the loop CPU of a round (ms), for steady and changed rounds. Floor: the same kind's
longest hold of an empty round (no pods: the driver and the thread hand-off alone), and
SLICE_SECONDS, the hold a slice aims at; ratios against SLICE_SECONDS.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Callable

from bench.metrics_advisor import make_real_tree, pods_with_containers, remove_real_tree, setup
from koordlet.config.defaults import COLLECT_CONTAINER_RES_USED_INTERVAL_SECONDS as CONTAINER_INTERVAL
from koordlet.metriccache.store import MetricStore
from koordlet.metricsadvisor.collectors.pod_resource import PodResourceCollector
from koordlet.metricsadvisor.collectors.pod_throttled import PodThrottledCollector
from koordlet.metricsadvisor.collectors.psi import PSICollector
from koordlet.metricsadvisor.framework import SLICE_SECONDS, Holds, append_in_slices, drive_async
from koordlet.statesinformer.api import StaticStates
from koordlet.statesinformer.model import PodInfo
from system.host import Host

T0 = 1_700_000_000.0
KINDS: dict[str, Callable[[], object]] = {
    "usage": lambda: PodResourceCollector(1.0, CONTAINER_INTERVAL),
    "throttle": lambda: PodThrottledCollector(CONTAINER_INTERVAL),
    "psi": lambda: PSICollector(10.0, containers=False),
}


class CpuHolds(Holds):
    """Holds, with the longest stretch in loop-thread CPU as well."""

    __slots__ = ("longest_cpu", "_stretch_cpu0")

    def __init__(self) -> None:
        super().__init__()
        self.longest_cpu = 0.0
        self._stretch_cpu0 = 0.0

    def begin(self) -> None:
        super().begin()
        self._stretch_cpu0 = time.thread_time()

    def end(self) -> None:
        super().end()
        self.longest_cpu = max(self.longest_cpu, time.thread_time() - self._stretch_cpu0)


async def one_round(collector: object, store: MetricStore, now: float) -> tuple[float, float, float]:
    """(longest hold wall ms, longest hold CPU ms, loop CPU ms) of one round."""
    holds = CpuHolds()
    samples = await drive_async(collector.round(now), holds)  # type: ignore[attr-defined]
    await append_in_slices(store, now, samples, holds)
    return holds.longest * 1e3, holds.longest_cpu * 1e3, holds.cpu * 1e3


def run_kind(kind: str, host: Host, pods: list[PodInfo], extra: PodInfo, rounds: int,
             loop: asyncio.AbstractEventLoop) -> dict[str, list[tuple[float, float, float]]]:
    collector = KINDS[kind]()
    store = MetricStore()
    ctx = setup(host, pods, store, [collector], keep_open=False)
    states = ctx.states
    assert isinstance(states, StaticStates)
    interval = collector.interval  # type: ignore[attr-defined]
    now = [T0]

    def step() -> tuple[float, float, float]:
        now[0] += interval
        return loop.run_until_complete(one_round(collector, store, now[0]))

    for _ in range(round(CONTAINER_INTERVAL) + 1):  # every cgroup seen, every turn's batches made
        step()
    out: dict[str, list[tuple[float, float, float]]] = {"steady": [], "changed": []}
    gc.collect()
    gc.disable()  # a gen-2 collection holds the loop wherever it falls: not the round's
    try:
        for r in range(rounds):
            out["steady"].append(step())
            if r % 2 == 0:
                states.put(extra)
            else:
                states.remove(extra.uid)
            out["changed"].append(step())
            for _ in range(round(CONTAINER_INTERVAL) - 1):  # the other turns' batches again, unmeasured
                step()
    finally:
        gc.enable()
    return out


def floor_of(kind: str, host: Host, rounds: int, loop: asyncio.AbstractEventLoop) -> float:
    collector = KINDS[kind]()
    store = MetricStore()
    setup(host, [], store, [collector], keep_open=False)
    return statistics.median(loop.run_until_complete(one_round(collector, store, T0 + i))[0] for i in range(rounds))


def report(kind: str, results: dict[str, list[tuple[float, float, float]]], floor: float) -> None:
    for name, rows in results.items():
        wall, cpu, loop_cpu = ([r[k] for r in rows] for k in range(3))
        print("%-8s %-7s longest hold wall p50 %5.2f max %5.2f | CPU p50 %5.2f max %5.2f (%.2fx SLICE) | "
              "loop CPU/round p50 %6.2f | floor (empty round's hold) %.3f"
              % (kind, name, statistics.median(wall), max(wall), statistics.median(cpu), max(cpu),
                 max(cpu) / (SLICE_SECONDS * 1e3), statistics.median(loop_cpu), floor))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--fake", action="store_true")
    args = parser.parse_args()
    kinds = args.kinds.split(",")
    loop = asyncio.new_event_loop()
    top = "koordlet-bench-%s" % uuid.uuid4().hex[:8]
    all_pods = pods_with_containers(top, args.pods + 1, 2)
    pods, extra = all_pods[:args.pods], all_pods[args.pods]
    print("round_holds: %d pods x 2 containers, %d steady + %d changed rounds per kind, SLICE_SECONDS %.1f ms"
          % (args.pods, args.rounds, args.rounds, SLICE_SECONDS * 1e3))
    try:
        if args.fake or os.geteuid() != 0:  # real cgroups need root
            from tests.system.fake_trees import build_hybrid_tree, build_proc_tree
            with tempfile.TemporaryDirectory() as tmp:
                host = build_hybrid_tree(Path(tmp))
                build_proc_tree(Path(tmp))
                for kind in kinds:
                    report(kind, run_kind(kind, host, pods, extra, args.rounds, loop), floor_of(kind, host, 5, loop))
            return
        bases = make_real_tree(all_pods, Path("/sys/fs/cgroup"))
        try:
            host = Host()
            for kind in kinds:
                report(kind, run_kind(kind, host, pods, extra, args.rounds, loop), floor_of(kind, host, 5, loop))
        finally:
            remove_real_tree(bases, top)
    finally:
        loop.close()


if __name__ == "__main__":
    main()
