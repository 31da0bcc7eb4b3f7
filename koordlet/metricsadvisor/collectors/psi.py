"""Pressure stall information of the node, pods and containers (gate PSICollector, every
10 s): cpu/memory/io, some/full, avg10/avg60/avg300, as the kernel prints them (percent).

The node's avg10 figures go to the metric cache; everything else is the latest snapshot
that /metrics shows (see PSICollector). Cgroup files come from cgroup2 (on hybrid hosts the
``unified/`` hierarchy, or Anolis v1 cpuacct); the node's from /proc/pressure. A kernel
without PSI (booted psi=0, or older than 4.20) disables the collector with one log line at
setup: never a crash (koordlet v1.1 called klog.Fatalf there). cpu "full" exists from Linux
5.13; without it only "some" is kept, and /metrics says cpu_full_supported="false" as
koordlet does.

koordlet reads pods and containers both (collectContainerPSI then collectPodPSI every
interval): 3 files per cgroup, 9,000 for 1,000 pods of 2 containers. Only /metrics'
container series show container PSI, so the daemon asks for it only with those on
(``containers=True``); otherwise the pods' alone, a third of the files. The files are read
as one batch (no fd kept) and parsed in slices.
"""
from __future__ import annotations

from functools import lru_cache, partial
from typing import Mapping

from koordlet.metriccache.api import Metric, SeriesKey
from koordlet.metricsadvisor.framework import (
    Batches,
    CollectContext,
    CollectorUnsupported,
    Columns,
    Listing,
    Round,
    RoundCollector,
    Slices,
)
from koordlet.statesinformer.api import StatesInformer
from system.cgroup_files import clean_cgroup_dir, join_file
from system.errors import SystemFileError
from system.file_io import FileBatch
from system.host import Host
from system.procfs import read_node_psi
from system.psi import PSI_RESOURCES, PsiAverages, psi_averages

KINDS = ("some", "full")
WINDOWS = ("avg10", "avg60", "avg300")
# label tuples made once: SeriesKey labels are sorted (name, value) pairs
LABELS: dict[tuple[str, str, str], tuple[tuple[str, str], ...]] = {
    (resource, kind, window): (("kind", kind), ("resource", resource), ("window", window))
    for resource in PSI_RESOURCES for kind in KINDS for window in WINDOWS
}

# (some, full) averages of one resource; full is None where the kernel prints no such line
PsiReading = tuple[PsiAverages, "PsiAverages | None"]
# The latest PSI of each object: (pod uid, container id) -> {resource: reading}; node = ("", "").
PsiSnapshot = Mapping[tuple[str, str], Mapping[str, PsiReading]]
_PRESSURE_FILE = {resource: "%s.pressure" % resource for resource in PSI_RESOURCES}
# The batch's output room a pressure file (FileBatch's default is 256): two lines of ~47
# bytes when idle, ~60 with 12-digit totals; a round that needs more grows the buffer once.
# At 1,000 pods the output is 3,000 files: ~0.3 MiB less than at 256.
PRESSURE_FILE_BYTES = 160


# the index of (resource, kind)'s avg10 in NODE_KEYS and avg10_values
_KEY_AT = {(resource, kind): i for i, (resource, kind) in
           enumerate((resource, kind) for resource in PSI_RESOURCES for kind in KINDS)}
NODE_KEYS = tuple(SeriesKey(Metric.NODE_PSI.value, "", "", LABELS[(resource, kind, "avg10")])
                  for resource, kind in _KEY_AT)


def avg10_values(readings: Mapping[str, PsiReading]) -> tuple[float | None, ...]:
    """The avg10 figures of readings in _KEY_AT order (None where the kernel printed no such line)."""
    values: list[float | None] = [None] * len(_KEY_AT)
    for resource, (some, full) in readings.items():
        values[_KEY_AT[(resource, "some")]] = some[0]
        if full is not None:
            values[_KEY_AT[(resource, "full")]] = full[0]
    return tuple(values)


class _Cgroup:
    """What the last round read of one pod's or container's cgroup: the pressure texts and
    their readings. An idle cgroup prints the same texts round after round (all zeros;
    total= moves only when something stalls): then they are not parsed again."""

    __slots__ = ("texts", "readings")

    def __init__(self) -> None:
        self.texts: tuple[bytes | None, ...] = ()
        self.readings: dict[str, PsiReading] = {}


