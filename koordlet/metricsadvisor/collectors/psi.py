"""Pressure stall information of the node, pods and containers (gate PSICollector, every
10 s): cpu/memory/io, some/full, avg10/avg60/avg300, as the kernel prints them (percent).

cgroup files come from cgroup2 (on hybrid hosts the ``unified/`` hierarchy, or Anolis v1
cpuacct); the node's from /proc/pressure. A kernel without PSI (booted psi=0, or older than
4.20) disables the collector with one log line at setup: never a crash (koordlet v1.1
called klog.Fatalf there). cpu "full" exists from Linux 5.13; without it only "some" is
stored, and /metrics says cpu_full_supported="false" as koordlet does.
"""

from __future__ import annotations

from typing import Sequence

from koordlet.metriccache.api import Metric, Sample, SeriesKey
from koordlet.metricsadvisor.framework import CollectContext, CollectorUnsupported, PeriodicCollector
from koordlet.statesinformer.api import StatesInformer
from system.cgroup_readers import CgroupReader
from system.errors import SystemFileError
from system.host import Host
from system.procfs import read_node_psi
from system.psi import PSI_RESOURCES, Psi

KINDS = ("some", "full")
WINDOWS = ("avg10", "avg60", "avg300")
# label tuples made once: SeriesKey labels are sorted (name, value) pairs
LABELS: dict[tuple[str, str, str], tuple[tuple[str, str], ...]] = {
    (resource, kind, window): (("kind", kind), ("resource", resource), ("window", window))
    for resource in PSI_RESOURCES for kind in KINDS for window in WINDOWS
}


def psi_values(resource: str, psi: Psi) -> list[tuple[tuple[tuple[str, str], ...], float]]:
    """(labels, value) for every line the kernel printed."""
    out = []
    for kind, line in (("some", psi.some), ("full", psi.full)):
        if line is None:
            continue
        out.append((LABELS[(resource, kind, "avg10")], line.avg10))
        out.append((LABELS[(resource, kind, "avg60")], line.avg60))
        out.append((LABELS[(resource, kind, "avg300")], line.avg300))
    return out


class PSICollector(PeriodicCollector):
    name = "psi"
    gate = "PSICollector"

    def __init__(self, interval: float) -> None:
        super().__init__(interval)
        self._host: Host | None = None
        self._reader: CgroupReader | None = None
        self._states: StatesInformer | None = None
        self._node = False

    def setup(self, ctx: CollectContext) -> None:
        self._host, self._reader, self._states = ctx.host, ctx.reader, ctx.states
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
        if not cgroups:
            self._reader = None
        if not self._node and not cgroups:
            raise CollectorUnsupported("this kernel has no PSI (/proc/pressure and cgroup *.pressure absent)")

    def collect(self, now: float) -> Sequence[Sample]:
        samples: list[Sample] = []
        if self._node:
            assert self._host is not None
            for resource in PSI_RESOURCES:
                try:
                    psi = read_node_psi(self._host, resource)
                except SystemFileError:
                    continue
                for labels, value in psi_values(resource, psi):
                    samples.append(Sample(SeriesKey(Metric.NODE_PSI.value, "", "", labels), now, value))
        if self._reader is None or self._states is None:
            return samples
        for pod in self._states.pods():
            self._cgroup(samples, now, Metric.POD_PSI.value, pod.uid, "", pod.cgroup_parent)
            for container in pod.running_containers:
                self._cgroup(samples, now, Metric.CONTAINER_PSI.value, pod.uid, container.id,
                             container.cgroup_dir)
        return samples

    def _cgroup(self, samples: list[Sample], now: float, metric: str, pod_uid: str, container_id: str,
                cgroup_dir: str) -> None:
        assert self._reader is not None
        if not cgroup_dir:
            return
        for resource in PSI_RESOURCES:
            try:
                psi = self._reader.psi(cgroup_dir, resource)
            except SystemFileError:
                return  # the cgroup is gone: no point reading its other files
            for labels, value in psi_values(resource, psi):
                samples.append(Sample(SeriesKey(metric, pod_uid, container_id, labels), now, value))
