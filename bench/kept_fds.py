"""What the fd bound costs the per-second pod reads, and what keeping their fds open would
cost instead: N pods' cpuacct.usage and memory.usage_in_bytes read as the pod usage
collector reads them every second, on real cgroup v1 (root; N pod cgroups under
koordlet-bench-<hex8> in cpuacct and memory, removed afterwards).

    python -m bench.kept_fds [--pods 1000] [--rounds 200]

CPU (process_time) a round, p50 and p90 over --rounds, the ways called in turns:
- the daemon: system.file_io.ValueBatch, one C call that opens (relative to the QoS tier's
  directory), reads and closes each file, so that no fd outlives a read (fds <= 512 at any N);
- the floor: os.pread of each file on an fd kept open, a call a file (the raw syscall, and
  what keeping every pod's fds open would cost a round);
- os.open + read + close from Python, a call each.
Kernel memory: the bench moves itself into a memory cgroup of its own and prints what its
memory.kmem.usage_in_bytes grew by as the kept fds were opened and read once (the kernel's
struct file, kernfs' open file and its seq_file read buffer: charged to the cgroup of the
process that keeps them, counted in no RSS), per fd, and what closing them gave back.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import uuid
from pathlib import Path
from typing import Callable

from system.file_io import ValueBatch

CGROUP = Path("/sys/fs/cgroup")


def make_pods(name: str, count: int) -> list[tuple[str, str]]:
    specs = []
    for controller in ("cpuacct", "memory"):
        (CGROUP / controller / name).mkdir()
    for i in range(count):
        for controller, file_name in (("cpuacct", "cpuacct.usage"), ("memory", "memory.usage_in_bytes")):
            pod = CGROUP / controller / name / ("pod%d" % i)
            pod.mkdir()
            specs.append((str(pod / file_name), ""))
    return specs


def remove(name: str, count: int) -> None:
    for controller in ("cpuacct", "memory"):
        for i in range(count):
            try:
                (CGROUP / controller / name / ("pod%d" % i)).rmdir()
            except FileNotFoundError:
                pass
        (CGROUP / controller / name).rmdir()


def kmem(memcg: Path) -> int:
    return int((memcg / "memory.kmem.usage_in_bytes").read_text())


def timed(rows: dict[str, Callable[[], object]], rounds: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {label: [] for label in rows}
    for _ in range(rounds):
        for label, fn in rows.items():
            start = time.process_time()
            fn()
            samples[label].append((time.process_time() - start) * 1000)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    name = "koordlet-bench-%s" % uuid.uuid4().hex[:8]
    specs = make_pods(name, args.pods)
    paths = [path for path, _ in specs]
    memcg = CGROUP / "memory" / name / "bench"
    memcg.mkdir()
    (memcg / "cgroup.procs").write_text(str(os.getpid()))
    kept: list[int] = []
    try:
        batch = ValueBatch(specs)
        assert batch.read()[1] == [0] * len(specs)  # every file looked up once (kernfs dentries made)
        before = kmem(memcg)
        kept = [os.open(path, os.O_RDONLY | os.O_CLOEXEC) for path in paths]
        for fd in kept:
            os.pread(fd, 64, 0)  # a kernfs file's read buffer is made at its first read
        charged = kmem(memcg) - before

        def python_open_read_close() -> None:
            for path in paths:
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
                os.read(fd, 64)
                os.close(fd)

        def pread_kept() -> None:
            for fd in kept:
                os.pread(fd, 64, 0)

        rows: dict[str, Callable[[], object]] = {"the daemon: C open + read + close": batch.read, "floor: os.pread on kept fds": pread_kept,
                "os.open + read + close": python_open_read_close}
        samples = timed(rows, args.rounds)
        for fd in kept:
            os.close(fd)
        kept = []
        released = kmem(memcg)
    finally:
        for fd in kept:
            os.close(fd)
        (CGROUP / "memory" / "cgroup.procs").write_text(str(os.getpid()))
        memcg.rmdir()
        remove(name, args.pods)
    floor = statistics.median(samples["floor: os.pread on kept fds"])
    print("kept_fds: %d pods, %d files a round (cpuacct.usage + memory.usage_in_bytes), %d rounds, real cgroup v1"
          % (args.pods, len(specs), args.rounds))
    print("%-36s %9s %9s %9s %8s" % ("a round (CPU)", "p50 ms", "p90 ms", "us/file", "x floor"))
    for label, values in samples.items():
        p50 = statistics.median(values)
        p90 = statistics.quantiles(values, n=10)[-1]
        print("%-36s %9.3f %9.3f %9.2f %8.2f" % (label, p50, p90, p50 * 1000 / len(specs), p50 / floor))
    saved = statistics.median(samples["the daemon: C open + read + close"]) - floor
    print("keeping the %d fds open would save %.3f ms a round: %.2f %% of a core at one round a second"
          % (len(specs), saved, saved / 10))
    print("and charge the cgroup %d KiB of kernel memory while kept, %.0f bytes an fd (%d KiB given back at close)"
          % (charged // 1024, charged / len(specs), (charged - (released - before)) // 1024))


if __name__ == "__main__":
    main()
