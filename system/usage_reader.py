"""The per-second cgroup reads of the metrics collectors, on the shortest path: CPU time,
memory working set and throttling of one cgroup.

Same files and meaning as ``CgroupReader`` (cpuacct.usage or v2 cpu.stat usage_usec;
memory.usage_in_bytes or memory.current minus the inactive_file key of memory.stat;
cpu.stat nr_periods / nr_throttled), but each cgroup's file paths are resolved once and
read with a single-key parse: a 1,000-container cycle makes ~8,000 of these reads per
second, and the generic reader's per-read lookups cost more than the read.

The collectors take the resolved paths (``paths``) and read them in batches
(system.file_io.ValueBatch: open + read + close + parse in one C call, no fd kept, only
integers back). The per-call methods below read through a kept-fd pool when one is given
and parse with the pure ``cpu_ns_of`` / ``working_set_of`` / ``parse_throttle_counts``.
"""

from __future__ import annotations

from typing import NamedTuple

from system.cgroup_codecs import key_value_of
from system.cgroup_files import CgroupFiles, clean_cgroup_dir, join_file, read_path_text
from system.cgroup_readers import Throttling, inactive_file_key
from system.errors import InvalidValue
from system.file_io import KeptFdPool
from system.kept_files import DEFAULT_MAX_OPEN, KeptFiles

# cgroups whose paths stay resolved (cleared past it: cgroups that went without forget())
MAX_PATHS = 65536


class UsagePaths:
    """One cgroup's usage files, resolved once: the cgroup dir and, per file, the hierarchy
    root and file name (strings every cgroup shares), so a path is made when asked, not
    kept (the collectors ask when they build a batch, which keeps the bytes it reads). The
    roots, names and file versions are one tuple shared by the cgroups that resolve alike
    (_LAYOUTS): four slots a cgroup instead of thirteen, ~80 B each of 3,000 at 1,000 pods."""

    __slots__ = ("rel", "cpu_v2", "inactive", "_layout")

    def __init__(self, files: CgroupFiles, cgroup_dir: str) -> None:
        self.rel = rel = clean_cgroup_dir(cgroup_dir)
        cpu_root, cpu_name, self.cpu_v2 = _file(files, "cpuacct.usage", rel)
        memory_root, memory_name, _ = _file(files, "memory.usage_in_bytes", rel)
        stat_root, stat_name, memory_stat_v2 = _file(files, "memory.stat", rel)
        cpu_stat_root, cpu_stat_name, cpu_stat_v2 = _file(files, "cpu.stat", rel)
        layout = _Layout(cpu_root, cpu_name, memory_root, memory_name, stat_root, stat_name, cpu_stat_root,
                         cpu_stat_name, inactive_file_key(2 if memory_stat_v2 else 1), cpu_stat_v2)
        if len(_LAYOUTS) >= _MAX_LAYOUTS:  # hierarchies come and go (test trees): paths made keep theirs
            _LAYOUTS.clear()
        self._layout = _LAYOUTS.setdefault(layout, layout)
        self.inactive = -1  # the last inactive_file read, -1 before the first

    @property
    def inactive_key(self) -> str:
        return self._layout.inactive_key

    @property
    def cpu_stat_v2(self) -> bool:
        return self._layout.cpu_stat_v2

    @property
    def cpu(self) -> str:
        layout = self._layout
        return join_file(layout.cpu_root, self.rel, layout.cpu_name)

    @property
    def memory(self) -> str:
        layout = self._layout
        return join_file(layout.memory_root, self.rel, layout.memory_name)

    @property
    def memory_stat(self) -> str:
        layout = self._layout
        return join_file(layout.stat_root, self.rel, layout.stat_name)

    @property
    def cpu_stat(self) -> str:
        layout = self._layout
        return join_file(layout.cpu_stat_root, self.rel, layout.cpu_stat_name)


class _Layout(NamedTuple):
    """What the cgroups that resolve alike share: each file's hierarchy root and name, the
    memory.stat key of inactive_file, whether cpu.stat is v2's."""
    cpu_root: str
    cpu_name: str
    memory_root: str
    memory_name: str
    stat_root: str
    stat_name: str
    cpu_stat_root: str
    cpu_stat_name: str
    inactive_key: str
    cpu_stat_v2: bool


# the distinct layouts of UsagePaths (a handful: v1 or v2 per file, a few hierarchy roots)
_MAX_LAYOUTS = 64
_LAYOUTS: dict[_Layout, _Layout] = {}


def _file(files: CgroupFiles, resource: str, rel: str) -> tuple[str, str, bool]:
    """(hierarchy root, file name, whether it is the v2 file) of one resource."""
    version, _, root, name = files.resolve_parts(resource, rel)
    return root, name, version == 2


