"""What the fd bound costs the per-second pod reads, and what keeping their fds open would
cost instead: N pods' cpuacct.usage and memory.usage_in_bytes read as the pod usage
collector reads them every second, on real cgroup v1 (root; bench.daemon_scale's tree: N
pods x 2 containers under koordlet-scale-<hex8> in every controller, removed afterwards).

    python -m bench.kept_fds [--pods 1000] [--rounds 200]

CPU (the thread's, koordlet_reads.cpu_ms) a round, p50 and p90 over --rounds, the ways called in turns:
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
import tempfile
from pathlib import Path
from typing import Callable

from bench.daemon_scale import CgroupTree, cgroup_dirs, workload
from bench.koordlet_reads import cpu_ms
from system.file_io import ValueBatch

USAGE_FILES = (("cpuacct", "cpuacct.usage"), ("memory", "memory.usage_in_bytes"))


def pod_usage_specs(tree: CgroupTree, pod_dirs: list[str]) -> list[tuple[str, str]]:
    """The pods' usage files as ValueBatch takes them (one number each)."""
    bases = {base.parent.name: base for base in tree.bases}
    return [(str(bases[controller] / pod / name), "") for pod in pod_dirs for controller, name in USAGE_FILES]


def kmem(memcg: Path) -> int:
    return int((memcg / "memory.kmem.usage_in_bytes").read_text())


def timed(rows: dict[str, Callable[[], object]], rounds: int) -> dict[str, list[float]]:
    """CPU ms of each row's call, the rows called in turns `rounds` times."""
    samples: dict[str, list[float]] = {label: [] for label in rows}
    for _ in range(rounds):
        for label, fn in rows.items():
            samples[label] += cpu_ms(1, fn)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="koordlet-kept-fds-") as tmp:
        pods = workload(args.pods, cpu=0)
        tree = CgroupTree(Path(tmp) / "links")
        try:
            tree.create(cgroup_dirs(pods))
            specs = pod_usage_specs(tree, [pod.linux.cgroup_parent.strip("/") for pod, _ in pods])
            samples, charged, released = measure(specs, next(b for b in tree.bases if b.parent.name == "memory"),
                                                 args.rounds)
        finally:
            problems = tree.remove()
            if problems:
                print("cleanup problems: %s" % problems[:3])
    report(args, specs, samples, charged, released)


def measure(specs: list[tuple[str, str]], memory_base: Path,
            rounds: int) -> tuple[dict[str, list[float]], int, int]:
    """The rows' CPU a round; the kernel memory the kept fds charged (bytes) and what stayed
    charged once they were closed, in a memory cgroup of this process' own below `memory_base`."""
    paths = [path for path, _ in specs]
    memcg = memory_base / "bench"
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

        rows: dict[str, Callable[[], object]] = {"the daemon: C open + read + close": batch.read,
                                                  "floor: os.pread on kept fds": pread_kept,
                                                  "os.open + read + close": python_open_read_close}
        samples = timed(rows, rounds)
        for fd in kept:
            os.close(fd)
        kept = []
        released = kmem(memcg) - before
    finally:
        for fd in kept:
            os.close(fd)
        (memory_base.parent / "cgroup.procs").write_text(str(os.getpid()))  # the hierarchy's root
        memcg.rmdir()
    return samples, charged, released


def report(args: argparse.Namespace, specs: list[tuple[str, str]], samples: dict[str, list[float]],
           charged: int, released: int) -> None:
    floor = statistics.median(samples["floor: os.pread on kept fds"])
    print("kept_fds: %d pods, %d files a round (cpuacct.usage + memory.usage_in_bytes), %d rounds, real cgroup v1 "
          "(bench.daemon_scale's tree)" % (args.pods, len(specs), args.rounds))
    print("%-36s %9s %9s %9s %8s" % ("a round (CPU)", "p50 ms", "p90 ms", "us/file", "x floor"))
    for label, values in samples.items():
        p50 = statistics.median(values)
        p90 = statistics.quantiles(values, n=10)[-1]
        print("%-36s %9.3f %9.3f %9.2f %8.2f" % (label, p50, p90, p50 * 1000 / len(specs), p50 / floor))
    saved = statistics.median(samples["the daemon: C open + read + close"]) - floor
    print("keeping the %d fds open would save %.3f ms a round: %.2f %% of a core at one round a second"
          % (len(specs), saved, saved / 10))
    print("and charge the cgroup %d KiB of kernel memory while kept, %.0f bytes an fd (%d KiB given back at close)"
          % (charged // 1024, charged / len(specs), (charged - released) // 1024))


if __name__ == "__main__":
    main()
