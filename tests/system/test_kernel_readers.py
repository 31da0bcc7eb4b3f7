"""Real-kernel checks of the readers collectors use: throttling under a quota, memory
working set of a process holding anonymous memory, PSI under CPU contention."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from system.cgroup_files import CgroupFiles
from system.cgroup_readers import CgroupReader
from system.cgroup_version import CgroupHierarchy, CgroupMode, detect_hierarchy
from system.host import Host
from tests.system.cgroup_sandbox import SandboxUnavailable, cgroup_sandbox
from tests.system.door import write_value

pytestmark = pytest.mark.kernel

HOST = Host()
MIB = 1 << 20


@pytest.fixture
def v1() -> Iterator[tuple[CgroupFiles, str]]:
    """A sandbox in the v1 cpu, cpuacct and memory hierarchies (and unified/)."""
    try:
        hierarchy = detect_hierarchy(HOST)
    except Exception as exc:  # noqa: BLE001 - any failure means no usable cgroups
        pytest.skip("no cgroup hierarchy: %s" % exc)
    if hierarchy.mode is CgroupMode.V2:
        pytest.skip("these tests target v1 controllers (this host is pure v2)")
    try:
        with cgroup_sandbox(controllers=("cpu", "cpuacct", "memory"), host=HOST) as name:
            yield CgroupFiles(HOST, hierarchy), name
    except SandboxUnavailable as exc:
        pytest.skip(str(exc))


def _join_and_run(cgroup_procs: list[Path], body: str, *args: str) -> subprocess.Popen:
    """A child that first joins every given cgroup.procs, then runs ``body``."""
    code = textwrap.dedent("""
        import os, sys, time
        for path in sys.argv[1].split(","):
            with open(path, "w") as f:
                f.write(str(os.getpid()))
        """) + textwrap.dedent(body)
    return subprocess.Popen([sys.executable, "-c", code, ",".join(map(str, cgroup_procs)),
                             *args], stdout=subprocess.PIPE, text=True)


BUSY = """
end = time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    pass
"""


def _procs(name: str, *controllers: str) -> list[Path]:
    return [HOST.cgroup(c, name, "cgroup.procs") for c in controllers]


def test_quota_throttles_a_busy_cgroup(v1):
    files, name = v1
    reader = CgroupReader(files, keep_open=False)
    write_value(files, "cpu.cfs_period_us", name, 100_000)
    write_value(files, "cpu.cfs_quota_us", name, 10_000)  # 0.1 CPU
    before = reader.throttling(name)
    assert (before.nr_periods, before.nr_throttled, before.throttled_ns) == (0, 0, 0)
    # busy until the kernel has throttled it (on a loaded machine the child may need more
    # than a few periods to run 10 ms in one), then stopped before reading the totals
    busy = _join_and_run(_procs(name, "cpu", "cpuacct"), BUSY, "120")
    try:
        deadline = time.monotonic() + 60
        while not (reader.throttling(name).nr_throttled >= 1 and reader.throttling(name).nr_periods >= 3):
            assert time.monotonic() < deadline, "never throttled"
            time.sleep(0.05)
    finally:
        busy.kill()
        busy.wait(timeout=60)
        busy.stdout.close()
    after = reader.throttling(name)
    assert after.nr_periods >= 3 and after.nr_throttled >= 1 and after.throttled_ns > 0
    assert 0 < after.ratio <= 1
    # under 0.1 CPU the cgroup cannot have used much more than 10 ms per 100 ms period
    usage = reader.cpu_usage_ns(name)
    assert 0 < usage <= (after.nr_periods + 1) * 10_000_000 * 1.2

def test_working_set_counts_anonymous_memory_held(v1):
    files, name = v1
    reader = CgroupReader(files, keep_open=True)
    hold = """
    block = bytearray(int(sys.argv[2]))
    for i in range(0, len(block), 4096):
        block[i] = 1
    print("held", flush=True)
    time.sleep(30)
    """
    proc = _join_and_run(_procs(name, "memory"), hold, str(64 * MIB))
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        working_set = reader.memory_working_set_bytes(name)
        usage = reader.memory_usage_bytes(name)
        stat = reader.memory_stat(name)
        # 64 MiB touched (a few pages may sit in per-cpu charge batches or elsewhere)
        assert 60 * MIB <= working_set <= usage
        # the same figure through the full memory.stat map (reads a moment apart)
        assert abs(working_set - (usage - stat["total_inactive_file"])) < 4 * MIB
        assert reader.memory_used_bytes(name) >= 60 * MIB
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
        reader.close()


def test_cpu_pressure_rises_with_more_busy_processes_than_cpus(v1):
    files, name = v1
    unified = HOST.cgroup("unified")
    if files.hierarchy.unified_root is None or not (unified / name / "cpu.pressure").is_file():
        pytest.skip("no cgroup2 PSI files here")
    v2 = CgroupFiles(Host(cgroup_root=unified), CgroupHierarchy(CgroupMode.V2, unified, unified))
    reader = CgroupReader(v2, keep_open=False)
    before = reader.psi(name, "cpu").some.total_us
    procs = [_join_and_run([unified / name / "cgroup.procs"], BUSY, "1.0") for _ in range(4)]
    for proc in procs:
        proc.wait(timeout=60)
        proc.stdout.close()
    after = reader.psi(name, "cpu")
    # 4 runnable tasks on at most 2 CPUs: some task waited for a CPU most of the time
    assert after.some.total_us - before > 100_000
    assert reader.psi(name, "memory").some.total_us >= 0
