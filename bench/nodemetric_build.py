"""Building one NodeMetric report: 500 pods (each with 300 s of 1 s cpu and memory samples
in the metric cache), 30 min of 1 s node samples, three percentile windows.

    .venv/bin/python -m bench.nodemetric_build [--pods 500] [--runs 20]

Between two builds the cache gets the next 60 s of samples (one round a second, as the
collectors write them: node, pod and container series), so every build reads windows that
moved as they do in the daemon; those appends are timed apart ("60 s of appends"), which is
where running aggregates kept on append cost.

Figures: time per build (p50 / p99 of --runs builds; process CPU time; each run calls
the build and then every floor, so they meet the same moment of a busy host) of take_snapshot +
status_text_steps spliced into the last answer's object (what the API server is sent), of
take_snapshot + node_metric_text_steps (the whole object's canonical JSON text, what the
standalone route answers and the report file holds), of reading the API server's answer (its
members before the status, util/json_members.py) against json.loads of it, and what tracemalloc counts for one build: the bytes still
held after it (the result: the JSON text) and the peak held during it. Floor, same run: building a dict of the same shape and size
from ready-made strings and dumping it to JSON (no cache reads, no aggregation): what any
report of that size costs at least. A second floor adds what no build can skip: the figures
of the same pods' windows (every sample of the aggregate window, the Prod pods' peaks): one
C window_stats call for the doubles, the memory series' (kept in pages) from their counts. The overcommit round (node_load + advise) over the
same pods is measured too, and how long the daemon's stepped build holds the event loop
between two yields.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import tracemalloc
from typing import Any, Callable, Sequence

from koordlet.apis.qos import KoordQoSClass, PodQoS, PriorityBand
from koordlet.metriccache.api import Metric, Sample, SeriesKey
from koordlet.metriccache.pages import figures
from koordlet.metriccache.retention import RetentionPolicy
from koordlet.metriccache.store import MetricStore
from koordlet.reporter.nodemetric import (
    CPU_PEAK,
    MEMORY_PEAK,
    PodRows,
    node_metric_text_steps,
    snapshot_steps,
    status_text_steps,
    take_snapshot,
)
from koordlet.reporter.overcommit import SEED_CPU, SEED_MEMORY, advise
from koordlet.reporter.overcommit_load import UsageKeys, node_load_steps
from koordlet.reporter.policy import MetricCollectPolicy
from koordlet.statesinformer.model import ContainerInfo, ContainerState, PodInfo, Resources, SandboxState
from koordlet.util.json_members import members_without
from koordlet.util.json_text import canonical_json, with_last_member
from koordlet.util.steps import PODS_PER_STEP, run_steps

NOW = 1_800_000_000.0
GI = 1024 ** 3


def make_pods(count: int) -> list[PodInfo]:
    pods = []
    for i in range(count):
        uid = "pod-uid-%05d" % i
        be = i % 4 == 0
        container = ContainerInfo("ctr-%05d" % i, "main", uid, ContainerState.RUNNING, "",
                                  spec=Resources(requests={"cpu": 0 if be else 500, "memory": 0 if be else GI}))
        qos = PodQoS(KoordQoSClass.BE if be else KoordQoSClass.LS,
                     band=PriorityBand.BATCH if be else PriorityBand.PROD)
        pods.append(PodInfo(uid, "pod-%05d" % i, "ns-%d" % (i % 20), "sb-%05d" % i, SandboxState.READY, "",
                            qos, containers=(container,)))
    return pods


def fill(store: MetricStore, pods: Sequence[PodInfo]) -> None:
    """30 min of node samples, then the pods' last 300 s written round by round as the
    collectors write them (one timestamp a round for every pod and container series)."""
    node_cpu, node_mem = SeriesKey.of(Metric.NODE_CPU_USAGE_CORES), SeriesKey.of(Metric.NODE_MEMORY_USAGE_BYTES)
    store.append(Sample(node_cpu, NOW - 1799 + t, 8 + (t * 7919 % 400) / 100) for t in range(1800))
    store.append(Sample(node_mem, NOW - 1799 + t, 40 * GI + (t * 104729 % 1000) * 4096) for t in range(1800))
    keys = pod_keys(pods)
    for t in range(300):
        store.append_at(NOW - 299 + t, [(key, (n + t * 31) % 100 * scale) for key, n, scale in keys])


def pod_keys(pods: Sequence[PodInfo]) -> list[tuple[SeriesKey, int, float]]:
    """(series, pod number, scale) of each pod's and container's cpu and memory series."""
    return [(SeriesKey.of(metric, pod.uid, cid), n, scale)
            for n, pod in enumerate(pods) for cid in ("", pod.containers[0].id)
            for metric, scale in (((Metric.CONTAINER_CPU_USAGE_CORES if cid else Metric.POD_CPU_USAGE_CORES), 0.01),
                                  ((Metric.CONTAINER_MEMORY_USAGE_BYTES if cid else Metric.POD_MEMORY_USAGE_BYTES),
                                   1024 * 1024))]


def advance(store: MetricStore, pods: Sequence[PodInfo], now: float, seconds: int) -> float:
    """Append the next ``seconds`` rounds of samples after ``now``; returns the new now."""
    node_cpu, node_mem = SeriesKey.of(Metric.NODE_CPU_USAGE_CORES), SeriesKey.of(Metric.NODE_MEMORY_USAGE_BYTES)
    keys = pod_keys(pods)
    for _ in range(seconds):
        now += 1
        t = int(now - NOW) + 1799
        store.append_at(now, [(node_cpu, 8 + (t * 7919 % 400) / 100), (node_mem, 40 * GI + (t * 104729 % 1000) * 4096)])
        store.append_at(now, [(key, (n + t * 31) % 100 * scale) for key, n, scale in keys])
    return now


def floor_document(pods: Sequence[PodInfo]) -> dict[str, Any]:
    """Same shape and sizes as a real status, from ready-made strings."""
    rm = {"resources": {"cpu": "8125m", "memory": "41943040Ki"}}
    return {
        "updateTime": "2027-01-15T08:00:00Z",
        "nodeMetric": {"nodeUsage": rm, "systemUsage": rm,
                       "aggregatedNodeUsages": [{"usage": {k: rm for k in ("p50", "p90", "p95", "p99")},
                                                 "duration": d} for d in ("5m0s", "10m0s", "30m0s")]},
        "podsMetric": [{"namespace": p.namespace, "name": p.name, "priority": "koord-prod", "qos": "LS",
                        "podUsage": {"resources": {"cpu": "490m", "memory": "103809024"}}} for p in pods],
        "prodReclaimableMetric": {"resource": rm},
    }


def interleaved(rows: list[tuple[str, Callable[[], object]]], runs: int,
                between: Callable[[], object]) -> dict[str, tuple[float, float]]:
    """(p50, p99) of each row's call; every run calls each row once, one after the other, so
    a build and its floors meet the same moment of a noisy host and their ratio holds."""
    samples: dict[str, list[float]] = {name: [] for name, _ in rows}
    for _, fn in rows:
        fn()
    for _ in range(runs):
        between()
        for name, fn in rows:
            start = time.process_time()
            fn()
            samples[name].append(time.process_time() - start)
    return {name: p50_p99(taken) for name, taken in samples.items()}


def p50_p99(samples: list[float]) -> tuple[float, float]:
    samples.sort()
    return statistics.median(samples), samples[min(len(samples) - 1, int(len(samples) * 0.99))]


def allocations(fn: Callable[[], object]) -> tuple[int, int]:
    """(bytes allocated over the call, peak bytes held) as tracemalloc counts them."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    before = tracemalloc.get_traced_memory()[0]
    snapshot_before = tracemalloc.take_snapshot()
    result = fn()
    snapshot_after = tracemalloc.take_snapshot()
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    grown = sum(stat.size_diff for stat in snapshot_after.compare_to(snapshot_before, "filename") if stat.size_diff > 0)
    del result
    return max(grown, current - before), peak - before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=500)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    pods = tuple(make_pods(args.pods))  # a tuple, as the informer's pods()
    store = MetricStore(RetentionPolicy(), clock=lambda: NOW)
    fill(store, pods)
    policy = MetricCollectPolicy()
    print("pods=%d  samples in cache=%d  series=%d  runs=%d" % (len(pods), store.sample_count(), len(store),
                                                              args.runs))

    now = NOW
    appends: list[float] = []

    def next_minute() -> None:
        nonlocal now
        start = time.process_time()
        now = advance(store, pods, now, 60)
        appends.append(time.process_time() - start)

    pod_rows = PodRows(store.shared_key)  # kept across reports, as the daemon does

    # what the sink PUTs over: the object the API server answered last, without its status
    kept = {"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric",
            "metadata": {"name": "bench-node", "uid": "0b7c4a52-35a4-4f5e-9c4e-2d1f2e3a4b5c", "resourceVersion": "81234",
                         "generation": 1, "creationTimestamp": "2027-01-15T07:00:00Z"},
            "spec": {"metricCollectPolicy": policy.to_spec()}}

    def build() -> str:
        """The API server's body: the status as text, spliced into the kept object's."""
        snapshot = take_snapshot(store, pods, policy, now, pod_rows)
        assert snapshot is not None and len(snapshot.pods) == len(pods)
        return with_last_member(canonical_json(kept), "status", run_steps(status_text_steps(snapshot)))

    def build_text() -> str:
        snapshot = take_snapshot(store, pods, policy, now, pod_rows)
        assert snapshot is not None and len(snapshot.pods) == len(pods)
        return run_steps(node_metric_text_steps(snapshot, "bench-node", policy))

    def floor() -> str:
        return json.dumps(floor_document(pods), separators=(",", ":"))

    def pod_windows() -> tuple[list[tuple[Any, int, int]], list[tuple[int, ...]]]:
        """Every pod's cpu and memory window of the report, and the peaks a Prod pod's need."""
        windows: list[tuple[Any, int, int]] = []
        asked: list[tuple[int, ...]] = []
        for row in (pod_rows.of(pod) for pod in pods):
            for key, peak in ((row.cpu_key, CPU_PEAK), (row.memory_key, MEMORY_PEAK)):
                ring = store._series[key]
                lo, hi = ring.bounds(now - policy.effective().aggregate_duration_seconds, now)
                windows.append((ring.values, lo, hi))
                asked.append(peak if row.prod else ())
        return windows, asked

    def floor_with_reads() -> str:
        """The floor plus the reads no build can skip: the figures of the pods' windows
        (found before the timing) in one C window_stats call (memory series kept in pages:
        their figures from the counts, pages.figures)."""
        figures(*windows)
        return floor()

    usage_keys = UsageKeys(("cpu.usage.container",), ("mem.usage.container",), store.shared_key)  # kept across rounds, as the daemon does

    def overcommit() -> object:
        load = run_steps(node_load_steps(store, pods, 32_000, 128 * GI, usage_keys, now - 10, now))
        return advise(load, SEED_CPU, SEED_MEMORY, {}, 0, "none", "None")

    built, floored = build(), floor()
    windows = pod_windows()
    # the API server's answer to the PUT: the object with its keys sorted, as it writes a custom resource
    answer = canonical_json(json.loads(built))
    needed = ("apiVersion", "kind", "metadata", "spec")

    def read_answer() -> object:
        return members_without(answer, "status", needed)

    def decode_answer() -> object:
        return json.loads(answer)

    rows = [("build as PUT body (API)", build), ("build as text (route)", build_text),
            ("floor: same-size dict+dump", floor),
            ("floor + C window stats", floor_with_reads), ("overcommit round", overcommit),
            ("answer: before its status", read_answer), ("answer: json.loads", decode_answer)]
    results = {}
    for name, (p50, p99) in interleaved(rows, args.runs, next_minute).items():
        allocated, peak = allocations(dict(rows)[name])
        results[name] = (p50, p99, allocated, peak)
    results["60 s of appends"] = (*p50_p99(appends), 0, 0)
    holds = []
    for _ in range(args.runs):
        steps = snapshot_steps(store, pods, policy, now)
        while True:
            start = time.perf_counter()
            try:
                next(steps)
            except StopIteration:
                holds.append(time.perf_counter() - start)
                break
            holds.append(time.perf_counter() - start)
    holds.sort()
    base = results["floor: same-size dict+dump"]
    print("report JSON %d bytes, floor JSON %d bytes" % (len(built), len(floored)))
    print("%-28s %9s %9s %8s %12s %12s" % ("what (CPU time)", "p50 ms", "p99 ms", "x floor", "kept KiB", "peak KiB"))
    for name, (p50, p99, allocated, peak) in results.items():
        print("%-28s %9.2f %9.2f %8.1f %12.0f %12.0f" % (name, p50 * 1e3, p99 * 1e3, p50 / base[0],
                                                          allocated / 1024, peak / 1024))
    with_reads = results["floor + C window stats"][0]
    print("build / (floor + C window stats): PUT body %.2fx; as text: %.2fx"
          % (results["build as PUT body (API)"][0] / with_reads, results["build as text (route)"][0] / with_reads))
    print("event loop held per step of the daemon's build (%d pods a step): p50 %.2f ms, max %.2f ms"
          % (PODS_PER_STEP, statistics.median(holds) * 1e3, holds[-1] * 1e3))


if __name__ == "__main__":
    main()
