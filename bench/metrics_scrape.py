"""What one /metrics scrape of the metrics advisor costs at N pods x 2 containers.

Run from the project root:

    .venv/bin/python -m bench.metrics_scrape [--pods 100,1000,3000] [--repeats 15] [--no-psi] [--busy 1.0,0.2]
        [--changed 0,1]

In this process: the exporter over N fake pods (half BE with batch requests and limits,
half LS with cpu and memory ones), a MetricStore holding what the collectors store for
them (pod and container usage and throttling, fresh), and a PSI snapshot as a cgroup2
kernel with PSI gives it (cpu/memory/io, some and full, for the node, each pod and each
container; `--no-psi` for a host without). Renders alternate between two PSI rounds, as
scrapes 10 s apart meet a new round each: the `--busy` fraction of the pods has averages
that differ between them, the others are idle (0.0 in both; the exporter re-renders an
object's PSI lines only when its readings changed). Before each render (untimed) the store
gets a new round of usage and throttling samples in which the `--changed` fraction of the
pods (and their containers) has values other than the last round's, the others repeat theirs
(an idle pod's; the exporter spells a line again only when its value changed). For each N,
each level — default, and
`--metrics-container-series=true --metrics-psi-precisions=avg10,avg60,avg300` ("all",
which is what /metrics exported before these flags) — each busy fraction and each changed
fraction, one row:

  series       sample lines of /metrics' advisor part (render_parts, both halves)
  KiB          its body
  p50 / p99    wall ms of one render, `--repeats` times after one warm-up render
  CPU p50      the render's thread CPU ms (steadier than wall on a shared machine)
  faults       the render's minor page faults, p50: a body of megabytes in memory the
               allocator has just given back to the kernel costs ~1,000 (2-3 ms here)
  floor        ms of "\\n".join(...).encode() over the same lines, pre-formatted, alternating
               with the renders
  ratio        render p50 / floor p50
  held KiB     what the exporter keeps between scrapes (tracemalloc, a second exporter of the
               same level: traced bytes still allocated after three renders whose bodies are
               dropped, against before it was made)

The rest of the daemon's /metrics (prometheus_client's registry, the QoS manager's
counters, the runtime hooks' pools) is not here: docs/PERFORMANCE.md has the whole.
"""

from __future__ import annotations

import argparse
import gc
import resource
import statistics
import time
import tracemalloc
from collections.abc import Callable

from koordlet.apis.keys import BATCH_CPU, BATCH_MEMORY
from koordlet.apis.qos import KoordQoSClass, PodQoS
from koordlet.metriccache.api import Metric, Sample, SeriesKey
from koordlet.metriccache.store import MetricStore
from koordlet.metricsadvisor.collectors.psi import PsiSnapshot
from koordlet.metricsadvisor.exporter import AdvisorExporter
from koordlet.statesinformer.api import StaticStates
from koordlet.statesinformer.model import ContainerInfo, ContainerState, NodeInfo, PodInfo, Resources, SandboxState

NOW = 1_700_000_000.0
_POD_METRICS = (Metric.POD_CPU_USAGE_CORES, Metric.POD_MEMORY_USAGE_BYTES, Metric.POD_CPU_THROTTLED_RATIO)
_CONTAINER_METRICS = (Metric.CONTAINER_CPU_USAGE_CORES, Metric.CONTAINER_MEMORY_USAGE_BYTES,
                      Metric.CONTAINER_CPU_THROTTLED_RATIO)
_PSI = {resource: ((1.5, 1.25, 1.0), (0.5, 0.25, 0.125)) for resource in ("cpu", "memory", "io")}


def fake_pods(n: int) -> list[PodInfo]:
    pods = []
    for i in range(n):
        uid = "%08x-0000-4000-8000-%012x" % (i, i)
        be = i % 2 == 0
        names = (BATCH_CPU, BATCH_MEMORY) if be else ("cpu", "memory")
        spec = Resources({names[0]: 500, names[1]: 256 << 20}, {names[0]: 1000, names[1]: 512 << 20})
        parent = "kubepods/%s/pod%s" % ("besteffort" if be else "burstable", uid)
        containers = tuple(ContainerInfo("%s%060x" % (role[:4], i), role, uid, ContainerState.RUNNING,
                                         "%s/%s" % (parent, role), spec=spec) for role in ("main", "sidecar"))
        qos = KoordQoSClass.BE if be else KoordQoSClass.LS
        pods.append(PodInfo(uid, "pod-%d" % i, "bench", "sb-%d" % i, SandboxState.READY, parent,
                            PodQoS(qos, koord=qos), containers=containers))
    return pods


def usage_round(pods: list[PodInfo], t: float, changed: float, k: int) -> list[Sample]:
    """One round of what the collectors store at `t`: the first `changed` fraction of the pods
    (and their containers) with values of round `k`, the others with the values of every round."""
    samples = [Sample(SeriesKey.of(Metric.NODE_CPU_USAGE_CORES), t, 3.5),
               Sample(SeriesKey.of(Metric.NODE_MEMORY_USAGE_BYTES), t, 8e9)]
    cut = changed * len(pods)
    for i, pod in enumerate(pods):
        bump = k / 1024 if i < cut else 0.0
        samples += [Sample(SeriesKey.of(m, pod.uid), t, 0.25 + bump) for m in _POD_METRICS]
        for c in pod.containers:
            samples += [Sample(SeriesKey.of(m, pod.uid, c.id), t, 0.125 + bump) for m in _CONTAINER_METRICS]
    return samples


def filled_store(pods: list[PodInfo]) -> MetricStore:
    store = MetricStore()
    store.append(usage_round(pods, NOW, 0.0, 0))
    return store


