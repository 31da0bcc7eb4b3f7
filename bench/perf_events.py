"""Benchmark cgroup-mode perf counting per cgroup: open, read, close, against the raw floor.

    .venv/bin/python -m bench.perf_events [--n 2000]

Creates its own idle cgroup koordlet-bench-<hex8> on the hierarchy perf counts on (v1
perf_event, else cgroup2) and always removes it; needs root. Counts two software events
(task-clock, context-switches: this VM has no hardware PMU; a hardware pair costs the same
syscalls) on every online CPU, as the CPI collector does with cycles + instructions.

Floors, measured in the same run: for open+close, one raw perf_event_open syscall per event
per CPU through the extension's thin wrapper plus os.close; for read, one raw os.read of each
CPU's group leader. Ratios are ours / floor at p50.
"""

from __future__ import annotations

import argparse
import os
import uuid

from bench.system_readers import measure
from system.cgroup_version import detect_hierarchy
from system.host import Host
from system.perf_events import (
    CgroupPerfGroups,
    PerfEvent,
    extension_available,
    group_read_size,
    perf_cgroup_path,
)
from system.topology import read_online_cpus

EVENTS = (PerfEvent.TASK_CLOCK, PerfEvent.CONTEXT_SWITCHES)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=2000)
    args = parser.parse_args()
    if not extension_available():
        print("system._perf_ext is not built: nothing to measure")
        return
    from system._perf_ext import lib

    host = Host()
    hierarchy = detect_hierarchy(host)
    name = "koordlet-bench-%s" % uuid.uuid4().hex[:8]
    path = perf_cgroup_path(hierarchy, name)
    cpus = tuple(sorted(read_online_cpus(host)))
    path.mkdir()
    try:
        print("cgroup: %s  cpus: %d  events: %s  n=%d" % (
            path, len(cpus), "+".join(e.name.lower() for e in EVENTS), args.n))
        cgroup_fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)

        def raw_open_close() -> None:
            for cpu in cpus:
                leader = lib.koord_perf_open_one(EVENTS[0].type, EVENTS[0].config, cgroup_fd,
                                                 cpu, -1, lib.KOORD_PERF_FLAG_PID_CGROUP, 0)
                member = lib.koord_perf_open_one(EVENTS[1].type, EVENTS[1].config, cgroup_fd,
                                                 cpu, leader, lib.KOORD_PERF_FLAG_PID_CGROUP, 0)
                if leader < 0 or member < 0:
                    raise OSError(-min(leader, member), "perf_event_open")
                os.close(member)
                os.close(leader)

        groups = CgroupPerfGroups.open(path, EVENTS, cpus)
        leaders = groups.leader_fds
        size = group_read_size(len(EVENTS))

        def raw_read() -> None:
            for fd in leaders:
                os.read(fd, size)

        rows = [
            ("floor: raw perf_event_open+close", measure(raw_open_close, args.n)),
            ("CgroupPerfGroups.open + close", measure(
                lambda: CgroupPerfGroups.open(path, EVENTS, cpus).close(), args.n)),
            ("floor: raw os.read of each leader", measure(raw_read, args.n * 10)),
            ("CgroupPerfGroups.read (scaled, summed)", measure(groups.read, args.n * 10)),
            ("window: open + read + close", measure(
                lambda: _window(path, cpus), args.n)),
        ]
        groups.close()
        os.close(cgroup_fd)
        floors = {"open": rows[0][1][1], "read": rows[2][1][1]}
        print("%-40s %10s %9s %9s %8s" % ("operation (one cgroup, all cpus)", "ops/s",
                                          "p50 µs", "p99 µs", "×floor"))
        for label, (rate, p50, p99) in rows:
            floor = floors["read"] if "read" in label and "open" not in label else floors["open"]
            print("%-40s %10.0f %9.2f %9.2f %8.2f" % (label, rate, p50, p99, p50 / floor))
        print("fds per open cgroup: %d (events × cpus)" % (len(EVENTS) * len(cpus)))
    finally:
        path.rmdir()


def _window(path: os.PathLike[str], cpus: tuple[int, ...]) -> None:
    with CgroupPerfGroups.open(path, EVENTS, cpus) as groups:
        groups.read()


if __name__ == "__main__":
    main()
