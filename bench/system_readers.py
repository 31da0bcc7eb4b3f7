"""Benchmark the system readers: reads/s and µs per read (p50/p99), open-per-read vs kept fd.

    /work/venv/bin/python -m bench.system_readers [--n 20000] [--cgroup kubepods]

Reads only (the cgroup defaults to the hierarchy root, "").
"""

from __future__ import annotations

import argparse
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--cgroup", default="")
    args = parser.parse_args()
    host = Host()
    files = CgroupFiles(host)
    cg = args.cgroup
    print("hierarchy: %s  cgroup: %r  n=%d" % (files.hierarchy.mode.value, cg or "/", args.n))
    print("%-28s %-10s %12s %9s %9s" % ("reader", "mode", "reads/s", "p50 µs", "p99 µs"))
    readers = {
        "open-per-read": CgroupReader(files, keep_open=False),
        "kept-fd": CgroupReader(files, keep_open=True),
    }
    cases: list[tuple[str, Callable[[CgroupReader], object]]] = [
        ("cpu_usage_ns", lambda r: r.cpu_usage_ns(cg)),
        ("throttling (cpu.stat)", lambda r: r.throttling(cg)),
        ("cpu_max", lambda r: r.cpu_max(cg)),
        ("cpuset_cpus", lambda r: r.cpuset_cpus(cg)),
        ("memory_usage_bytes", lambda r: r.memory_usage_bytes(cg)),
        ("memory_stat", lambda r: r.memory_stat(cg)),
        ("memory_working_set", lambda r: r.memory_working_set_bytes(cg)),
        ("psi cpu (cgroup)", lambda r: r.psi(cg, "cpu")),
    ]
    for name, case in cases:
        for mode, reader in readers.items():
            try:
                rate, p50, p99 = measure(lambda: case(reader), args.n)
            except Exception as exc:  # noqa: BLE001 - print and go on with the others
                print("%-28s %-10s unavailable: %s" % (name, mode, exc))
                continue
            print("%-28s %-10s %12.0f %9.2f %9.2f" % (name, mode, rate, p50, p99))
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
