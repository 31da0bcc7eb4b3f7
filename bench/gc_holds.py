"""How long a full (generation 2) garbage collection holds the loop over a heap like the
daemon's, and what gc.freeze() after start-up changes.

    python -m bench.gc_holds [--pods 1000]

The heap, in a child process: every module the daemon imports, the daemon's hubs and
agents built from the default standalone config (not started), then --pods pods x 2 containers
(bench.daemon_scale's workload) fed into its states informer as NRI's Synchronize, and one
minute of 1 s samples of 4 series per container in its metric cache.

For each policy, in a fresh child process (the heap built again): gc.collect() x 10, each
full pass timed by gc.callbacks (wall: the stop-the-world hold a pass puts on the event
loop; CPU: what stays comparable on a shared machine). How often the collector itself
chooses a full pass depends on what the daemon keeps alive: measure that on the real daemon
(bench.daemon_scale's CreateContainer p99/max).
Policies: the interpreter's defaults; gc.freeze() once start-up is over (after the build,
before pods arrive); gc.freeze() after the pods arrived (a bound: nothing left to scan);
the daemon's own (koordlet.daemon.gc_policy.apply_after_start_up after the build: its young
threshold, what survives each pass frozen), where the first of the 10 passes walks what
the pods left since the last automatic pass and the others next to nothing.
A higher threshold changes how often a full pass runs, not how long it holds.
This heap is smaller than the running daemon's: at 1,000 pods under bench.daemon_scale a
full pass took ~100 ms of CPU, ~90 ms with the start-up heap frozen (what the agents keep
while they run is most of it there); the young threshold (koordlet.daemon.gc_policy) is
what made those passes rare.
Floor: gc.collect() in a bare interpreter (the interpreter's own heap) and the ratio.
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
POLICIES = ("defaults", "freeze at start-up", "freeze after pods", "daemon policy")


class FullPasses:
    """Wall and CPU ms of each generation-2 pass while installed (gc.callbacks). Wall is the
    hold on the loop; CPU is what stays comparable on a shared machine."""

    def __init__(self) -> None:
        self.ms: list[float] = []
        self.cpu_ms: list[float] = []
        self._started = (0.0, 0.0)

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            self._started = (time.perf_counter(), time.thread_time())
        else:
            self.ms.append((time.perf_counter() - self._started[0]) * 1000)
            self.cpu_ms.append((time.thread_time() - self._started[1]) * 1000)


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def measure(policy: str, pods: int) -> dict[str, object]:
    """Build the heap under `policy` in this process and measure it."""
    from bench.daemon_scale import workload
    from koordlet.daemon import gc_policy
    from koordlet.daemon.cli import compose
    from koordlet.daemon.lifecycle import Daemon
    from koordlet.daemon.wiring import build_agents, build_hubs, hub_modules
    from koordlet.metriccache.api import SeriesKey
    from koordlet.metrics.registry import new_registry
    from koordlet.server.http_endpoint import HttpEndpoint
    from koordlet.statesinformer.nri_feed import NriFeed

    with tempfile.TemporaryDirectory(prefix="koordlet-gc-") as tmp:
        (Path(tmp) / "cgroups").mkdir()
        config = compose({"addr": "127.0.0.1:0", "state-dir": tmp + "/state", "cgroup-root-dir": tmp + "/cgroups",
                          "cri-endpoint": "", "kubelet-root-dir": tmp + "/kubelet",
                          "report-output-file": tmp + "/report.json",
                          "runtime-hooks-nri-socket-path": tmp + "/nri.sock",
                          "pod-resources-server-endpoint": "unix:" + tmp + "/pr.sock"})
        # what build_daemon makes, the hubs kept to feed them (the HTTP endpoint never binds)
        registry = new_registry(config.common.node_name)
        hubs = build_hubs(config, registry, HttpEndpoint("127.0.0.1", 0, registry, Daemon().readiness))
        modules = hub_modules(hubs) + build_agents(hubs)
        if policy.startswith("freeze at start-up"):
            gc.freeze()
        undo_policy = gc_policy.apply_after_start_up() if policy == "daemon policy" else None
        feed = NriFeed(hubs.states)
        placed = workload(pods, 0)
        feed.nri_synchronized([pod for pod, _ in placed], [ctr for _, ctrs in placed for ctr in ctrs])
        now = time.time()
        keys = [SeriesKey(metric, pod.uid, ctr.id) for pod, ctrs in placed for ctr in ctrs
                for metric in ("container_cpu_usage", "container_memory_usage", "container_cpu_throttled", "x")]
        for second in range(60):
            hubs.metric_cache.append_at(now - 60 + second, [(key, float(second)) for key in keys])
        if policy == "freeze after pods":
            gc.freeze()
        tracked = len(gc.get_objects())
        frozen = gc.get_freeze_count()
        passes = FullPasses()
        gc.callbacks.append(passes)
        for _ in range(10):
            gc.collect()
        gc.callbacks.remove(passes)
        if undo_policy is not None:
            undo_policy()
        del modules
    return {"policy": policy, "tracked": tracked, "frozen": frozen, "p50_ms": pct(passes.ms, 0.5),
            "max_ms": max(passes.ms), "cpu_p50_ms": pct(passes.cpu_ms, 0.5)}


def floor_ms() -> float:
    """CPU ms of one full pass in a bare interpreter, the median of 9."""
    code = ("import gc, time\nruns = []\nfor _ in range(9):\n    t = time.thread_time(); gc.collect()\n"
            "    runs.append((time.thread_time() - t) * 1000)\nprint(sorted(runs)[4])")
    return float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child, args.pods)))
        return
    floor = floor_ms()
    print("gc_holds: %d pods x 2 containers; gc.collect() x 10, ms per full (generation 2) pass" % args.pods)
    print("%-36s %8s %7s %8s %8s %8s %8s" % ("policy", "tracked", "frozen", "p50", "max", "CPU p50", "x floor"))
    for policy in POLICIES:
        out = subprocess.run([sys.executable, "-m", "bench.gc_holds", "--pods", str(args.pods), "--child", policy], cwd=ROOT, capture_output=True, text=True, check=True)
        row = json.loads(out.stdout.strip().splitlines()[-1])
        print("%-36s %8d %7d %8.1f %8.1f %8.1f %7.0fx" % (policy, row["tracked"], row["frozen"], row["p50_ms"],
                                                          row["max_ms"], row["cpu_p50_ms"], row["cpu_p50_ms"] / floor))
    print("gc_holds: floor, CPU of gc.collect() in a bare interpreter: %.2f ms" % floor)


if __name__ == "__main__":
    main()
