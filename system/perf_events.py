"""perf_event_open counter groups in cgroup mode: one group per (cgroup, CPU), read, close.

The cffi extension ``system._perf_ext`` (built by ``pip install``) opens each group with
``PERF_FLAG_PID_CGROUP`` and read_format GROUP | TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING;
reads are one ``os.read`` of the leader per CPU, parsed with ``struct``. When the PMU is
shared (multiplexing), a counter ran only ``time_running`` of ``time_enabled``: its value is
scaled per CPU by enabled/running before the CPUs are summed (perf-stat's estimate).

Events are always looked up by name, never by position in a read-out: koordlet v1.1 returned
(instructions, cycles) from a function named "CyclesAndInstructions".

Without the compiled extension everything here raises ``PerfUnavailable`` with reason
EXTENSION_MISSING; nothing crashes at import.
"""

from __future__ import annotations

import errno as errno_codes
import os
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from system.cgroup_files import clean_cgroup_dir
from system.cgroup_version import CgroupHierarchy
from system.errors import InvalidValue, NotSupported, classify_os_error
from system.perf_access import (
    PerfUnavailable,
    PerfUnavailableReason,
    fd_cost,
    reason_for_errno,
)

try:
    from system._perf_ext import ffi as _ffi
    from system._perf_ext import lib as _lib

    _EXTENSION_ERROR: str | None = None
except ImportError as _exc:  # not built (e.g. a plain source checkout): fail on use only
    _ffi = _lib = None
    _EXTENSION_ERROR = str(_exc)

PERF_TYPE_HARDWARE = 0
PERF_TYPE_SOFTWARE = 1
_U64 = 8
_HEADER_WORDS = 3  # nr, time_enabled, time_running


class PerfEvent(Enum):
    """Generalised events (include/uapi/linux/perf_event.h): (type, config)."""

    CYCLES = (PERF_TYPE_HARDWARE, 0)  # PERF_COUNT_HW_CPU_CYCLES
    INSTRUCTIONS = (PERF_TYPE_HARDWARE, 1)  # PERF_COUNT_HW_INSTRUCTIONS
    REF_CYCLES = (PERF_TYPE_HARDWARE, 9)  # PERF_COUNT_HW_REF_CPU_CYCLES
    CPU_CLOCK = (PERF_TYPE_SOFTWARE, 0)  # ns
    TASK_CLOCK = (PERF_TYPE_SOFTWARE, 1)  # ns
    CONTEXT_SWITCHES = (PERF_TYPE_SOFTWARE, 3)

    @property
    def type(self) -> int:
        return self.value[0]

    @property
    def config(self) -> int:
        return self.value[1]


CPI_EVENTS: tuple[PerfEvent, PerfEvent] = (PerfEvent.CYCLES, PerfEvent.INSTRUCTIONS)


@dataclass(frozen=True, slots=True)
class GroupSample:
    """One read of one group on one CPU: raw counts in event order."""

    time_enabled_ns: int
    time_running_ns: int
    values: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class PerfCounts:
    """A cgroup's counts summed over CPUs, each CPU scaled for multiplexing first."""

    events: tuple[PerfEvent, ...]
    values: tuple[int, ...]
    time_enabled_ns: int
    time_running_ns: int

    def value(self, event: PerfEvent) -> int:
        try:
            return self.values[self.events.index(event)]
        except ValueError:
            raise InvalidValue("%s was not counted (events: %s)" % (
                event.name, ", ".join(e.name for e in self.events))) from None


@dataclass(frozen=True, slots=True)
class CpiReading:
    cycles: int
    instructions: int
    time_enabled_ns: int
    time_running_ns: int

    @property
    def cpi(self) -> float | None:
        """Cycles per instruction; None when nothing was retired."""
        return self.cycles / self.instructions if self.instructions else None


# ------------------------------------------------------------------ pure decisions

def group_read_size(n_events: int) -> int:
    return (_HEADER_WORDS + n_events) * _U64


def parse_group_read(buf: bytes, n_events: int) -> GroupSample:
    """Decode ``{u64 nr; u64 time_enabled; u64 time_running; u64 value[nr]}`` (native order)."""
    if len(buf) != group_read_size(n_events):
        raise InvalidValue("perf group read of %d bytes, expected %d" % (
            len(buf), group_read_size(n_events)))
    words = struct.unpack("=%dQ" % (_HEADER_WORDS + n_events), buf)
    if words[0] != n_events:
        raise InvalidValue("perf group holds %d events, expected %d" % (words[0], n_events))
    return GroupSample(words[1], words[2], tuple(words[_HEADER_WORDS:]))