def _readings(scale: float) -> dict:
    return {resource: (tuple(v * scale for v in some), tuple(v * scale for v in full))
            for resource, (some, full) in _PSI.items()}


def psi_snapshots(pods: list[PodInfo], with_psi: bool, busy: float) -> tuple[PsiSnapshot, PsiSnapshot]:
    """Two PSI rounds as the collector makes them (new objects each round): the first
    `busy` fraction of the pods (and their containers) under pressure with averages that
    differ between the rounds, the others idle (0.0 in both)."""
    if not with_psi:
        return {}, {}
    rounds: tuple[dict, dict] = ({}, {})
    for k, snapshot in enumerate(rounds):
        snapshot[("", "")] = _readings(1.0 + k)
        for i, pod in enumerate(pods):
            scale = (1.0 + k + i % 7) if i < busy * len(pods) else 0.0
            snapshot[(pod.uid, "")] = _readings(scale)
            snapshot.update({(pod.uid, c.id): _readings(scale) for c in pod.containers})
    return rounds


def _minor_faults() -> int:
    return resource.getrusage(resource.RUSAGE_THREAD).ru_minflt


def timed_ms(calls: tuple[Callable[[], object], ...], repeats: int,
             prepare: Callable[[], object] = lambda: None) -> list[tuple[list[float], list[float], list[int]]]:
    """Wall and CPU ms and minor page faults of each call (CPU: what neighbours on a shared
    machine do not inflate), the calls alternating so that each meets the same noise and
    allocator state; `prepare` runs untimed before each round of the calls."""
    out: list[tuple[list[float], list[float], list[int]]] = [([], [], []) for _ in calls]
    prepare()
    for call in calls:
        call()
    for _ in range(repeats):
        prepare()
        for call, (wall, cpu, faults) in zip(calls, out):
            start, start_cpu, start_faults = time.perf_counter(), time.thread_time(), _minor_faults()
            call()
            wall.append((time.perf_counter() - start) * 1e3)
            cpu.append((time.thread_time() - start_cpu) * 1e3)
            faults.append(_minor_faults() - start_faults)
    return out


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


def held_bytes(new_exporter: Callable[[], AdvisorExporter], renders: int = 3) -> int:
    """Traced bytes a new exporter still holds after `renders` renders whose bodies are gone."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        exporter = new_exporter()
        for _ in range(renders):
            exporter.render_parts(False, True, True)
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def measure(n: int, level: str, with_psi: bool, repeats: int, busy: float, changed: float) -> dict:
    pods = fake_pods(n)
    store, rounds = filled_store(pods), psi_snapshots(pods, with_psi, busy)
    current = [0]  # each render meets the other PSI round, as scrapes 10 s apart would
    states = StaticStates(NodeInfo("bench-node"), pods)
    usage_rounds = [0]

    def new_usage_round() -> None:
        usage_rounds[0] += 1
        store.append(usage_round(pods, NOW + usage_rounds[0], changed, usage_rounds[0]))

    def new_exporter() -> AdvisorExporter:
        return AdvisorExporter(store, states, "bench-node", clock=lambda: NOW + usage_rounds[0] + 1,
                               psi=lambda: rounds[current[0]],
                               container_series=level == "all",
                               psi_precisions=("avg10", "avg60", "avg300") if level == "all" else ("avg10",))

    exporter = new_exporter()

    def render() -> list[bytes]:  # the pieces the HTTP endpoint writes one after the other
        current[0] ^= 1
        return exporter.render_parts(False, True, True)

    body = b"".join(render())
    lines = body.decode().split("\n")
    (render_ms, render_cpu, faults), (floor, _, _) = timed_ms((render, lambda: "\n".join(lines).encode()), repeats,
                                                              new_usage_round)
    series = sum(1 for line in lines if line and not line.startswith("#"))
    return {"pods": n, "level": level, "busy": busy, "changed": changed, "series": series, "per_pod": series / n, "kib": len(body) / 1024,
            "p50": statistics.median(render_ms), "p99": p99(render_ms), "cpu": statistics.median(render_cpu),
            "faults": statistics.median(faults), "held": held_bytes(new_exporter) / 1024,
            "floor": statistics.median(floor), "ratio": statistics.median(render_ms) / statistics.median(floor)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", default="100,1000,3000", help="comma-separated N")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--no-psi", action="store_true", help="a host whose kernel gives no PSI")
    parser.add_argument("--busy", default="1.0,0.2",
                        help="comma-separated fractions of pods whose PSI averages change between scrapes")
    parser.add_argument("--changed", default="0,1",
                        help="comma-separated fractions of pods whose usage values change between scrapes")
    args = parser.parse_args()
    print("advisor part of /metrics, N pods x 2 containers, PSI %s; render = render_parts(both halves)"
          % ("absent" if args.no_psi else "cpu/memory/io some+full"))
    print("| N pods | level | PSI busy | usage changed | series | per pod | KiB | render p50 ms | p99 ms | CPU p50 ms "
          "| floor p50 ms | faults | ratio | held KiB |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in (int(x) for x in args.pods.split(",")):
        for level in ("default", "all"):
            for busy in (float(x) for x in args.busy.split(",")):
                for changed in (float(x) for x in args.changed.split(",")):
                    r = measure(n, level, not args.no_psi, args.repeats, busy, changed)
                    print("| {pods:,} | {level} | {busy:.0%} | {changed:.0%} | {series:,} | {per_pod:.1f} | {kib:,.0f} "
                          "| {p50:.2f} | {p99:.2f} | {cpu:.2f} | {floor:.2f} | {faults:,.0f} | {ratio:.1f}x "
                          "| {held:,.0f} |".format(**r), flush=True)


if __name__ == "__main__":
    main()
