"""Cycles per instruction of every running container (gate CPICollector): every 60 s, open
perf counter groups in cgroup mode on every online CPU, count for a 10 s window, read,
close (system/perf_events.py; koordlet's performance collector).

fds: containers x CPUs x 2 while a window is open, then none. The budget is what
RLIMIT_NOFILE leaves (minus a reserve for the daemon, and minus what the daemon's kept-fd
pool may still open up to its budget); containers beyond it are skipped for
that round, logged once per round with the number skipped, never an EMFILE elsewhere.

Without a PMU (this VM: ENOENT for hardware events), or when perf_event_paranoid forbids
cgroup-mode events, setup reports "unsupported" once and the collector is not scheduled.
Events are named, never positional: cycles go to cpi_field="cycles" (koordlet v1.1 swapped
them). Tests drive the same code with two software events on the real kernel.
"""

from __future__ import annotations

import structlog

from koordlet.metriccache.api import Metric, SeriesKey
from koordlet.metricsadvisor.framework import CollectContext, CollectorUnsupported
from koordlet.statesinformer.api import StatesInformer
from system.cgroup_version import CgroupHierarchy
from system.errors import SystemFileError
from system.file_io import KeptFdPool
from system.perf_access import PerfUnavailable, check_cgroup_events_allowed, fd_cost, read_fd_headroom
from system.perf_events import CPI_EVENTS, PerfEvent, perf_cgroup_path, probe_events
from system.perf_events import CpiCollector as PerfCpi

log = structlog.get_logger(__name__)


class CPICollector:
    name = "cpi"
    gate = "CPICollector"

    def __init__(self, interval: float, window: float,
                 events: tuple[PerfEvent, PerfEvent] = CPI_EVENTS) -> None:
        self.interval = interval
        self.window = window
        self._events = events
        self._hierarchy: CgroupHierarchy | None = None
        self._fd_pool: KeptFdPool | None = None
        self._states: StatesInformer | None = None
        self._cpus: tuple[int, ...] = ()
        self._open: list[tuple[str, str, PerfCpi]] = []
        self.skipped = 0  # containers left out of the last window (fd budget or refusal)

    def setup(self, ctx: CollectContext) -> None:
        if ctx.files is None:
            raise CollectorUnsupported("no cgroup hierarchy on this host")
        if ctx.states is None:
            raise CollectorUnsupported("no states informer: containers are unknown")
        self._hierarchy, self._states, self._fd_pool = ctx.files.hierarchy, ctx.states, ctx.fd_pool
        self._cpus = tuple(sorted(ctx.facts.online_cpus)) if ctx.facts is not None else ()
        if not self._cpus:
            raise CollectorUnsupported("the host's CPUs are unknown")
        try:
            check_cgroup_events_allowed(ctx.host)
            probe_events(self._hierarchy, self._events, self._cpus[0])
        except PerfUnavailable as exc:
            raise CollectorUnsupported("perf events unavailable (%s): %s" % (exc.reason.value, exc)) from exc
        except (SystemFileError, OSError, ValueError) as exc:
            raise CollectorUnsupported("cannot set up perf counting: %s" % exc) from exc

    def begin(self, now: float) -> None:
        assert self._states is not None and self._hierarchy is not None
        self.close()
        self.skipped = 0
        pool = self._fd_pool
        budget = read_fd_headroom(promised=pool.max_open - len(pool) if pool is not None else 0)
        per_container = fd_cost(len(self._events), len(self._cpus))
        for pod in self._states.pods():
            for container in pod.running_containers:
                if not container.cgroup_dir:
                    continue
                if budget < per_container:
                    self.skipped += 1
                    continue
                try:
                    path = perf_cgroup_path(self._hierarchy, container.cgroup_dir)
                    counters = PerfCpi.open(path, self._cpus, self._events, fd_budget=budget)
                except SystemFileError:  # gone, or refused for this cgroup
                    self.skipped += 1
                    continue
                budget -= counters.fd_count
                self._open.append((pod.uid, container.id, counters))
        if self.skipped:
            log.warning("cpi_containers_skipped", skipped=self.skipped, counted=len(self._open))

    def collect(self, now: float) -> list[tuple[SeriesKey, float]]:
        samples: list[tuple[SeriesKey, float]] = []
        try:
            for pod_uid, container_id, counters in self._open:
                try:
                    reading = counters.read()
                except SystemFileError:
                    continue
                samples.append((SeriesKey.of(Metric.CONTAINER_CPU_CYCLES, pod_uid, container_id),
                                float(reading.cycles)))
                samples.append((SeriesKey.of(Metric.CONTAINER_INSTRUCTIONS, pod_uid, container_id),
                                float(reading.instructions)))
                cpi = reading.cpi
                if cpi is not None:
                    samples.append((SeriesKey.of(Metric.CONTAINER_CPI, pod_uid, container_id), cpi))
        finally:
            self.close()
        return samples

    def close(self) -> None:
        opened, self._open = self._open, []
        for _, _, counters in opened:
            counters.close()

    @property
    def open_fds(self) -> int:
        return sum(counters.fd_count for _, _, counters in self._open)
