"""Benchmark the system readers: reads/s and µs per read (p50/p99), open-per-read vs kept fd,
each against its floor measured in the same run: a raw os.pread of the same file on a kept
fd, or a raw open+read+close (the ratio column; cpu_max reads two files, its floor one).

    /work/venv/bin/python -m bench.system_readers [--n 20000] [--cgroup kubepods]
    /work/venv/bin/python -m bench.system_readers --batch 3000 [--rounds 20]   # root

Reads only (the cgroup defaults to the hierarchy root, ""). ``--batch N`` instead makes N
real cgroup dirs (``koordlet-bench-<hex8>`` under cpu, cpuacct, memory and unified; removed
at the end) and reads the collectors' files of all of them per round, four ways: raw
os.pread on kept fds (the floor), open+read+close in Python, FileBatch (one C call), and
FileBatch in a thread (what the event loop pays: submit + wait, measured as this thread's CPU).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
import uuid
from collections.abc import Callable

from system.cgroup_files import CgroupFiles
from system.cgroup_readers import CgroupReader
from system.file_io import FileBatch
from system.host import Host
from system.procfs import read_cpu_ticks, read_meminfo, read_node_psi
from system.topology import read_cpu_topology


def measure(fn: Callable[[], object], n: int) -> tuple[float, float, float]:
    for _ in range(min(200, n)):
        fn()
    samples = []
    start = time.perf_counter()
    for _ in range(n):
        t0 = time.perf_counter_ns()
        fn()
        samples.append(time.perf_counter_ns() - t0)
    elapsed = time.perf_counter() - start
    samples.sort()
    p50 = samples[len(samples) // 2] / 1000
    p99 = samples[min(len(samples) - 1, int(len(samples) * 0.99))] / 1000
    return n / elapsed, p50, p99


def raw_floors(files: CgroupFiles, resource: str, cgroup: str, n: int) -> dict[str, float]:
    """p50 µs of the bare syscalls under each reader mode, for the same file."""
    try:
        path = str(files.path(resource, cgroup))
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except Exception:  # noqa: BLE001 - no such file here: no floor to print
        return {}

    def open_read_close() -> None:
        handle = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        os.read(handle, 65536)
        os.close(handle)

    try:
        return {"kept-fd": measure(lambda: os.pread(fd, 65536, 0), n)[1],
                "open-per-read": measure(open_read_close, n)[1]}
    finally:
        os.close(fd)


def batch_files(top: str, n: int) -> tuple[list[str], list[str], list[str]]:
    """Make n cgroups; (dirs made, usage files, pressure files)."""
    root = "/sys/fs/cgroup"
    made, usage, pressure = [], [], []
    for controller in ("cpu", "cpuacct", "memory", "unified"):
        os.mkdir("%s/%s/%s" % (root, controller, top))
        made.append("%s/%s/%s" % (root, controller, top))
    for i in range(n):
        for controller in ("cpu", "cpuacct", "memory", "unified"):
            path = "%s/%s/%s/c%05d" % (root, controller, top, i)
            os.mkdir(path)
            made.append(path)
        usage += ["%s/cpuacct/%s/c%05d/cpuacct.usage" % (root, top, i),
                  "%s/memory/%s/c%05d/memory.usage_in_bytes" % (root, top, i),
                  "%s/cpu/%s/c%05d/cpu.stat" % (root, top, i)]
        pressure += ["%s/unified/%s/c%05d/%s.pressure" % (root, top, i, kind) for kind in ("cpu", "memory", "io")]
    return made, usage, pressure


def round_cpu_ms(fn: Callable[[], object], rounds: int) -> float:
    fn()
    costs = []
    for _ in range(rounds):
        cpu = time.thread_time()
        fn()
        costs.append((time.thread_time() - cpu) * 1e3)
    return statistics.median(costs)


def open_read_close(paths: list[str]) -> None:
    for path in paths:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        os.read(fd, 65536)
        os.close(fd)


def bench_batch(n: int, rounds: int) -> None:
    top = "koordlet-bench-%s" % uuid.uuid4().hex[:8]
    made: list[str] = []
    try:
        made, usage, pressure = batch_files(top, n)
        print("batch: %d cgroups (%s), CPU ms per round, median of %d" % (n, top, rounds))
        print("%-22s %10s %10s %10s %10s %12s" % ("files", "pread floor", "open/read", "FileBatch",
                                                  "in thread", "loop CPU"))
        loop = asyncio.new_event_loop()
        try:
            for label, paths in (("usage x%d" % len(usage), usage), ("pressure x%d" % len(pressure), pressure)):
                fds = [os.open(p, os.O_RDONLY | os.O_CLOEXEC) for p in paths]
                try:
                    floor = round_cpu_ms(lambda fds=fds: [os.pread(fd, 65536, 0) for fd in fds], rounds)
                finally:
                    for fd in fds:
                        os.close(fd)
                python = round_cpu_ms(lambda paths=paths: open_read_close(paths), rounds)
                batch = FileBatch(paths)
                native = round_cpu_ms(batch.read, rounds)
                # the reading thread's CPU is not this thread's: what stays on the loop
                threaded = round_cpu_ms(lambda batch=batch: loop.run_until_complete(asyncio.to_thread(batch.read)),
                                        rounds)
                wall = []
                for _ in range(rounds):
                    t0 = time.perf_counter()
                    batch.read()
                    wall.append((time.perf_counter() - t0) * 1e3)
                print("%-22s %10.2f %10.2f %10.2f %10.2f %12s" % (
                    label, floor, python, native, threaded,
                    "ratios %.2fx %.2fx %.2fx" % (python / floor, native / floor, threaded / floor)))
                print("%-22s FileBatch wall %.2f ms (work done in the thread)" % ("", statistics.median(wall)))
        finally:
            loop.close()
    finally:
        for path in reversed(made):
            os.rmdir(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--cgroup", default="")
    parser.add_argument("--batch", type=int, default=0, help="N real cgroups: batch reads (root)")
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    if args.batch:
        bench_batch(args.batch, args.rounds)
        return
    host = Host()
    files = CgroupFiles(host)
    cg = args.cgroup
    print("hierarchy: %s  cgroup: %r  n=%d" % (files.hierarchy.mode.value, cg or "/", args.n))
    print("%-28s %-10s %12s %9s %9s %9s %7s" % ("reader", "mode", "reads/s", "p50 µs", "p99 µs",
                                                "floor µs", "ratio"))
    readers = {
        "open-per-read": CgroupReader(files, keep_open=False),
        "kept-fd": CgroupReader(files, keep_open=True),
    }
    # (name, call, the registry resource whose file the call reads)
    cases: list[tuple[str, Callable[[CgroupReader], object], str]] = [
        ("cpu_usage_ns", lambda r: r.cpu_usage_ns(cg), "cpuacct.usage"),
        ("throttling (cpu.stat)", lambda r: r.throttling(cg), "cpu.stat"),
        ("cpu_max", lambda r: r.cpu_max(cg), "cpu.cfs_quota_us"),
        ("cpuset_cpus", lambda r: r.cpuset_cpus(cg), "cpuset.cpus"),
        ("memory_usage_bytes", lambda r: r.memory_usage_bytes(cg), "memory.usage_in_bytes"),
        ("memory_stat", lambda r: r.memory_stat(cg), "memory.stat"),
        ("memory_working_set", lambda r: r.memory_working_set_bytes(cg), "memory.stat"),
        ("psi cpu (cgroup)", lambda r: r.psi(cg, "cpu"), "cpu.pressure"),
    ]
    for name, case, resource in cases:
        floors = raw_floors(files, resource, cg, args.n)
        for mode, reader in readers.items():
            try:
                rate, p50, p99 = measure(lambda case=case, reader=reader: case(reader), args.n)
            except Exception as exc:  # noqa: BLE001 - print and go on with the others
                print("%-28s %-10s unavailable: %s" % (name, mode, exc))
                continue
            floor = floors.get(mode)
            ratio = "%7.2f" % (p50 / floor) if floor else "      -"
            print("%-28s %-10s %12.0f %9.2f %9.2f %9s %s" % (name, mode, rate, p50, p99,
                                                             "%.2f" % floor if floor else "-", ratio))
    node_cases: list[tuple[str, Callable[[], object]]] = [
        ("/proc/stat cpu ticks", lambda: read_cpu_ticks(host)),
        ("/proc/meminfo", lambda: read_meminfo(host)),
        ("/proc/pressure/cpu", lambda: read_node_psi(host, "cpu")),
        ("sysfs cpu topology", lambda: read_cpu_topology(host)),
    ]
    for name, case in node_cases:
        n = args.n if "topology" not in name else max(1, args.n // 20)
        rate, p50, p99 = measure(case, n)
        print("%-28s %-10s %12.0f %9.2f %9.2f" % (name, "open", rate, p50, p99))
    for reader in readers.values():
        reader.close()


if __name__ == "__main__":
    main()
