"""Executor batch cost: 1,000 containers x 6 resources on real cgroup v1.

Run as root from the project root:  python -m bench.executor_batch [--containers N]

Creates koordlet-bench-<uuid8>/c0000.. in the v1 cpu and memory hierarchies,
removes them afterwards, and prints per-batch wall and CPU (process_time)
p50/p99 for:
  steady        the same batch again: every update cached, no syscalls
  cold-changed  every value differs from the last batch's: one write each, no read
  cold-first    a fresh executor (empty cache) on changed files: read + write each
  read-back     use_cache=False on files that hold their values: every file read and
                compared, none written (the read-back passes of CPU suppress and burst,
                the reconciler's asked-for pass); floor: one C read of the same files
plus the cost of building the updaters and a raw open+write+close floor.
"""
from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import structlog
from prometheus_client import CollectorRegistry

from resourceexecutor import KeptFdFileIO, KernelFileIO, Outcome, ResourceExecutor
from resourceexecutor.file_io import CgroupFileIO
from system.cgroup_files import CgroupFiles
from system.file_io import read_files_once
from system.host import Host

ROOT = Path("/sys/fs/cgroup")
CONTROLLERS = ("cpu", "memory")

# two value sets; every constraint (burst <= quota, quota >= 1000) holds in any write order
VALUES = {
    "A": (("cpu.shares", 512), ("cpu.cfs_period_us", 100_000), ("cpu.cfs_quota_us", 50_000),
          ("cpu.cfs_burst_us", 10_000), ("memory.limit_in_bytes", 256 << 20),
          ("memory.soft_limit_in_bytes", 128 << 20)),
    "B": (("cpu.shares", 1024), ("cpu.cfs_period_us", 200_000), ("cpu.cfs_quota_us", 60_000),
          ("cpu.cfs_burst_us", 20_000), ("memory.limit_in_bytes", 512 << 20),
          ("memory.soft_limit_in_bytes", 64 << 20)),
}


def pct(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, max(0, int(round(p * len(ordered))) - 1))]


def measure(label: str, runs: int, batch: Callable[[int], object], updates: int) -> float:
    """Prints the figures; returns the CPU p50 (seconds)."""
    walls, cpus = [], []
    for run in range(runs):
        cpu0, wall0 = time.process_time(), time.perf_counter()
        batch(run)
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        walls.append(wall)
        cpus.append(cpu)
    print("%-14s runs=%-4d wall p50 %7.2f ms  p99 %7.2f ms | cpu p50 %7.2f ms  p99 %7.2f ms"
          " | %5.2f us/update (wall p50)"
          % (label, runs, pct(walls, .5) * 1e3, pct(walls, .99) * 1e3,
             pct(cpus, .5) * 1e3, pct(cpus, .99) * 1e3, statistics.median(walls) / updates * 1e6))
    return pct(cpus, .5)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--containers", type=int, default=1000)
    parser.add_argument("--steady-runs", type=int, default=200)
    parser.add_argument("--cold-runs", type=int, default=30)
    parser.add_argument("--io", choices=("both", "kept", "open"), default="both",
                        help="file IO to measure: kept fds (the default IO), open+write+close")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("needs root (creates cgroups under %s)" % ROOT)
        return 1
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))

    top = "koordlet-bench-%s" % uuid.uuid4().hex[:8]
    dirs = ["%s/c%04d" % (top, i) for i in range(args.containers)]
    made: list[Path] = []
    try:
        start = time.perf_counter()
        for rel in [top] + dirs:
            for controller in CONTROLLERS:
                path = ROOT / controller / rel
                path.mkdir()
                made.append(path)
        print("created %d cgroups x %d hierarchies in %.0f ms"
              % (len(dirs), len(CONTROLLERS), (time.perf_counter() - start) * 1e3))
        variants = (("open", "open+write+close (KernelFileIO)", KernelFileIO),
                    ("kept", "kept fds (KeptFdFileIO, the default)", KeptFdFileIO))
        for key, label, make_io in variants:
            if args.io not in ("both", key):
                continue
            print("\n== file IO: %s" % label)
            run_benchmarks(dirs, args, make_io)
    finally:
        for path in reversed(made):
            try:
                path.rmdir()
            except OSError as exc:
                print("cleanup failed for %s: %s" % (path, exc), file=sys.stderr)
    return 0


