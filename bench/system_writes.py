"""Benchmark cgroup writes through the registry against the raw floor.

    .venv/bin/python -m bench.system_writes [--n 20000]

Creates its own cgroup koordlet-bench-<hex8> under the v1 cpu hierarchy (root needed) and
always removes it. Prints µs per operation (p50/p99) and ops/s.
"""

from __future__ import annotations

import argparse
import os
import uuid

from bench.system_readers import measure
from resourceexecutor import ResourceExecutor
from system.cgroup_files import CgroupFiles
from system.cgroup_resource import get_resource
from system.file_io import KeptFdPool, write_path_text
from system.host import Host


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=20000)
    args = parser.parse_args()
    host = Host()
    files = CgroupFiles(host)
    name = "koordlet-bench-%s" % uuid.uuid4().hex[:8]
    directory = files.subsystem_dir("cpu", name)
    directory.mkdir()
    try:
        shares_path = str(files.path("cpu.shares", name))
        res = get_resource("cpu.shares")
        version = files.version_for(res)
        values = [512, 1024]
        state = {"i": 0}

        def next_value() -> int:
            state["i"] ^= 1
            return values[state["i"]]

        fd = os.open(shares_path, os.O_WRONLY)
        pool = KeptFdPool()
        executor = ResourceExecutor(files)
        cases = [
            ("raw os.pwrite on kept fd", lambda: os.pwrite(fd, b"%d" % next_value(), 0)),
            ("raw open+write+close", lambda: _raw_write(shares_path, next_value())),
            ("file_io.write_path_text", lambda: write_path_text(shares_path, str(next_value()))),
            ("KeptFdPool.write", lambda: pool.write(shares_path, str(next_value()))),
            ("executor.update (validated)", lambda: executor.update(
                executor.updater(res, name, next_value()), use_cache=False)),
            ("CgroupFiles.read", lambda: files.read(res, name)),
            ("read + matches (no write)", lambda: res.matches(
                1024, files.read_text(res, name), version)),
            ("path() alone", lambda: files.path(res, name)),
        ]
        print("cgroup: %s (%s)  n=%d" % (directory, files.hierarchy.mode.value, args.n))
        print("%-32s %12s %9s %9s" % ("operation", "ops/s", "p50 µs", "p99 µs"))
        try:
            for label, case in cases:
                rate, p50, p99 = measure(case, args.n)
                print("%-32s %12.0f %9.2f %9.2f" % (label, rate, p50, p99))
        finally:
            os.close(fd)
            pool.close()
            executor.close()
    finally:
        directory.rmdir()


def _raw_write(path: str, value: int) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, b"%d" % value)
    finally:
        os.close(fd)


if __name__ == "__main__":
    main()
