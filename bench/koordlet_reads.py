"""The least CPU koordlet's per-second cgroup reads can cost on this machine, at N pods.

    python -m bench.koordlet_reads [--pods 100,1000,3000] [--rounds 15]

koordlet (v1.1 metricsadvisor: one loop every --collect-res-used-interval-seconds, 1 s by
default) reads, every second, for every pod and every container: cpuacct.usage and
memory.stat (its pod resource collector), and cpu.stat (its throttled collector); plus a
few files for the node and the BE tier, left out here. So N pods x 2 containers are
3 x 3N files a second. This bench makes those cgroups (real cgroup v1 dirs under
/sys/fs/cgroup/<controller>/koordlet-scale-<hex8>, as bench.daemon_scale does; root needed)
and reads the 9N files once per round in the cheapest way we know: one C call that opens,
reads and closes each (system/file_io.FileBatch: no parsing, no bytes object per file,
each opened relative to the directory most of them share). Go's os.ReadFile makes two more
system calls per file (fstat, and a read that meets the end of the file) and parses in Go
afterwards, so koordlet's collection cannot cost less than this floor: the figure to hold
our whole daemon's CPU (bench.daemon_scale, cpu% q) against.

Prints per N: the files, the CPU of one round (ms, p50 and max over --rounds), that as %
of one core at one round a second, µs per file, in all and by file; and, as the floor of the floor, the
same files' pread on kept fds (what no fd budget allows at this scale: 9N fds; not
measured when the hard RLIMIT_NOFILE is lower).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import tempfile
import time
from pathlib import Path

from bench.daemon_scale import CGROUP_FS, CgroupTree, cgroup_dirs, workload
from system.file_io import FileBatch

# fds left free beside the kept ones of the pread floor (skipped when the limit is lower)
FD_MARGIN = 256
# (controller, file) that koordlet reads for every pod and container cgroup each second
KOORDLET_FILES = (("cpuacct", "cpuacct.usage"), ("memory", "memory.stat"), ("cpu", "cpu.stat"))


def per_second_paths(tree_name: str, dirs: list[str]) -> list[str]:
    """koordlet's per-second files for the pod and container cgroups among `dirs`."""
    cgroups = [d for d in dirs if "/pod" in "/" + d]
    return [str(CGROUP_FS / controller / tree_name / d / name) for d in cgroups for controller, name in KOORDLET_FILES]


def cpu_ms(rounds: int, fn) -> list[float]:
    out = []
    for _ in range(rounds):
        start = time.thread_time()
        fn()
        out.append((time.thread_time() - start) * 1000)
    return out


def measure(pods: int, rounds: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="koordlet-reads-") as tmp:
        tree = CgroupTree(Path(tmp) / "links")
        dirs = cgroup_dirs(workload(pods, cpu=0))
        try:
            tree.create(dirs)
            paths = per_second_paths(tree.name, dirs)
            batch = FileBatch(paths)
            texts = batch.read()  # packs the paths; unreadable files would make the figure wrong
            missing = sum(text is None for text in texts)
            if missing:
                raise SystemExit("%d of %d files could not be read (controllers mounted as %s?)"
                                 % (missing, len(paths), [base.parent.name for base in tree.bases]))
            batch_ms = cpu_ms(rounds, batch.read)
            by_file = {}
            for _, name in KOORDLET_FILES:
                kind = FileBatch([path for path in paths if path.endswith("/" + name)])
                kind.read()
                by_file[name] = 1000 * statistics.median(cpu_ms(rounds, kind.read)) / len(kind)
            pread_ms = [float("nan")]
            if len(paths) + FD_MARGIN <= resource.getrlimit(resource.RLIMIT_NOFILE)[0]:
                fds: list[int] = []
                try:
                    for path in paths:
                        fds.append(os.open(path, os.O_RDONLY))
                    pread_ms = cpu_ms(rounds, lambda: [os.pread(fd, 4096, 0) for fd in fds])
                finally:
                    for fd in fds:
                        os.close(fd)
        finally:
            problems = tree.remove()
            if problems:
                print("cleanup problems: %s" % problems[:3])
    p50 = statistics.median(batch_ms)
    return {"pods": pods, "files": len(paths), "round_ms_p50": p50, "round_ms_max": max(batch_ms),
            "core_pct": p50 / 10.0, "us_per_file": 1000 * p50 / len(paths),
            "pread_ms_p50": statistics.median(pread_ms), "pread_core_pct": statistics.median(pread_ms) / 10.0,
            **{"us_" + name: us for name, us in by_file.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", default="100,1000,3000", help="comma-separated pod counts (x 2 containers)")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("needs root: it makes real cgroups")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # the pread floor keeps one fd a file
    print("koordlet_reads: koordlet's per-second files (cpuacct.usage, memory.stat, cpu.stat of every pod and "
          "container cgroup), read once a round by one C open+read+close batch (the least any reader pays); "
          "floor of the floor: pread on kept fds; load %s" % " ".join("%.2f" % x for x in os.getloadavg()))
    names = [name for _, name in KOORDLET_FILES]
    print("%7s %7s %10s %10s %9s %8s %s %12s %10s" % ("N", "files", "round ms", "max ms", "% core", "us/file",
                                                      " ".join("%14s" % ("us " + n) for n in names), "pread ms", "% core"))
    for n in (int(x) for x in args.pods.split(",")):
        r = measure(n, args.rounds)
        print("%7d %7d %10.2f %10.2f %9.2f %8.2f %s %12.2f %10.2f" % (
            r["pods"], r["files"], r["round_ms_p50"], r["round_ms_max"], r["core_pct"], r["us_per_file"],
            " ".join("%14.2f" % r["us_" + n] for n in names), r["pread_ms_p50"], r["pread_core_pct"]))


if __name__ == "__main__":
    main()
