"""procfs readers: node CPU ticks, meminfo, loadavg, node PSI, a process's cgroups.

Formats: Documentation/filesystems/proc.rst. Parsers are pure functions over text; the
``read_*`` shells take a Host so tests can point them at a fake /proc.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from system.errors import Gone, InvalidValue, classify_os_error
from system.host import Host
from system.psi import PSI_RESOURCES, Psi, parse_psi


@dataclass(frozen=True, slots=True)
class CpuTicks:
    """The aggregate "cpu" line of /proc/stat, in USER_HZ ticks (guest is inside user)."""

    user: int
    nice: int
    system: int
    idle: int
    iowait: int = 0
    irq: int = 0
    softirq: int = 0
    steal: int = 0

    @property
    def busy(self) -> int:
        return self.user + self.nice + self.system + self.irq + self.softirq + self.steal

    @property
    def total(self) -> int:
        return self.busy + self.idle + self.iowait


def cpu_usage_fraction(before: CpuTicks, after: CpuTicks) -> float:
    """Share of node CPU busy between two samples, in [0, 1] (0 when no time passed)."""
    total = after.total - before.total
    if total <= 0:
        return 0.0
    busy = after.busy - before.busy
    return min(1.0, max(0.0, busy / total))


@dataclass(frozen=True, slots=True)
class MemInfo:
    total_bytes: int
    available_bytes: int
    free_bytes: int
    fields: Mapping[str, int]  # every line, in bytes where the kernel printed kB

    @property
    def used_bytes(self) -> int:
        """koordlet's node memory usage: MemTotal - MemAvailable."""
        return max(0, self.total_bytes - self.available_bytes)


@dataclass(frozen=True, slots=True)
class LoadAvg:
    load1: float
    load5: float
    load15: float
    running: int
    threads: int
    last_pid: int


@dataclass(frozen=True, slots=True)
class ProcCgroups:
    """/proc/<pid>/cgroup: v1 controller -> path, and the cgroup2 path ("0::/...")."""

    v1: Mapping[str, str]
    unified: str | None

    def path_of(self, controller: str) -> str | None:
        """The path for a v1 controller, else the unified path."""
        return self.v1.get(controller, self.unified)


# ------------------------------------------------------------------ parsers

def parse_proc_stat_cpu(text: str) -> CpuTicks:
    for line in text.splitlines():
        words = line.split()
        if words and words[0] == "cpu":
            try:
                values = [int(word) for word in words[1:9]]
            except ValueError:
                raise InvalidValue("bad cpu line in /proc/stat: %r" % line) from None
            if len(values) < 4:
                raise InvalidValue("short cpu line in /proc/stat: %r" % line)
            return CpuTicks(*values)
    raise InvalidValue("/proc/stat has no aggregate cpu line")


def parse_meminfo(text: str) -> MemInfo:
    fields: dict[str, int] = {}
    for line in text.splitlines():
        key, colon, rest = line.partition(":")
        words = rest.split()
        if not colon or not words:
            continue
        try:
            value = int(words[0])
        except ValueError:
            raise InvalidValue("bad meminfo line %r" % line) from None
        if len(words) > 1 and words[1] == "kB":
            value *= 1024
        fields[key.strip()] = value
    try:
        total = fields["MemTotal"]
        free = fields["MemFree"]
    except KeyError as exc:
        raise InvalidValue("meminfo lacks %s" % exc) from None
    # MemAvailable exists since 3.14; older kernels: estimate with free + page cache
    available = fields.get("MemAvailable", free + fields.get("Cached", 0))
    return MemInfo(total, available, free, MappingProxyType(fields))


def parse_loadavg(text: str) -> LoadAvg:
    words = text.split()
    try:
        running, _, threads = words[3].partition("/")
        return LoadAvg(
            float(words[0]), float(words[1]), float(words[2]), int(running), int(threads),
            int(words[4]),
        )
    except (IndexError, ValueError):
        raise InvalidValue("bad loadavg %r" % text) from None


def parse_proc_cgroup(text: str) -> ProcCgroups:
    """Lines "hierarchy-ID:controller-list:path"; v2 is "0::path"; named hierarchies keep
    their "name=..." key; combined mounts ("cpu,cpuacct") give each controller the path."""
    v1: dict[str, str] = {}
    unified: str | None = None
    for line in text.splitlines():
        if not line.strip():
            continue
        parts = line.split(":", 2)
        if len(parts) != 3:
            raise InvalidValue("bad cgroup line %r" % line)
        hierarchy_id, controllers, path = parts
        if hierarchy_id == "0" and controllers == "":
            unified = path
            continue
        for controller in controllers.split(","):
            if controller:
                v1[controller] = path
    return ProcCgroups(MappingProxyType(v1), unified)


# ------------------------------------------------------------------ IO shells

def _read(path: Path) -> str:
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("ascii", "replace")
    except OSError as exc:
        raise classify_os_error(exc, path) from None  # a missing node-wide file: NotSupported


def read_cpu_ticks(host: Host) -> CpuTicks:
    return parse_proc_stat_cpu(_read(host.proc("stat")))


def read_meminfo(host: Host) -> MemInfo:
    return parse_meminfo(_read(host.proc("meminfo")))


def read_loadavg(host: Host) -> LoadAvg:
    return parse_loadavg(_read(host.proc("loadavg")))


def read_node_psi(host: Host, kind: str = "cpu") -> Psi:
    """/proc/pressure/<kind>; NotSupported when the kernel has no PSI (psi=0)."""
    if kind not in PSI_RESOURCES:
        raise InvalidValue("unknown PSI resource %r" % kind)
    return parse_psi(_read(host.proc("pressure", kind)))


def read_proc_cgroups(host: Host, pid: int) -> ProcCgroups:
    """A process's cgroup membership; Gone when the process has exited."""
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
        raise InvalidValue("bad pid %r" % (pid,))
    path = host.proc(str(pid), "cgroup")
    try:
        with open(path, "rb") as handle:
            text = handle.read().decode("utf-8", "replace")
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ESRCH):
            raise Gone("process %d has exited" % pid, path.parent) from None
        raise classify_os_error(exc, path, path.parent) from None
    return parse_proc_cgroup(text)


def online_pids(host: Host) -> tuple[int, ...]:
    """Numeric entries of /proc (processes alive now)."""
    try:
        return tuple(sorted(int(name) for name in os.listdir(host.proc_root) if name.isdigit()))
    except OSError as exc:
        raise classify_os_error(exc, host.proc_root) from None