class PSICollector(RoundCollector):
    """Stores the node's avg10 (some and full) of each resource in the metric cache; the
    pods' and containers' readings, and the node's avg60/avg300, are kept only as the latest
    snapshot, which is all /metrics shows and no strategy reads them from the cache (at 1,000
    pods their avg10 series were 6,000 of the cache's 15,000, and 600 rows a second to disk)."""

    name = "psi"
    gate = "PSICollector"

    def __init__(self, interval: float, containers: bool = True) -> None:
        super().__init__(interval)
        self._containers = containers
        self._batches = Batches()
        self._host: Host | None = None
        self._states: StatesInformer | None = None
        self._node = False  # /proc/pressure readable
        # the listing keeps no paths (9,000 strings at 1,000 pods): the batch is made from the
        # dirs when they change, and keeps only its packed bytes
        self._listing: Listing[None, _Cgroup] | None = None
        self._files: tuple[tuple[str, str], ...] = ()  # (hierarchy root, file name) per resource
        self.snapshot: PsiSnapshot = {}

    def setup(self, ctx: CollectContext) -> None:
        self._host, self._states = ctx.host, ctx.states
        try:
            read_node_psi(ctx.host, "cpu")
            self._node = True
        except SystemFileError:
            self._node = False
        cgroups = False
        if ctx.reader is not None:
            try:
                ctx.reader.psi("", "cpu")
                cgroups = True
            except SystemFileError:
                cgroups = False
        if cgroups:
            reader = ctx.reader
            assert reader is not None
            self._files = tuple(reader.files.resolve_parts(_PRESSURE_FILE[resource], "")[2:]
                                for resource in PSI_RESOURCES)
            self._listing = Listing(lambda d: None, lambda uid, cid: _Cgroup(), self._containers)
        if not self._node and not cgroups:
            raise CollectorUnsupported("this kernel has no PSI (/proc/pressure and cgroup *.pressure absent)")

    def round(self, now: float) -> Round:
        snapshot: dict[tuple[str, str], Mapping[str, PsiReading]] = {}
        columns = Columns((), [])
        if self._node:
            node = self._node_readings()
            snapshot[("", "")] = node
            columns = Columns(NODE_KEYS, list(avg10_values(node)))
        if self._listing is not None and self._states is not None:
            listed = yield from self._listing.get(self._states)
            objects, entries = listed.objects, listed.entries
            files = self._files
            replies = yield ((yield from self._batches.made(
                listed.dirs, "pressure", listed.dirs,
                partial(_pressure_paths, files), partial(FileBatch, bytes_per_file=PRESSURE_FILE_BYTES))),)
            assert replies is not None
            slices = Slices()
            texts = replies[0]
            width = len(PSI_RESOURCES)
            for i, entry in enumerate(entries):
                if slices.over(i):
                    yield None
                mine = tuple(texts[i * width:(i + 1) * width])
                if mine != entry.texts:
                    readings = _readings(mine)
                    if readings is None:  # the cgroup is gone, or a file is unreadable
                        entry.texts = ()
                        continue
                    entry.texts, entry.readings = mine, readings
                pod_uid, container_id, _ = objects[i]
                snapshot[(pod_uid, container_id)] = entry.readings
        self.snapshot = snapshot
        return columns

    def _node_readings(self) -> dict[str, PsiReading]:
        assert self._host is not None
        node: dict[str, PsiReading] = {}
        for resource in PSI_RESOURCES:
            try:
                psi = read_node_psi(self._host, resource)
            except SystemFileError:
                continue
            full = psi.full
            node[resource] = ((psi.some.avg10, psi.some.avg60, psi.some.avg300),
                              None if full is None else (full.avg10, full.avg60, full.avg300))
        return node


def _pressure_paths(files: tuple[tuple[str, str], ...], cgroup: str) -> tuple[str, ...]:
    """One cgroup's pressure files, PSI_RESOURCES order."""
    rel = clean_cgroup_dir(cgroup)
    return tuple(join_file(root, rel, name) for root, name in files)


def _readings(texts: tuple[bytes | None, ...]) -> dict[str, PsiReading] | None:
    """One cgroup's pressure files (PSI_RESOURCES order) parsed; None when one is unreadable
    (the cgroup is gone)."""
    readings: dict[str, PsiReading] = {}
    for resource, text in zip(PSI_RESOURCES, texts):
        reading = None if text is None else _reading_of(text)
        if reading is None:
            return None
        readings[resource] = reading
    return readings


# Idle cgroups print the very same text (all zeros, and total= moves only when something
# stalls): most of 9,000 files parse once.
@lru_cache(maxsize=4096)
def _reading_of(text: bytes) -> PsiReading | None:
    """One pressure file's text parsed; None when it is not one."""
    try:
        return psi_averages(text.decode("ascii", "replace"))
    except SystemFileError:
        return None