def run_benchmarks(dirs: list[str], args: argparse.Namespace,
                   make_io: Callable[[], CgroupFileIO]) -> None:
    files = CgroupFiles(Host())
    io = make_io()
    registry = CollectorRegistry()  # as the daemon runs it: metrics on
    executor = ResourceExecutor(files, io=io, registry=registry)
    build_start = time.perf_counter()
    batches = {key: [executor.updater(name, d, value) for d in dirs for name, value in values]
               for key, values in VALUES.items()}
    updates = len(batches["A"])
    print("built 2 x %d updaters in %.1f ms (%.2f us each)"
          % (updates, (time.perf_counter() - build_start) * 1e3,
             (time.perf_counter() - build_start) / (2 * updates) * 1e6))
    for batch in batches.values():
        problems = [r for r in batch if r.problem is not None]
        if problems:
            raise SystemExit("refused updater: %r" % problems[0].problem)

    first = executor.update_batch(batches["A"])
    print("first batch outcomes:", {o.value: n for o, n in first.counts().items()})
    if first.counts().get(Outcome.WRITTEN, 0) + first.counts().get(Outcome.SKIPPED, 0) != updates:
        raise SystemExit("unexpected outcomes: %s" % [r for r in first if r.error][:3])

    print("\n%d containers x 6 resources = %d updates per batch" % (len(dirs), updates))
    measure("steady", args.steady_runs, lambda run: executor.update_batch(batches["A"]), updates)

    def changed(run: int) -> None:
        result = executor.update_batch(batches["B" if run % 2 == 0 else "A"])
        assert result.writes == updates, result.counts()

    measure("cold-changed", args.cold_runs, changed, updates)

    def first_sight(run: int) -> None:
        fresh_io = make_io()
        fresh = ResourceExecutor(files, io=fresh_io, registry=CollectorRegistry())
        result = fresh.update_batch(batches["B" if run % 2 == 0 else "A"])
        if isinstance(fresh_io, KeptFdFileIO):
            fresh_io.close()
        assert result.writes == updates, result.counts()

    # leave the files at A, so run 0 (B) changes everything
    executor.update_batch(batches["A"], use_cache=False)
    measure("cold-first", args.cold_runs, first_sight, updates)

    def build_and_steady(run: int) -> None:
        batch = [executor.updater(name, d, value) for d in dirs for name, value in VALUES["A"]]
        executor.update_batch(batch)

    executor.update_batch(batches["A"], use_cache=False)  # the last fresh executor left B

    def read_back(run: int) -> None:
        result = executor.update_batch(batches["A"], use_cache=False)
        assert result.writes == 0, result.counts()

    read_back_cpu = measure("read-back", args.cold_runs, read_back, updates)
    read_paths = [u.path for u in batches["A"]]
    floor_cpu = measure("raw-read-many", args.cold_runs, lambda run: read_files_once(read_paths), updates)
    print("read-back / raw-read-many (cpu p50): %.2fx" % (read_back_cpu / floor_cpu))
    measure("build+steady", max(5, args.cold_runs), build_and_steady, updates)

    paths = [u.path for u in batches["A"]]
    texts = [u.text.encode() for u in batches["A"]]

    def raw_floor(run: int) -> None:
        for path, data in zip(paths, texts):
            fd = os.open(path, os.O_WRONLY)
            os.write(fd, data)
            os.close(fd)

    measure("raw-o+w+c", args.cold_runs, raw_floor, updates)
    written = registry.get_sample_value("koordlet_resource_update_total",
                                        {"resource": "cpu.shares", "result": "written"})
    skipped = registry.get_sample_value("koordlet_resource_update_total",
                                        {"resource": "cpu.shares", "result": "skipped"})
    print("metrics: cpu.shares written=%d skipped=%d" % (written or 0, skipped or 0))
    if isinstance(io, KeptFdFileIO):
        fds = [os.open(path, os.O_WRONLY) for path in paths]

        def raw_pwrite(run: int) -> None:
            for fd, data in zip(fds, texts):
                os.pwrite(fd, data, 0)

        measure("raw-pwrite", args.cold_runs, raw_pwrite, updates)
        for fd in fds:
            os.close(fd)
        io.close()


if __name__ == "__main__":
    sys.exit(main())
