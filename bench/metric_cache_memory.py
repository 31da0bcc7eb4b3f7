"""Memory of the metric cache at N pods, filled as the daemon's collectors fill it.

    python -m bench.metric_cache_memory [--pods 1000] [--tracemalloc]

The store (the daemon's retention: container series sized for their 10 s interval; no
file) gets, per pod of 2 containers, the series the default collectors write and at their
cadence, each collector with its own round timestamp (time.time() of its round): pod
resource (2 pod series every second, and 4 container series every 10 s, a tenth of the
containers in each second's round), throttling (1 pod + 2 container, 10 s); the node's PSI
avg10 (6 series, 10 s: pods' and containers' PSI is not stored); node, system and BE series
(1 s) for the whole 30 min node retention. CPI is off by default (gate).
Expiry runs every 300 s (the module's gc interval). Figures are taken just
before an expiry (the fullest the cache gets: the HWM) and just after it; the store's total
(keys included) before each of the last three expiries shows whether it stays flat once
the pods' retention is full.

Bytes are counted by walking the store (sys.getsizeof of every object it owns: rings,
their arrays, the indexes), keys apart (the collectors hold the same keys). Floor: the raw
bytes of the same samples in two array('d') of exactly their length (16 B a sample), and
the ratio. The process's VmRSS before and after the fill is printed too (what the
allocator holds for it). --tracemalloc also lists the top allocation sites (slower).
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import sys
import time
import tracemalloc
from array import array
from collections.abc import Iterator

from bench.daemon_idle import rss_kib
from koordlet.config.defaults import COLLECT_CONTAINER_RES_USED_INTERVAL_SECONDS
from koordlet.metriccache.api import Metric, SeriesKey
from koordlet.metriccache.retention import RetentionPolicy
from koordlet.metriccache.store import MetricStore
from koordlet.metricsadvisor.collectors.psi import NODE_KEYS as PSI_NODE_KEYS

GC_INTERVAL = 300
CONTAINER_EVERY = int(COLLECT_CONTAINER_RES_USED_INTERVAL_SECONDS)  # seconds, the daemon's default
NODE_KEYS = tuple(SeriesKey.of(metric) for metric in (
    Metric.NODE_CPU_USAGE_CORES, Metric.NODE_MEMORY_USAGE_BYTES, Metric.SYS_CPU_USAGE_CORES,
    Metric.SYS_MEMORY_USAGE_BYTES, Metric.BE_CPU_USAGE_CORES, Metric.BE_MEMORY_USAGE_BYTES,
    Metric.BE_CPU_LIMIT_CORES, Metric.BE_CPU_REQUEST_CORES))


class Collector:
    """One collector's keys, cadence and round-time offset within the second; `turns`: keys
    read in turn, one list per round (the containers of the 1 s usage round)."""

    def __init__(self, name: str, every: int, offset: float, keys: list[SeriesKey],
                 turns: list[list[SeriesKey]] | None = None) -> None:
        self.name, self.every, self.offset, self.keys = name, every, offset, keys
        self.turns = turns or [[]]

    def keys_at(self, second: int) -> list[SeriesKey]:
        return self.keys + self.turns[second % len(self.turns)]


def collectors(pods: int) -> tuple[Collector, list[Collector]]:
    usage: list[SeriesKey] = []
    usage_turns: list[list[SeriesKey]] = [[] for _ in range(CONTAINER_EVERY)]
    throttled: list[SeriesKey] = []
    for i in range(pods):
        uid = "%08x-0000-4000-8000-%012x" % (i, i)
        containers = ["%064x" % (i * 2 + c) for c in range(2)]
        usage += [SeriesKey.of(Metric.POD_CPU_USAGE_CORES, uid), SeriesKey.of(Metric.POD_MEMORY_USAGE_BYTES, uid)]
        throttled.append(SeriesKey.of(Metric.POD_CPU_THROTTLED_RATIO, uid))
        for n, cid in enumerate(containers):
            usage_turns[(i * 2 + n) % CONTAINER_EVERY] += [SeriesKey.of(Metric.CONTAINER_CPU_USAGE_CORES, uid, cid),
                                                           SeriesKey.of(Metric.CONTAINER_MEMORY_USAGE_BYTES, uid, cid)]
            throttled.append(SeriesKey.of(Metric.CONTAINER_CPU_THROTTLED_RATIO, uid, cid))
    node = Collector("node", 1, 0.0012, list(NODE_KEYS))
    return node, [Collector("pod_resource", 1, 0.0031, usage, usage_turns),
                  Collector("throttled", CONTAINER_EVERY, 0.2107, throttled),
                  Collector("psi", 10, 0.4403, list(PSI_NODE_KEYS))]


def value_for(key: SeriesKey, rng: random.Random) -> float:
    if key.metric.endswith("_bytes"):
        return float(rng.randrange(1, 1 << 20) * 4096)  # memory is counted in pages
    return rng.random() * 4


def fill(store: MetricStore, pods: int, seconds: int, rng: random.Random) -> Iterator[int]:
    """Run the collectors over `seconds` simulated seconds; yields each second before the
    store's expiry at multiples of GC_INTERVAL. Pod series start late enough to be at their
    fullest at the end (their retention is at most 300 s) without paying for 30 minutes."""
    node, per_pod = collectors(pods)
    pods_from = seconds - 3 * GC_INTERVAL
    base = 1.78e9
    for second in range(seconds):
        if second and second % GC_INTERVAL == 0:
            yield second
            store.expire(base + second)
        active = [node] + (per_pod if second >= pods_from else [])
        for collector in active:
            if second % collector.every:
                continue
            now = base + second + collector.offset + rng.random() * 1e-4
            store.append_at(now, [(key, value_for(key, rng)) for key in collector.keys_at(second)])


def deep_bytes(store: MetricStore) -> dict[str, int]:
    """Bytes the store's objects take, by kind (each object counted once)."""
    seen: set[int] = set()
    out: dict[str, int] = {}

    def add(kind: str, obj: object) -> None:
        if id(obj) not in seen:
            seen.add(id(obj))
            out[kind] = out.get(kind, 0) + sys.getsizeof(obj)

    rings = store._series
    add("index: series dict", rings)
    for index_name in ("_by_metric", "_by_pod"):
        index = getattr(store, index_name)
        add("index: %s" % index_name, index)
        for members in index.values():
            add("index: %s" % index_name, members)
    for ring in rings.values():
        add("ring objects", ring)
        for slot in type(ring).__slots__:
            part = getattr(ring, slot)
            if isinstance(part, array):
                add("value arrays" if slot == "values" else "timestamp arrays", part)
            elif isinstance(part, float):
                add("ring floats", part)
        timeline = getattr(ring, "timeline", None)
        if timeline is not None:  # timestamps shared by the series of one round
            add("timelines: objects", timeline)
            if isinstance(timeline.users, (set, dict)):  # a timeline read by one series holds that series
                add("timelines: users sets", timeline.users)
            add("timestamp arrays", timeline.ts)
    for key in rings:
        add("keys (shared with collectors)", key)
        add("keys (shared with collectors)", key.labels)
    return out


