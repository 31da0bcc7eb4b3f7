"""Metrics advisor cost: collection cycles, memory over 30 minutes, aggregation, /metrics.

Run from the project root (root for --real):

    .venv/bin/python -m bench.metrics_advisor [--pods 1000] [--real] [--minutes 30]

Prints, each with its floor measured in the same run:
  cycle-fake   CPU ms of one 1 s cycle (node, pod/container usage, throttling, BE; each round into the
               store as the daemon appends it: a round's Columns through append_columns) over N pods
               with one container each (2N cgroups) on a fake hybrid tree; floor = the raw preads
               of the same files on kept fds (no parsing, no samples): per cgroup CPU time,
               memory usage and cpu.stat, plus memory.stat for the tenth refreshed each cycle
  psi-fake     the same for one PSI cycle (3 files per pod and container + /proc/pressure)
  cycle-real   the 1 s cycle on real cgroup v1 dirs (created koordlet-bench-<hex8>, removed)
  rounds-real  (--rounds-real) N pods x 2 containers of real cgroup dirs: the 1 s usage
               round (pods every round, a tenth of the containers), the 10 s throttling round
               and the 10 s PSI round (pods only), with the daemon's default intervals, as the
               daemon runs them (files read in a thread, parsed in slices on the loop), steady
               (after a round of each container turn): the round's CPU (all threads), the
               loop thread's share, the C reader's share and the longest hold, against three
               floors of the very files each round read: raw preads on kept fds, and
               open + read + close (os.open/os.read/os.close; and in C, koord_read_files); the old
               design (every file of every cgroup each round, inline on kept fds: one hold,
               fds = files); the first round (every cgroup new) and rounds with 10 new pods each
  rss          RSS of this process while the collectors run over simulated minutes (fake
               clock, 1 s ticks, PSI every 10 s), with the store's series and sample counts
  persist      one 10 s flush of the persisted (node and pod) rows of 1,000 pods to sqlite, into
               an empty file (bench/metric_flush.py measures it at the file's steady size);
               floor = a bare executemany of the same number of rows into a plain table
  aggregate    MetricStore.aggregate over 30 min of 1 s samples; floor = sorted() of the list
  scrape       the exporter's text for 10,000 series; compared with generate_latest() of
               prometheus_client Gauges holding as many series
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import structlog
from prometheus_client import CollectorRegistry, Gauge, generate_latest

from koordlet.apis.qos import KoordQoSClass, PodQoS
from koordlet.config.defaults import COLLECT_CONTAINER_RES_USED_INTERVAL_SECONDS as CONTAINER_INTERVAL
from koordlet.metriccache.api import Metric, Sample, SeriesKey
from koordlet.metriccache.retention import RetentionPolicy
from koordlet.metriccache.store import MetricStore
from koordlet.metricsadvisor.collectors.be_resource import BEResourceCollector
from koordlet.metricsadvisor.collectors.node_resource import NodeResourceCollector
from koordlet.metricsadvisor.collectors.pod_resource import STAT_EVERY, PodResourceCollector
from koordlet.metricsadvisor.collectors.pod_throttled import PodThrottledCollector
from koordlet.metricsadvisor.collectors.psi import PSICollector
from koordlet.metricsadvisor.exporter import AdvisorExporter
from koordlet.metricsadvisor.framework import (
    APPEND_SLICE,
    CollectContext,
    Holds,
    Round,
    append_in_slices,
    append_samples,
    drive,
    drive_async,
)
from koordlet.statesinformer.api import StaticStates
from koordlet.statesinformer.model import ContainerInfo, ContainerState, NodeInfo, PodInfo, SandboxState
from koordlet.util.host_facts import HostFacts
from system.cgroup_readers import CgroupReader
from system.host import Host
from system.usage_reader import UsageReader

T0 = 1_700_000_000.0


def rss_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def pods_under(parent: str, n: int) -> list[PodInfo]:
    pods = []
    for i in range(n):
        uid = "%08x-0000-4000-8000-%012x" % (i, i)
        pod_dir = "%s/pod%s" % (parent, uid)
        container = ContainerInfo("c%063x" % i, "app", uid, ContainerState.RUNNING, pod_dir + "/ctr")
        qos = KoordQoSClass.BE if i % 4 == 0 else KoordQoSClass.LS
        pods.append(PodInfo(uid, "pod-%d" % i, "bench", "sb-%d" % i, SandboxState.READY, pod_dir,
                            PodQoS(qos), containers=(container,)))
    return pods


def usage_collectors() -> list:
    return [NodeResourceCollector(1.0), PodResourceCollector(1.0), PodThrottledCollector(1.0),
            BEResourceCollector(1.0)]


def setup(host: Host, pods: list[PodInfo], store: MetricStore, collectors: list,
          keep_open: bool = True) -> CollectContext:
    facts = HostFacts(host)
    files = facts.files
    ctx = CollectContext(host, store, "bench", files, CgroupReader(files, keep_open, max_open=16384),
                         StaticStates(NodeInfo("bench"), pods), UsageReader(files, max_open=16384), facts=facts)
    for collector in collectors:
        collector.setup(ctx)
    return ctx


def cycle_cpu_ms(run: Callable[[int], object], cycles: int) -> list[float]:
    out = []
    for i in range(cycles):
        cpu = time.thread_time()
        run(i)
        out.append((time.thread_time() - cpu) * 1e3)
    return out


def raw_floor(paths: list[str], cycles: int) -> list[float]:
    """One pread of every file per cycle on kept fds: the IO the cycle cannot avoid."""
    fds = [os.open(p, os.O_RDONLY | os.O_CLOEXEC) for p in paths]
    try:
        return cycle_cpu_ms(lambda _: [os.pread(fd, 65536, 0) for fd in fds], cycles)
    finally:
        for fd in fds:
            os.close(fd)


def open_read_close_floor(paths: list[str], cycles: int) -> list[float]:
    """os.open + os.read + os.close of every file per cycle: the kernel work of a round
    that keeps no fd, plus the least Python can add."""
    read_flags = os.O_RDONLY | os.O_CLOEXEC

    def one(_: int) -> None:
        for path in paths:
            fd = os.open(path, read_flags)
            os.read(fd, 16384)
            os.close(fd)
    return cycle_cpu_ms(one, cycles)


def c_open_read_close_floor(paths: list[str], cycles: int, anchored: bool) -> list[float]:
    """The same in C, one call for all (the extension's koord_read_files): the kernel's
    part alone; ``anchored``: each file opened relative to the directory most share (a
    shorter path walk), as the collectors' batches do."""
    from system.file_io import BATCH_FILE_MAX, FileBatch, _Anchored, _ffi, _Output, _read_files

    if _read_files is None or _ffi is None:
        return [float("nan")]
    batch = FileBatch(paths)
    batch.read()  # packs the paths
    n = len(paths)
    anchors = batch._anchored if anchored else _Anchored.none(n)
    blob = batch._blob if anchored else b"".join(os.fsencode(path) + b"\0" for path in paths)
    out = _Output()
    out.fit(n, 256)
    return cycle_cpu_ms(lambda _: _read_files(anchors.blob, anchors.count, blob, anchors.anchor_of,
                                              n, out.out, out.cap, BATCH_FILE_MAX, out.offsets, out.lens), cycles)


class CReaderTime:
    """CPU seconds spent in the C batch readers (in whatever thread calls them)."""

    def __init__(self) -> None:
        import system.file_io as file_io

        self.seconds = 0.0
        self._module = file_io
        self._saved = {name: getattr(file_io, name, None) for name in ("_read_files", "_read_values")}
        for name, fn in self._saved.items():
            if fn is not None:
                setattr(file_io, name, self._timed(fn))

    def _timed(self, fn: Callable) -> Callable:
        def timed(*args: object) -> object:
            start = time.thread_time()
            try:
                return fn(*args)
            finally:
                self.seconds += time.thread_time() - start
        return timed

    def restore(self) -> None:
        for name, fn in self._saved.items():
            setattr(self._module, name, fn)


def usage_paths(ctx: CollectContext, pods: list[PodInfo]) -> list[str]:
    files = ctx.files
    assert files is not None
    paths = [str(ctx.host.proc("stat")), str(ctx.host.proc("meminfo"))]
    for i, pod in enumerate(pods):
        for cgroup in (pod.cgroup_parent, pod.containers[0].cgroup_dir):
            for resource in ("cpuacct.usage", "memory.usage_in_bytes", "cpu.stat"):
                paths.append(str(files.path(resource, cgroup)))
            if i % STAT_EVERY == 0:  # the cycle refreshes memory.stat for 1/STAT_EVERY of the objects
                paths.append(str(files.path("memory.stat", cgroup)))
    return paths


def psi_paths(ctx: CollectContext, pods: list[PodInfo]) -> list[str]:
    files = ctx.files
    assert files is not None
    paths = [str(ctx.host.proc("pressure", kind)) for kind in ("cpu", "memory", "io")]
    for pod in pods:
        for cgroup in (pod.cgroup_parent, pod.containers[0].cgroup_dir):
            paths.extend(str(files.path("%s.pressure" % kind, cgroup)) for kind in ("cpu", "memory", "io"))
    return paths


def report(label: str, costs: list[float], floor: list[float], mode: str) -> None:
    value, base = statistics.median(costs), statistics.median(floor)
    print("%-11s %-9s cpu p50 %7.2f ms/cycle (max %7.2f) | floor (raw preads) %6.2f ms | ratio %5.1fx"
          % (label, mode, value, max(costs), base, value / base if base else float("nan")))


def into_store(store: MetricStore, collector: Any, now: float) -> None:
    """One round of `collector` into the store, as the daemon's scheduler appends it (a
    round collector's Columns through append_columns)."""
    if hasattr(collector, "round"):
        append_samples(store, now, drive(collector.round(now)))
    else:
        store.append_at(now, collector.collect(now))


def bench_cycles(label: str, host: Host, pods: list[PodInfo], cycles: int) -> None:
    results = {}
    for keep_open in (True, False):
        store = MetricStore()
        collectors = usage_collectors()
        ctx = setup(host, pods, store, collectors, keep_open)

        def one(i: int, collectors=collectors, store=store) -> None:
            now = T0 + i
            for collector in collectors:
                into_store(store, collector, now)

        one(-1)  # warm: kept fds opened, keys made
        usage = cycle_cpu_ms(one, cycles)
        psi = PSICollector(10.0)
        try:
            psi.setup(ctx)
            psi.collect(T0)
            psi_costs = cycle_cpu_ms(lambda i, store=store, psi=psi: into_store(store, psi, T0 + 10 * i),
                                     max(3, cycles // 3))
        except Exception as exc:  # noqa: BLE001 - report and go on
            print("psi-%s      unavailable: %s" % (label, exc))
            psi_costs = []
        results[keep_open] = (usage, psi_costs, len(store))
        assert ctx.reader is not None and ctx.usage is not None
        ctx.reader.close()
        ctx.usage.close()
    floor_usage = raw_floor(usage_paths(ctx, pods), cycles)
    floor_psi = raw_floor(psi_paths(ctx, pods), max(3, cycles // 3))
    for keep_open, (usage, psi_costs, _series) in results.items():
        mode = "kept fds" if keep_open else "open/read"
        report("cycle-%s" % label, usage, floor_usage, mode)
        if psi_costs:
            report("psi-%s" % label, psi_costs, floor_psi, mode)
    print("%-11s series in store after the cycles: %d" % ("", results[True][2]))


def bench_rss(host: Host, pods: list[PodInfo], minutes: int) -> None:
    store = MetricStore(RetentionPolicy())
    collectors = usage_collectors()
    ctx = setup(host, pods, store, collectors)
    psi = PSICollector(10.0)
    psi.setup(ctx)
    start = rss_mib()
    print("rss         start %.1f MiB (%d pods, 1 container each, retention node %.0f s / pod %.0f s)"
          % (start, len(pods), store.policy.node_seconds, store.policy.pod_seconds))
    wall = time.perf_counter()
    for second in range(minutes * 60 + 1):
        now = T0 + second
        for collector in collectors:
            into_store(store, collector, now)
        if second % 10 == 0:
            into_store(store, psi, now)
        if second % 300 == 0:
            store.expire(now)
            print("rss         t=%4.1f min  %6.1f MiB (+%5.1f)  series %6d  samples %8d"
                  % (second / 60, rss_mib(), rss_mib() - start, len(store), store.sample_count()))
    print("rss         simulated %d min in %.0f s of wall time" % (minutes, time.perf_counter() - wall))
    assert ctx.reader is not None and ctx.usage is not None
    ctx.reader.close()
    ctx.usage.close()


def bench_persist(pods: list[PodInfo]) -> None:
    import sqlite3

    from koordlet.metriccache.sqlite_persistence import SqlitePersistence
    from koordlet.metriccache.store import DB_FILE_NAME

    with tempfile.TemporaryDirectory(prefix="koordlet-bench-db-") as tmp:
        store = MetricStore(persistence=SqlitePersistence(Path(tmp) / DB_FILE_NAME), clock=lambda: T0)
        keys = [SeriesKey.of(metric, pod.uid) for pod in pods
                for metric in (Metric.POD_CPU_USAGE_CORES, Metric.POD_MEMORY_USAGE_BYTES,
                               Metric.POD_CPU_THROTTLED_RATIO)]
        keys.append(SeriesKey.of(Metric.NODE_CPU_USAGE_CORES))
        costs = []
        for second in range(40):
            store.append_at(T0 + second, [(key, 0.5) for key in keys])
            if second % 10 == 9:
                cpu = time.thread_time()
                rows = store.flush()
                costs.append(((time.thread_time() - cpu) * 1e3, rows))
        store.close()
        db = sqlite3.connect(str(Path(tmp) / "floor.sqlite"), isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("CREATE TABLE t (a INTEGER, b REAL, c REAL, PRIMARY KEY (a, b)) WITHOUT ROWID")
        floor = []
        for batch in range(4):
            data = [(i, T0 + batch * 10 + i // len(keys), 0.5) for i in range(len(keys) * 10)]
            cpu = time.thread_time()
            db.execute("BEGIN")
            db.executemany("INSERT OR REPLACE INTO t VALUES (?, ?, ?)", data)
            db.execute("COMMIT")
            floor.append((time.thread_time() - cpu) * 1e3)
        db.close()
    steady = costs[1:]  # the first flush also names every series
    ms = statistics.median(c for c, _ in steady)
    rows = steady[0][1]
    print("persist     flush of %d rows (10 s of %d series) cpu p50 %.1f ms = %.2f us/row | floor executemany "
          "%.1f ms | ratio %.1fx | first flush %.1f ms" % (rows, len(keys), ms, ms * 1e3 / rows,
                                                           statistics.median(floor[1:]), ms / statistics.median(floor[1:]),
                                                           costs[0][0]))


def bench_append(n: int, rounds: int) -> None:
    """The usage round's samples into a persisting store the way before (append_at of
    (key, value) pairs, made outside the timing) and now (append_columns of the round's kept
    keys tuple and a values list), in APPEND_SLICE slices, alternated round by round on two
    stores; floor: a dict.get of each key in the store's series dict."""
    containers = [SeriesKey.of(metric, "p%d" % (i // 2), "c%d" % i) for i in range(2 * n)
                  for metric in (Metric.CONTAINER_MEMORY_USAGE_BYTES, Metric.CONTAINER_CPU_USAGE_CORES)]
    pods = [SeriesKey.of(metric, "p%d" % i) for i in range(n)
            for metric in (Metric.POD_MEMORY_USAGE_BYTES, Metric.POD_CPU_USAGE_CORES)]
    every = round(CONTAINER_INTERVAL)
    turns = [tuple(pods + [key for i, key in enumerate(containers) if i // 2 % every == phase]) for phase in range(every)]
    costs: dict[str, list[float]] = {"append_at": [], "append_columns": [], "floor": []}
    with tempfile.TemporaryDirectory(prefix="koordlet-bench-") as tmp:
        for kind in ("append_at", "append_columns"):
            (Path(tmp) / kind).mkdir()
        stores = {kind: MetricStore.open(Path(tmp) / kind) for kind in ("append_at", "append_columns")}
        for r in range(WARM_ROUNDS * 3 + rounds):
            now, keys = T0 + r, turns[r % every]
            values: list[float | None] = [float(r + i % 7) for i in range(len(keys))]
            pairs = list(zip(keys, values))
            for kind in list(costs)[r % 3:] + list(costs)[:r % 3]:
                cpu = time.thread_time()
                _append_way(kind, stores["append_columns" if kind == "append_columns" else "append_at"], now,
                            keys, values, pairs)
                if r >= WARM_ROUNDS * 3:
                    costs[kind].append((time.thread_time() - cpu) * 1e6)
            if r % every == every - 1:  # the disk's turn, outside the timing
                for store in stores.values():
                    store.flush()
        for store in stores.values():
            store.close()
    floor = statistics.median(costs["floor"])
    print("append %d pods + %d containers (%d samples a round), median of %d rounds; CPU us per round, alternated"
          % (n, 2 * n, len(turns[0]), rounds))
    for kind in ("append_at", "append_columns"):
        cost = statistics.median(costs[kind])
        print("  %-14s %7.0f = %5.1fx floor (dict.get of each key %5.0f)" % (kind, cost, cost / floor, floor))


def _append_way(kind: str, store: MetricStore, now: float, keys: tuple[SeriesKey, ...], values: list[float | None],
                pairs: list[tuple[SeriesKey, float | None]]) -> None:
    if kind == "append_at":
        for start in range(0, len(pairs), APPEND_SLICE):
            store.append_at(now, pairs[start:start + APPEND_SLICE])  # type: ignore[arg-type]
    elif kind == "append_columns":
        for start in range(0, len(keys), APPEND_SLICE):
            store.append_columns(now, keys, values, start, start + APPEND_SLICE)
    else:
        series = store._series
        for key in keys:
            series.get(key)


def bench_aggregate() -> None:
    store = MetricStore()
    key = SeriesKey.of(Metric.NODE_CPU_USAGE_CORES)
    values = [((i * 7919) % 1000) / 100.0 for i in range(1800)]
    store.append([Sample(key, T0 + i, v) for i, v in enumerate(values)])
    n = 2000
    start = time.perf_counter()
    for _ in range(n):
        store.aggregate(key, T0, T0 + 1799)
    agg_us = (time.perf_counter() - start) / n * 1e6
    start = time.perf_counter()
    for _ in range(n):
        sorted(values)
    floor_us = (time.perf_counter() - start) / n * 1e6
    print("aggregate   %.1f us per 30 min window of 1,800 samples | floor sorted() %.1f us | ratio %.1fx"
          % (agg_us, floor_us, agg_us / floor_us))


def bench_scrape(series: int = 10_000) -> None:
    pods = pods_under("kubepods/burstable", series // 10)  # 10 series per pod below
    store = MetricStore()
    samples = []
    for pod in pods:  # 3 pod + 5 container series + 2 pod PSI lines (cpu some, no full)
        cid = pod.containers[0].id
        for metric in (Metric.POD_CPU_USAGE_CORES, Metric.POD_MEMORY_USAGE_BYTES, Metric.POD_CPU_THROTTLED_RATIO):
            samples.append(Sample(SeriesKey.of(metric, pod.uid), T0, 1.5))
        for metric in (Metric.CONTAINER_CPU_USAGE_CORES, Metric.CONTAINER_MEMORY_USAGE_BYTES,
                       Metric.CONTAINER_CPU_THROTTLED_RATIO, Metric.CONTAINER_CPU_CYCLES,
                       Metric.CONTAINER_INSTRUCTIONS):
            samples.append(Sample(SeriesKey.of(metric, pod.uid, cid), T0, 2.5))
    store.append(samples)
    psi = {(pod.uid, ""): {"cpu": ((0.5, 0.25, 0.125), None)} for pod in pods}
    exporter = AdvisorExporter(store, StaticStates(NodeInfo("bench"), pods), "bench", clock=lambda: T0,
                               psi=lambda: psi)
    gauges = CollectorRegistry()
    labels = ["node", "pod_uid", "pod_name", "pod_namespace"]
    plain = Gauge("koordlet_pod_used_cpu_cores", "plain gauges for comparison", labels, registry=gauges)
    for i in range(len(pods) * 10):
        plain.labels("bench", "uid-%d" % i, "pod-%d" % i, "bench").set(1.5)
    for label, render in (("exporter", exporter.render), ("plain Gauge", lambda: generate_latest(gauges))):
        render()
        times = []
        for _ in range(10):
            start = time.perf_counter()
            body = render()
            times.append((time.perf_counter() - start) * 1e3)
        lines = sum(1 for line in body.splitlines() if line and not line.startswith(b"#"))
        print("scrape      %-11s %6d series  p50 %6.1f ms  (%d bytes)"
              % (label, lines, statistics.median(times), len(body)))


def pods_with_containers(parent: str, n: int, containers: int = 2) -> list[PodInfo]:
    pods = []
    for i in range(n):
        uid = "%08x-0000-4000-8000-%012x" % (i, i)
        pod_dir = "%s/pod%s" % (parent, uid)
        ctrs = tuple(ContainerInfo("c%d%062x" % (j, i), "app%d" % j, uid, ContainerState.RUNNING,
                                   "%s/ctr%d" % (pod_dir, j)) for j in range(containers))
        pods.append(PodInfo(uid, "pod-%d" % i, "bench", "sb-%d" % i, SandboxState.READY, pod_dir,
                            PodQoS(KoordQoSClass.LS), containers=ctrs))
    return pods


def round_paths(ctx: CollectContext, pods: list[PodInfo], psi: bool) -> list[str]:
    """The files one round reads (memory.stat: the tenth refreshed each round)."""
    files = ctx.files
    assert files is not None
    paths = []
    cgroups = [c for pod in pods for c in (pod.cgroup_parent, *(ctr.cgroup_dir for ctr in pod.containers))]
    for i, cgroup in enumerate(cgroups):
        if psi:
            paths.extend(str(files.path("%s.pressure" % kind, cgroup)) for kind in ("cpu", "memory", "io"))
            continue
        for resource in ("cpuacct.usage", "memory.usage_in_bytes", "cpu.stat"):
            paths.append(str(files.path(resource, cgroup)))
        if i % STAT_EVERY == 0:
            paths.append(str(files.path("memory.stat", cgroup)))
    return paths


CHURN = 10  # pods added per round in the churn rounds
# rounds run after the first and before the measured ones: every container turn once (its
# batches made; the churn rounds show what making them costs)
WARM_ROUNDS = round(CONTAINER_INTERVAL)


def bench_rounds_real(all_pods: list[PodInfo], n: int, rounds: int) -> None:
    """The daemon's way (threaded batch reads, slices) vs the way before (inline, kept fds)
    vs the floor (raw preads on kept fds), each a median over ``rounds``; then ``rounds``
    rounds during which CHURN pods appear before each (``all_pods`` has them after the n)."""
    pods = all_pods[:n]
    host = Host()
    # as the daemon runs them by default: containers' usage every 10 s (a tenth a round),
    # throttling every 10 s, PSI of pods only
    kinds = {"1s usage": lambda: [PodResourceCollector(1.0, CONTAINER_INTERVAL)],
             "throttle": lambda: [PodThrottledCollector(CONTAINER_INTERVAL)],
             "psi": lambda: [PSICollector(10.0, containers=False)]}
    print("rounds-real %d pods x %d containers (%d cgroups), median of %d rounds; CPU ms per round"
          % (len(pods), len(pods[0].containers), len(pods) * (1 + len(pods[0].containers)), rounds))
    loop = asyncio.new_event_loop()
    try:
        for kind, make in kinds.items():
            collectors = make()
            store = MetricStore()
            ctx = setup(host, pods, store, collectors, keep_open=False)
            gen2 = _Gen2()
            clock = [T0]  # each round a tick later: its samples go on as the daemon's do
            append_ms: list[float] = []
            read: list[list[str]] = []  # the files each round read

            c_time = CReaderTime()
            c_ms: list[float] = []

            async def one_round(collectors: list = collectors, gen2: _Gen2 = gen2, read: list[list[str]] = read,
                                c_time: CReaderTime = c_time,
                                c_ms: list[float] = c_ms, store: MetricStore = store, clock: list[float] = clock,
                                append_ms: list[float] = append_ms) -> tuple[float, float, float, bool]:
                holds = Holds()
                cpu, collections, c_before = time.process_time(), gen2.count, c_time.seconds
                read.append([])
                appending = 0.0
                for collector in collectors:
                    now = clock[0]
                    samples = await drive_async(_recorded(collector.round(now), read[-1]), holds)
                    appending -= holds.cpu
                    await append_in_slices(store, now, samples, holds)
                    appending += holds.cpu
                    clock[0] += collector.interval
                c_ms.append((c_time.seconds - c_before) * 1e3)
                append_ms.append(appending * 1e3)
                return ((time.process_time() - cpu) * 1e3, holds.cpu * 1e3, holds.longest * 1e3,
                        gen2.count > collections)

            try:
                first = loop.run_until_complete(one_round())  # every cgroup new: keys, paths, batches made
                for _ in range(WARM_ROUNDS):  # each turn once: its batches made, as in a steady daemon
                    loop.run_until_complete(one_round())
                del read[:], c_ms[:], append_ms[:]
                gc.callbacks.append(gen2)
                try:
                    now_ = [loop.run_until_complete(one_round()) for _ in range(rounds)]
                finally:
                    gc.callbacks.remove(gen2)
            finally:
                c_time.restore()
            read[:] = [[path for batch in batches for path in batch.paths] for batches in read]
            # floors, of the very files each measured round read: raw preads on kept fds; open +
            # read + close in Python; the same in C
            floor = statistics.median(statistics.median(raw_floor(files, 3)) for files in read)
            orc = statistics.median(statistics.median(open_read_close_floor(files, 3)) for files in read)
            c_orc = statistics.median(statistics.median(c_open_read_close_floor(files, 3, False)) for files in read)
            c_near = statistics.median(statistics.median(c_open_read_close_floor(files, 3, True)) for files in read)
            in_c = statistics.median(c_ms)
            old_paths = round_paths(ctx, pods, kind == "psi")
            total, on_loop = statistics.median(r[0] for r in now_), statistics.median(r[1] for r in now_)
            # a gen-2 collection holds the loop wherever it falls (its cost is the whole heap's)
            clean = [r[2] for r in now_ if not r[3]] or [float("nan")]
            hold, worst_clean = statistics.median(clean), max(clean)
            worst = max(r[2] for r in now_)
            before, before_first = _inline_kept_fds(ctx, pods, kind == "psi", rounds)
            print("%-9s files %5d a round (the old design: %d) | floors: raw preads of them on kept fds %6.2f; "
                  "open+read+close %6.2f in Python, %6.2f in C, %6.2f in C relative to the shared dirs"
                  % (kind, statistics.median(len(files) for files in read), len(old_paths), floor, orc, c_orc, c_near))
            print("%-9s now CPU %6.2f = %.1fx pread floor, %.2fx open/read/close in Python, %.2fx in C, %.2fx in C "
                  "relative | of it in the C reader %6.2f (%.2fx the relative C floor), the rest (Python: batches, "
                  "parsing, samples, thread handoff) %6.2f" % ("", total, total / floor, total / orc, total / c_orc,
                                                               total / c_near, in_c, in_c / c_near, total - in_c))
            print("%-9s appending the round's samples to the metric cache (on the loop, in the CPU above) %6.2f"
                  % ("", statistics.median(append_ms)))
            print("%-9s now (batch in a thread, slices, 0 fds kept): on the loop %6.2f, "
                  "longest hold p50 %5.2f (%.2fx pread floor), max %5.2f in the %d rounds without a gen-2 GC; "
                  "max %6.2f with the %d gen-2 GCs (longest %.1f)"
                  % ("", on_loop, hold, hold / floor, worst_clean, len(clean), worst,
                     gen2.count, gen2.longest))
            print("%-9s the old design (every file of every cgroup each round, inline on %d kept fds): CPU %6.2f "
                  "= one hold" % ("", len(old_paths), before))
            print("%-9s first round (every cgroup new): now longest hold %6.2f, on the loop %6.2f%s | before one "
                  "hold of %6.2f (opening the fds)" % ("", first[2], first[1], " (a gen-2 GC in it)" if first[3] else "",
                                                       before_first))
            states = ctx.states
            assert isinstance(states, StaticStates)
            gc.callbacks.append(gen2)
            try:
                churn = []
                for r in range(rounds):
                    for pod in all_pods[n + r * CHURN:n + (r + 1) * CHURN]:
                        states.put(pod)
                    churn.append(loop.run_until_complete(one_round()))
            finally:
                gc.callbacks.remove(gen2)
            clean = [r[2] for r in churn if not r[3]] or [float("nan")]
            print("%-9s churn (+%d pods a round): CPU p50 %6.2f, on the loop %6.2f, longest hold p50 %5.2f, max %5.2f "
                  "in the %d rounds without a gen-2 GC; max %6.2f overall"
                  % ("", CHURN, statistics.median(r[0] for r in churn), statistics.median(r[1] for r in churn),
                     statistics.median(clean), max(clean), len(clean), max(r[2] for r in churn)))
            for pod in all_pods[n:]:
                states.remove(pod.uid)
    finally:
        loop.close()


def _recorded(round_: Round, seen: list) -> Round:
    """The round, with every batch it asks for added to ``seen`` (their paths are decoded
    after the timed rounds: a batch keeps only its packed blob)."""
    reply = None
    while True:
        try:
            request = round_.send(reply)
        except StopIteration as stop:
            return stop.value
        if request is not None:
            seen.extend(request)
        reply = yield request


class _Gen2:
    """Counts gen-2 collections and the longest one (ms): they hold the loop whoever runs."""

    def __init__(self) -> None:
        self.count, self.longest, self._start = 0, 0.0, 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.count += 1
            self.longest = max(self.longest, (time.perf_counter() - self._start) * 1e3)


def _inline_kept_fds(ctx: CollectContext, pods: list[PodInfo], psi: bool, rounds: int) -> tuple[float, float]:
    """The reads of one round as before this change: per-file calls on kept fds, inline;
    (median CPU ms, CPU ms of the first round, which opens the fds)."""
    files = ctx.files
    assert files is not None
    reader = UsageReader(files, max_open=16384)
    psi_reader = CgroupReader(files, keep_open=True, max_open=16384)
    cgroups = [c for pod in pods for c in (pod.cgroup_parent, *(ctr.cgroup_dir for ctr in pod.containers))]

    def one(_: int) -> None:
        for i, cgroup in enumerate(cgroups):
            if psi:
                for kind in ("cpu", "memory", "io"):
                    psi_reader.text("%s.pressure" % kind, cgroup)
            else:
                reader.cpu_ns_and_working_set(cgroup, i % STAT_EVERY == 0)
                reader.throttle_counts(cgroup)

    try:
        first = cycle_cpu_ms(one, 1)[0]
        return statistics.median(cycle_cpu_ms(one, rounds)), first
    finally:
        reader.close()
        psi_reader.close()


def make_real_tree(pods: list[PodInfo], root: Path) -> list[Path]:
    created = []
    for controller in ("cpu", "cpuacct", "memory", "unified"):
        base = root / controller
        if not (base / "cgroup.procs").exists():
            continue
        created.append(base)
        for pod in pods:
            for container in pod.containers:
                (base / container.cgroup_dir).mkdir(parents=True)
    return created


def remove_real_tree(bases: list[Path], top: str) -> None:
    for base in bases:
        for directory in sorted((base / top).rglob("*"), key=lambda p: len(p.parts), reverse=True):
            if directory.is_dir():
                directory.rmdir()
        (base / top).rmdir()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--cycles", type=int, default=30)
    parser.add_argument("--minutes", type=int, default=30)
    parser.add_argument("--real", action="store_true", help="also run on real cgroups (root)")
    parser.add_argument("--skip-rss", action="store_true")
    parser.add_argument("--rounds-real", action="store_true",
                        help="only the rounds on N pods x 2 containers of real cgroups (root)")
    parser.add_argument("--append", action="store_true", help="only the usage round's appends to the metric cache")
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    if args.append:
        bench_append(args.pods, args.cycles)
        return
    if args.rounds_real:
        top = "koordlet-bench-%s" % uuid.uuid4().hex[:8]
        real_pods = pods_with_containers(top, args.pods + CHURN * args.cycles)
        bases = make_real_tree(real_pods, Path("/sys/fs/cgroup"))
        try:
            bench_rounds_real(real_pods, args.pods, args.cycles)
        finally:
            remove_real_tree(bases, top)
        return
    from tests.system.fake_trees import add_cgroup, build_hybrid_tree, build_proc_tree

    with tempfile.TemporaryDirectory(prefix="koordlet-bench-") as tmp:
        host = build_hybrid_tree(Path(tmp))
        build_proc_tree(Path(tmp))
        pods = pods_under("kubepods/burstable", args.pods)
        for tier in ("kubepods", "kubepods/burstable", "kubepods/besteffort"):
            add_cgroup(host, tier)
        for pod in pods:
            add_cgroup(host, pod.cgroup_parent)
            add_cgroup(host, pod.containers[0].cgroup_dir)
        print("metrics_advisor: %d pods x 1 container, fake hybrid tree in %s" % (args.pods, tmp))
        bench_cycles("fake", host, pods, args.cycles)
        if args.real:
            top = "koordlet-bench-%s" % uuid.uuid4().hex[:8]
            real_pods = pods_under(top, args.pods)
            bases = make_real_tree(real_pods, Path("/sys/fs/cgroup"))
            try:
                bench_cycles("real", Host(), real_pods, args.cycles)
            finally:
                remove_real_tree(bases, top)
        if not args.skip_rss:
            bench_rss(host, pods, args.minutes)
    bench_persist(pods_under("kubepods/burstable", args.pods))
    bench_aggregate()
    bench_scrape()


if __name__ == "__main__":
    main()
