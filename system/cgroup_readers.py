"""Readers for the cgroup metrics collectors use: CPU usage, memory working set,
memory.stat, throttling, cpu.max, cpuset lists and PSI, on v1, v2 and hybrid hosts.

The decisions (which key, which unit, what "working set" means) are pure functions over
parsed values; ``CgroupReader`` is the IO shell and can keep fds open (pread per read).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from system.cgroup_codecs import UNLIMITED, key_value_of, parse_key_values
from system.cgroup_files import CgroupFiles
from system.cgroup_resource import CgroupResource, get_resource
from system.errors import InvalidValue, NotSupported
from system.file_io import KeptFdPool, read_path_text
from system.kept_files import DEFAULT_MAX_OPEN, KeptFiles
from system.psi import PSI_RESOURCES, Psi


@dataclass(frozen=True, slots=True)
class Throttling:
    nr_periods: int
    nr_throttled: int
    throttled_ns: int

    @property
    def ratio(self) -> float:
        """Throttled periods over periods (0 when nothing ran under a quota)."""
        return self.nr_throttled / self.nr_periods if self.nr_periods else 0.0


@dataclass(frozen=True, slots=True)
class CpuMax:
    quota_us: int  # -1 = unlimited
    period_us: int

    @property
    def cpus(self) -> float | None:
        """The limit in CPUs, None when unlimited."""
        if self.quota_us == UNLIMITED or self.period_us <= 0:
            return None
        return self.quota_us / self.period_us


# ------------------------------------------------------------------ pure decisions

def throttling_from_cpu_stat(stat: Mapping[str, int], version: int) -> Throttling:
    """v1 cpu.stat has throttled_time (ns); v2 has throttled_usec."""
    try:
        throttled = stat["throttled_time"] if version == 1 else stat["throttled_usec"] * 1000
        return Throttling(stat["nr_periods"], stat["nr_throttled"], throttled)
    except KeyError as exc:
        raise InvalidValue("cpu.stat lacks %s (cpu controller not enabled?)" % exc) from None


def inactive_file_key(version: int) -> str:
    """v1 uses the hierarchical total_inactive_file; v2 keys are already hierarchical."""
    return "total_inactive_file" if version == 1 else "inactive_file"


def inactive_file_of(stat: Mapping[str, int], version: int) -> int:
    key = inactive_file_key(version)
    if key not in stat:
        raise InvalidValue("memory.stat lacks %s" % key)
    return stat[key]


def working_set_bytes(usage: int, stat: Mapping[str, int], version: int) -> int:
    """kubelet's working set: usage minus inactive file pages, never below zero."""
    return max(0, usage - inactive_file_of(stat, version))


def memory_used_bytes(stat: Mapping[str, int], version: int) -> int:
    """koordlet's "used" memory: anon + unevictable (active+inactive anon on v1)."""
    if version == 1:
        keys = ("total_inactive_anon", "total_active_anon", "total_unevictable")
    else:
        keys = ("inactive_anon", "active_anon", "unevictable")
    return sum(stat.get(key, 0) for key in keys)


# ------------------------------------------------------------------ IO shell