def scale_count(value: int, time_enabled: int, time_running: int) -> int:
    """Estimate of the full count of a multiplexed counter: value * enabled / running.

    With no timing information (a zero time) the raw value is kept, as koordlet does.
    """
    if time_running <= 0 or time_enabled <= 0 or time_running >= time_enabled:
        return value
    return (value * time_enabled + time_running // 2) // time_running


def sum_samples(events: Sequence[PerfEvent], samples: Iterable[GroupSample]) -> PerfCounts:
    """Scale each CPU's sample, then sum per event across CPUs."""
    totals = [0] * len(events)
    enabled = running = 0
    for sample in samples:
        enabled += sample.time_enabled_ns
        running += sample.time_running_ns
        for i, value in enumerate(sample.values):
            totals[i] += scale_count(value, sample.time_enabled_ns, sample.time_running_ns)
    return PerfCounts(tuple(events), tuple(totals), enabled, running)


def cpi_reading(counts: PerfCounts, cycles: PerfEvent, instructions: PerfEvent) -> CpiReading:
    return CpiReading(
        cycles=counts.value(cycles),
        instructions=counts.value(instructions),
        time_enabled_ns=counts.time_enabled_ns,
        time_running_ns=counts.time_running_ns,
    )


def perf_cgroup_path(hierarchy: CgroupHierarchy, cgroup_dir: str) -> Path:
    """The directory whose fd names a cgroup to perf: the v1 perf_event hierarchy when
    mounted, else the cgroup2 dir (perf_event is implicit on cgroup2 since Linux 4.11)."""
    root = hierarchy.v1_root("perf_event") or hierarchy.unified_root
    if root is None:
        raise NotSupported("no perf_event cgroup hierarchy", hierarchy.cgroup_root)
    rel = clean_cgroup_dir(cgroup_dir)
    return root / rel if rel else root


def extension_available() -> bool:
    return _lib is not None


def _require_extension() -> None:
    if _lib is None:
        raise PerfUnavailable(
            "perf extension system._perf_ext is not built (reinstall with pip: %s)"
            % _EXTENSION_ERROR, errno_codes.ELIBACC, PerfUnavailableReason.EXTENSION_MISSING,
        )


# ------------------------------------------------------------------ IO shell

class CgroupPerfGroups:
    """Counter groups for one cgroup, one per CPU, open until ``close()``.

    Holds ``fd_count`` fds (events × CPUs). Not thread-safe; reads are cheap unless a
    member task runs on another CPU at that moment (an IPI, ~17 µs on a VM).
    """

    def __init__(
        self, path: Path, events: tuple[PerfEvent, ...], cpus: tuple[int, ...],
        groups: list[tuple[int, ...]],
    ) -> None:
        self.path = path
        self.events = events
        self.cpus = cpus
        self._groups = groups
        self._leaders = [group[0] for group in groups]
        self._size = group_read_size(len(events))
        self._words = struct.Struct("=%dQ" % (_HEADER_WORDS + len(events)))

    @classmethod
    def open(
        cls, cgroup_path: Path | str, events: Sequence[PerfEvent], cpus: Iterable[int],
        fd_budget: int | None = None,
    ) -> "CgroupPerfGroups":
        """Open and enable one group per CPU on the cgroup at ``cgroup_path``.

        ``fd_budget``: fds the caller can spare; when the groups would need more, nothing is
        opened and PerfUnavailable(EMFILE, FD_LIMIT) is raised. Gone when the cgroup dir
        does not exist; PerfUnavailable for every refusal of the kernel. On any failure,
        nothing stays open.
        """
        _require_extension()
        assert _ffi is not None and _lib is not None
        path = Path(cgroup_path)
        evs = tuple(events)
        cpu_list = tuple(sorted(set(cpus)))
        if not evs or not cpu_list:
            raise InvalidValue("perf groups need at least one event and one cpu")
        cost = fd_cost(len(evs), len(cpu_list))
        if fd_budget is not None and cost > fd_budget:
            raise PerfUnavailable(
                "perf groups need %d fds, budget is %d" % (cost, fd_budget),
                errno_codes.EMFILE, PerfUnavailableReason.FD_LIMIT, path,
            )
        try:
            cgroup_fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            raise classify_os_error(exc, path, path) from None
        types = _ffi.new("uint32_t[]", [e.type for e in evs])
        configs = _ffi.new("uint64_t[]", [e.config for e in evs])
        out = _ffi.new("int[]", len(evs))
        groups: list[tuple[int, ...]] = []
        try:
            for cpu in cpu_list:
                rc = _lib.koord_perf_open_group(cgroup_fd, cpu, types, configs, len(evs), out)
                if rc < 0:
                    raise PerfUnavailable(
                        "perf_event_open(%s) on cpu %d refused" % (
                            "+".join(e.name for e in evs), cpu),
                        -rc, reason_for_errno(-rc), path,
                    )
                groups.append(tuple(out))
        except BaseException:
            for group in groups:
                _close_group(group)
            raise
        finally:
            os.close(cgroup_fd)  # each event holds its own reference to the cgroup
        return cls(path, evs, cpu_list, groups)

    @property
    def fd_count(self) -> int:
        return sum(len(group) for group in self._groups)

    @property
    def leader_fds(self) -> tuple[int, ...]:
        """One fd per CPU whose read returns the whole group (for benches and batching)."""
        return tuple(self._leaders)

    @property
    def closed(self) -> bool:
        return not self._groups

    def _raw_reads(self) -> list[bytes]:
        """One read-out per CPU, in ``cpus`` order; errors typed."""
        if not self._groups:
            raise InvalidValue("perf groups of %s are closed" % self.path)
        size, read = self._size, os.read
        try:
            return [read(leader, size) for leader in self._leaders]
        except OSError as exc:
            code = exc.errno or errno_codes.EIO
            raise PerfUnavailable(
                "perf read failed", code, reason_for_errno(code), self.path
            ) from None

    def read_samples(self) -> list[GroupSample]:
        """One raw (unscaled) sample per CPU, in ``cpus`` order."""
        n = len(self.events)
        return [parse_group_read(buf, n) for buf in self._raw_reads()]

    def read(self) -> PerfCounts:
        """Scaled counts summed over CPUs: ``sum_samples(events, read_samples())`` without
        the per-CPU value objects (this runs for every container every window)."""
        n = len(self.events)
        totals = [0] * n
        enabled_sum = running_sum = 0
        unpack = self._words.unpack
        for buf in self._raw_reads():
            try:
                words = unpack(buf)
            except struct.error:
                raise InvalidValue("short perf group read", self.path) from None
            if words[0] != n:
                raise InvalidValue("perf group holds %d events, expected %d" % (words[0], n))
            enabled, running = words[1], words[2]
            enabled_sum += enabled
            running_sum += running
            values = words[_HEADER_WORDS:]
            if 0 < running < enabled:  # multiplexed on this cpu
                values = tuple(scale_count(value, enabled, running) for value in values)
            totals = [total + value for total, value in zip(totals, values)]
        return PerfCounts(self.events, tuple(totals), enabled_sum, running_sum)

    def close(self) -> None:
        groups, self._groups, self._leaders = self._groups, [], []
        for group in groups:
            _close_group(group)

    def __enter__(self) -> "CgroupPerfGroups":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _close_group(fds: tuple[int, ...]) -> None:
    for fd in reversed(fds):  # members first, the leader last
        try:
            os.close(fd)
        except OSError:
            pass  # already closed: nothing more to release


class CpiCollector:
    """Cycles and instructions of one cgroup, summed over CPUs.

    ``events`` exists so that machines without a hardware PMU can drive this very code
    with two software events (tests: TASK_CLOCK standing for cycles, CONTEXT_SWITCHES for
    instructions); production uses CPI_EVENTS.
    """

    def __init__(self, groups: CgroupPerfGroups, cycles: PerfEvent, instructions: PerfEvent):
        self.groups = groups
        self._cycles = cycles
        self._instructions = instructions

    @classmethod
    def open(
        cls, cgroup_path: Path | str, cpus: Iterable[int],
        events: tuple[PerfEvent, PerfEvent] = CPI_EVENTS, fd_budget: int | None = None,
    ) -> "CpiCollector":
        cycles, instructions = events
        if cycles == instructions:
            raise InvalidValue("cycles and instructions must be two events")
        return cls(CgroupPerfGroups.open(cgroup_path, events, cpus, fd_budget),
                   cycles, instructions)

    @property
    def fd_count(self) -> int:
        return self.groups.fd_count

    def read(self) -> CpiReading:
        return cpi_reading(self.groups.read(), self._cycles, self._instructions)

    def close(self) -> None:
        self.groups.close()

    def __enter__(self) -> "CpiCollector":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def probe_events(
    hierarchy: CgroupHierarchy, events: Sequence[PerfEvent] = CPI_EVENTS, cpu: int = 0
) -> None:
    """Open and close ``events`` once on the root cgroup of one CPU: returns when they can
    be counted here, else raises PerfUnavailable (e.g. ENOENT without a hardware PMU), so a
    collector can report "unsupported" once at start instead of once per container."""
    CgroupPerfGroups.open(perf_cgroup_path(hierarchy, ""), events, (cpu,)).close()
