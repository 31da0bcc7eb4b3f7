"""Benchmark the system readers: reads/s and µs per read (p50/p99), open-per-read vs kept fd,
each against its floor measured in the same run: a raw os.pread of the same file on a kept
fd, or a raw open+read+close (the ratio column; cpu_max reads two files, its floor one).

    /work/venv/bin/python -m bench.system_readers [--n 20000] [--cgroup kubepods]

Reads only (the cgroup defaults to the hierarchy root, "").
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

from system.cgroup_files import CgroupFiles
from system.cgroup_readers import CgroupReader
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--cgroup", default="")
    args = parser.parse_args()
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