class CgroupReader:
    """Reads cgroup metrics through the registry, optionally on kept-open fds."""

    def __init__(
        self, files: CgroupFiles, keep_open: bool = True, max_open: int = DEFAULT_MAX_OPEN,
        pool: KeptFdPool | None = None,
    ) -> None:
        """`pool`: share kept fds (and their budget) with others, e.g. the executor's
        KeptFdFileIO(pool=...); the reader then leaves closing it to the pool's owner."""
        self.files = files
        self._owns_pool = pool is None
        self._kept: KeptFdPool | None = (
            pool if pool is not None else KeptFiles(max_open) if keep_open else None)
        # (resource name, cgroup dir) -> (file path, version, resource): path building is
        # the dominant cost of a kept-fd read, so it is done once per file
        self._resolved: dict[tuple[str, str], tuple[str, int, CgroupResource]] = {}
        self._max_resolved = max(64, max_open * 2)

    def _resolve(
        self, resource: str | CgroupResource, cgroup_dir: str
    ) -> tuple[str, int, CgroupResource]:
        name = resource if isinstance(resource, str) else resource.name
        key = (name, cgroup_dir)
        hit = self._resolved.get(key)
        if hit is None:
            res = get_resource(resource)
            version, _, path = self.files.resolve(res, cgroup_dir)  # a str, not a pathlib.Path
            hit = (path, version, res)
            if len(self._resolved) >= self._max_resolved:
                self._resolved.clear()
            self._resolved[key] = hit
        return hit

    def close(self) -> None:
        if self._kept is not None and self._owns_pool:
            self._kept.close()

    def __enter__(self) -> "CgroupReader":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def forget(self, cgroup_dir: str) -> None:
        """Close kept fds of a cgroup that is going away (optional; Gone does it lazily)."""
        stale = [key for key in self._resolved if key[1] == cgroup_dir]
        for key in stale:
            del self._resolved[key]
        if self._kept is None:
            return
        for subsystem in ("cpu", "cpuacct", "cpuset", "memory", "blkio", "pids"):
            try:
                self._kept.release(self.files.subsystem_dir(subsystem, cgroup_dir))
            except (NotSupported, InvalidValue):  # controller absent: nothing kept there
                continue
        unified = self.files.hierarchy.unified_root
        if unified is not None:
            self._kept.release(unified / cgroup_dir.strip("/"))

    def path(self, resource: str | CgroupResource, cgroup_dir: str) -> str:
        """The file's path (for batch reads: system.file_io.FileBatch). Not remembered here:
        the caller keeps it (the PSI listing asked for 9,000 at 1,000 pods, and this reader's
        table of 4,096 kept them a second time)."""
        return self.files.resolve(resource, cgroup_dir)[2]

    def text(self, resource: str | CgroupResource, cgroup_dir: str) -> str:
        path = self._resolve(resource, cgroup_dir)[0]
        if self._kept is None:
            return read_path_text(path).strip()
        return self._kept.read(path).strip()

    def value(self, resource: str | CgroupResource, cgroup_dir: str) -> Any:
        path, version, res = self._resolve(resource, cgroup_dir)
        text = read_path_text(path) if self._kept is None else self._kept.read(path)
        return res.parse(text.strip(), version)

    def parse(self, resource: str | CgroupResource, text: str) -> Any:
        """What `value` gives when the resource's file (`path`) holds `text`: for a value
        read in a batch."""
        res = get_resource(resource)
        return res.parse(text.strip(), self.files.version_for(res))

    # -- metrics
    def cpu_usage_ns(self, cgroup_dir: str) -> int:
        """Cumulative CPU time: v1 cpuacct.usage, v2 cpu.stat usage_usec * 1000."""
        return int(self.value("cpuacct.usage", cgroup_dir))

    def cpu_stat(self, cgroup_dir: str) -> Mapping[str, int]:
        return self.value("cpu.stat", cgroup_dir)

    def throttling(self, cgroup_dir: str) -> Throttling:
        return throttling_from_cpu_stat(
            self.cpu_stat(cgroup_dir), self.files.version_for("cpu.stat")
        )

    def cpu_max(self, cgroup_dir: str) -> CpuMax:
        if self.files.version_for("cpu.cfs_quota_us") == 2:
            text = self.text("cpu.cfs_quota_us", cgroup_dir)  # one read of cpu.max
            res_q, res_p = get_resource("cpu.cfs_quota_us"), get_resource("cpu.cfs_period_us")
            return CpuMax(res_q.parse(text, 2), res_p.parse(text, 2))
        return CpuMax(
            self.value("cpu.cfs_quota_us", cgroup_dir), self.value("cpu.cfs_period_us", cgroup_dir)
        )

    def cpu_shares(self, cgroup_dir: str) -> int:
        return int(self.value("cpu.shares", cgroup_dir))

    def memory_stat(self, cgroup_dir: str) -> Mapping[str, int]:
        return parse_key_values(self.text("memory.stat", cgroup_dir))

    def memory_usage_bytes(self, cgroup_dir: str) -> int:
        return int(self.value("memory.usage_in_bytes", cgroup_dir))

    def memory_working_set_bytes(self, cgroup_dir: str) -> int:
        """usage - inactive_file; reads only the one memory.stat key it needs."""
        version = self.files.version_for("memory.stat")
        usage = self.memory_usage_bytes(cgroup_dir)
        key = inactive_file_key(version)
        inactive = key_value_of(self.text("memory.stat", cgroup_dir), key)
        return working_set_bytes(usage, {key: inactive}, version)

    def memory_used_bytes(self, cgroup_dir: str) -> int:
        return memory_used_bytes(
            self.memory_stat(cgroup_dir), self.files.version_for("memory.stat")
        )

    def memory_limit_bytes(self, cgroup_dir: str) -> int:
        return int(self.value("memory.limit_in_bytes", cgroup_dir))

    def cpuset_cpus(self, cgroup_dir: str, effective: bool = False) -> frozenset[int]:
        name = "cpuset.cpus.effective" if effective else "cpuset.cpus"
        return self.value(name, cgroup_dir)

    def cpuset_mems(self, cgroup_dir: str, effective: bool = False) -> frozenset[int]:
        name = "cpuset.mems.effective" if effective else "cpuset.mems"
        return self.value(name, cgroup_dir)

    def psi(self, cgroup_dir: str, kind: str = "cpu") -> Psi:
        if kind not in PSI_RESOURCES:
            raise InvalidValue("unknown PSI resource %r" % kind)
        return self.value("%s.pressure" % kind, cgroup_dir)

    def procs(self, cgroup_dir: str) -> tuple[int, ...]:
        return self.value("cgroup.procs", cgroup_dir)