def floor_bytes(store: MetricStore) -> int:
    """Two exact-length array('d') per series of the same samples, their data only."""
    return store.sample_count() * 16


def report(label: str, store: MetricStore, pods: int) -> None:
    gc.collect()
    parts = deep_bytes(store)
    keys = parts.pop("keys (shared with collectors)", 0)
    total = sum(parts.values())
    samples = store.sample_count()
    floor = floor_bytes(store)
    series = len(store)
    timelines = len({id(ring.timeline) for ring in store._series.values()
                     if getattr(ring, "timeline", None) is not None})
    print("%-14s series %6d  timelines %6d  samples %9d  store %7.2f MiB  floor %7.2f MiB  ratio %.2f  "
          "per series %5.0f B (floor %4.0f)  per pod %6.0f B (floor %6.0f)  keys %.2f MiB"
          % (label, series, timelines, samples, total / 2**20, floor / 2**20, total / floor, total / series,
             floor / series, total / pods, floor / pods, keys / 2**20))
    for kind, size in sorted(parts.items(), key=lambda item: -item[1]):
        print("    %-28s %8.2f MiB  %6.0f B/series" % (kind, size / 2**20, size / series))
    values = parts.get("value arrays", 0)
    print("    value arrays against their data alone (8 B a sample, no header, no spare room): %.2f MiB, ratio %.2f"
          % (samples * 8 / 2**20, values / (samples * 8)))
    kept = sum(len(ring) * ring.values.itemsize for ring in store._series.values())
    paged = sum(len(ring) for ring in store._series.values() if ring.values.itemsize == 4)
    print("    the same at each array's own item size (memory series in 4-byte pages, pages.py: %d samples): "
          "%.2f MiB, ratio %.2f" % (paged, kept / 2**20, values / kept))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--tracemalloc", action="store_true", help="top allocation sites (slower)")
    args = parser.parse_args()
    policy = RetentionPolicy(container_sample_interval=float(CONTAINER_EVERY))
    seconds = int(policy.node_seconds) + GC_INTERVAL
    print("metric_cache_memory: %d pods x 2 containers, default retention (node %.0f s, pod %.0f s, "
          "container %.0f s), expiry every %d s, %d simulated s; store bytes walked, floor = 16 B a sample"
          % (args.pods, policy.node_seconds, policy.pod_seconds, policy.container_seconds, GC_INTERVAL, seconds))
    if args.tracemalloc:
        tracemalloc.start(1)
    gc.collect()
    rss_before = rss_kib(os.getpid()) / 1024
    store = MetricStore(policy)
    wall = time.perf_counter()
    for second in fill(store, args.pods, seconds + 1, random.Random(18)):
        if second >= seconds - 2 * GC_INTERVAL:  # pods' series full: the store should stay flat
            gc.collect()
            print("at %4d s, before expiry: store %.2f MiB, %d samples"
                  % (second, sum(deep_bytes(store).values()) / 2**20, store.sample_count()))
        if second == seconds:
            report("before expiry", store, args.pods)
            if args.tracemalloc:
                snapshot = tracemalloc.take_snapshot().filter_traces(
                    [tracemalloc.Filter(True, "*koordlet/metriccache/*")])
                for stat in snapshot.statistics("lineno")[:8]:
                    print("    traced %-50s %8.2f MiB  %9d blocks" % (
                        "%s:%d" % (stat.traceback[0].filename.split("koordlet/")[-1], stat.traceback[0].lineno),
                        stat.size / 2**20, stat.count))
    report("after expiry", store, args.pods)
    gc.collect()
    print("process VmRSS %.1f -> %.1f MiB over the fill (the allocator's view: the store, the collectors' keys, "
          "spare room and fragmentation; not meaningful with --tracemalloc)" % (rss_before, rss_kib(os.getpid()) / 1024))
    print("simulated in %.1f s of wall time" % (time.perf_counter() - wall))


if __name__ == "__main__":
    main()