class UsageReader:
    """Not thread-safe; ``close()`` when done. Raises the system errors (Gone when the
    cgroup was removed, NotSupported when a controller is missing, InvalidValue).

    ``pool``: keep the fds in a shared KeptFdPool (the daemon's one budget, shared with the
    executor); the pool's owner closes it. Without one the reader keeps its own of
    ``max_open`` fds."""

    def __init__(self, files: CgroupFiles, max_open: int = DEFAULT_MAX_OPEN, keep_open: bool = True,
                 pool: KeptFdPool | None = None) -> None:
        self.files = files
        self._owns_pool = pool is None
        self._kept: KeptFdPool = pool if pool is not None else KeptFiles(max_open)
        # open per read: for fake trees, whose removed files stay readable on a kept fd
        self._read = self._kept.read if keep_open else read_path_text
        self._paths: dict[str, UsagePaths] = {}
        self._max_paths = MAX_PATHS

    def paths(self, cgroup_dir: str) -> UsagePaths:
        """The cgroup's files (resolved once, kept until forget())."""
        return self._resolved(cgroup_dir)

    def _resolved(self, cgroup_dir: str) -> UsagePaths:
        paths = self._paths.get(cgroup_dir)
        if paths is None:
            if len(self._paths) >= self._max_paths:  # cgroups that went without forget()
                self._paths.clear()
            paths = self._paths[cgroup_dir] = UsagePaths(self.files, cgroup_dir)
        return paths

    def cpu_ns_and_working_set(self, cgroup_dir: str, refresh_inactive: bool = True) -> tuple[int, int]:
        """Cumulative CPU time in ns and the memory working set in bytes.

        ``refresh_inactive=False`` reuses this cgroup's last inactive_file figure instead of
        reading memory.stat (the largest of the files): page-cache aging moves it slowly,
        and kubelet's own working set comes from a cAdvisor scrape every 10-15 s."""
        paths = self._resolved(cgroup_dir)
        read = self._read
        try:
            cpu_ns = cpu_ns_of(read(paths.cpu), paths.cpu_v2)
            usage = int(read(paths.memory))
        except ValueError:
            raise InvalidValue("unreadable CPU or memory usage", paths.cpu) from None
        if refresh_inactive or paths.inactive < 0:
            paths.inactive = inactive_of(read(paths.memory_stat), paths.inactive_key)
        return cpu_ns, working_set_of(usage, paths.inactive)

    def throttling(self, cgroup_dir: str) -> Throttling:
        paths = self._resolved(cgroup_dir)
        return parse_throttling(self._read(paths.cpu_stat), paths.cpu_stat_v2)

    def throttle_counts(self, cgroup_dir: str) -> tuple[int, int]:
        """(nr_periods, nr_throttled) of cpu.stat: the two counters the ratio needs."""
        paths = self._resolved(cgroup_dir)
        return parse_throttle_counts(self._read(paths.cpu_stat))

    def forget(self, cgroup_dir: str) -> None:
        """Close the kept fds of a cgroup that went away."""
        paths = self._paths.pop(cgroup_dir, None)
        if paths is not None:
            for path in (paths.cpu, paths.memory, paths.memory_stat, paths.cpu_stat):
                self._kept.release_file(path)

    def close(self) -> None:
        if self._owns_pool:
            self._kept.close()
        self._paths.clear()


def cpu_ns_of(text: str | bytes, v2: bool) -> int:
    """Cumulative CPU ns: cpuacct.usage as it is, v2 cpu.stat's usage_usec × 1000.
    ValueError (or InvalidValue) when the text is not that."""
    if v2:
        return key_value_of(text if isinstance(text, str) else text.decode("ascii", "replace"), "usage_usec") * 1000
    return int(text)


def inactive_of(text: str | bytes, key: str) -> int:
    """The inactive_file figure of memory.stat (``key`` from inactive_file_key)."""
    return key_value_of(text if isinstance(text, str) else text.decode("ascii", "replace"), key)


def working_set_of(usage: int, inactive: int) -> int:
    """kubelet's working set: usage minus inactive file pages, never below zero."""
    return max(0, usage - inactive)


def parse_throttling(text: str, v2: bool) -> Throttling:
    """cpu.stat's nr_periods, nr_throttled and throttled time (v1 throttled_time in ns, v2
    throttled_usec): one split of the few "key value" lines, keys looked up by name."""
    words = text.split()
    values = dict(zip(words[::2], words[1::2]))
    try:
        if v2:
            throttled_ns = int(values["throttled_usec"]) * 1000
        else:
            throttled_ns = int(values["throttled_time"])
        return Throttling(int(values["nr_periods"]), int(values["nr_throttled"]), throttled_ns)
    except (KeyError, ValueError):
        raise InvalidValue("cpu.stat lacks the throttling keys (cpu controller not enabled?)") from None


def parse_throttle_counts(text: str | bytes) -> tuple[int, int]:
    """nr_periods and nr_throttled from cpu.stat. v1 prints them first, in that order; other
    layouts (v2, where they follow the usage lines) are searched by key."""
    if not isinstance(text, str):
        text = text.decode("ascii", "replace")
    words = text.split(None, 4)
    try:
        if words[0] == "nr_periods" and words[2] == "nr_throttled":
            return int(words[1]), int(words[3])
    except (IndexError, ValueError):
        pass
    return key_value_of(text, "nr_periods"), key_value_of(text, "nr_throttled")
