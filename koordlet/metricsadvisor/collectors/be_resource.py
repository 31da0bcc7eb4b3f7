"""Best-effort CPU: usage and real limit of the besteffort QoS cgroup, and the sum of the
BE pods' batch-cpu requests (koordlet's beresource collector), every 1 s. The sum is kept
from the informer's pod events (statesinformer/pod_sum.py), not summed over every pod.

Real limit (koordlet getBECPURealMilliLimit): the CPUs of the tier's cpuset, lowered to
quota/period when a CFS quota is set.

The tier's files are read as one batch in the reading thread (framework.Round), not on the
event loop: an open() of a cgroup file can wait in the kernel for tens of ms while the
runtime makes and removes cgroups, and this collector runs every second.
"""

from __future__ import annotations

from typing import Any

from koordlet.apis import keys
from koordlet.apis.qos import KoordQoSClass
from koordlet.metriccache.api import Metric, SeriesKey
from koordlet.metricsadvisor.framework import CollectContext, CollectorUnsupported, Round, RoundCollector
from koordlet.metricsadvisor.rates import cores_from_ns
from koordlet.statesinformer.model import PodInfo
from koordlet.statesinformer.pod_sum import KeptPodSum
from koordlet.util.host_facts import HostFacts
from system.cgroup_codecs import key_value_of
from system.cgroup_layout import QoSTier
from system.cgroup_readers import CgroupReader, CpuMax, inactive_file_key, working_set_bytes
from system.errors import SystemFileError
from system.file_io import FileBatch

BE_CPU = SeriesKey.of(Metric.BE_CPU_USAGE_CORES)
BE_MEMORY = SeriesKey.of(Metric.BE_MEMORY_USAGE_BYTES)
BE_LIMIT = SeriesKey.of(Metric.BE_CPU_LIMIT_CORES)
BE_REQUEST = SeriesKey.of(Metric.BE_CPU_REQUEST_CORES)

# the tier's files, in the batch's order; the cpuset last: a host without the controller
# has none, and the quota alone limits
_USAGE, _MEMORY, _STAT, _QUOTA, _PERIOD, _CPUSET = (
    "cpuacct.usage", "memory.usage_in_bytes", "memory.stat", "cpu.cfs_quota_us", "cpu.cfs_period_us",
    "cpuset.cpus.effective")


def be_request_milli(pod: PodInfo) -> int:
    """The batch-cpu requests of every container of a BE pod, in milli-cores (0: not BE)."""
    if pod.qos.effective is not KoordQoSClass.BE:
        return 0
    return sum(container.spec.requests.get(keys.BATCH_CPU, 0) for container in pod.containers
               if container.spec is not None)


def be_request_cores(pods: tuple[PodInfo, ...]) -> float:
    """Sum of the batch-cpu requests of every container of every BE pod, in cores."""
    return sum(map(be_request_milli, pods)) / 1000.0


def real_limit_cores(cpuset_cpus: int, quota_cores: float | None) -> float:
    """The tighter of the cpuset size and the CFS quota (None = no quota)."""
    if quota_cores is None or quota_cores <= 0:
        return float(cpuset_cpus)
    return min(float(cpuset_cpus), quota_cores) if cpuset_cpus > 0 else quota_cores


class _TierFiles:
    """The besteffort tier's files as one batch, and the figures their texts give."""

    def __init__(self, reader: CgroupReader, directory: str) -> None:
        self.reader = reader
        self.directory = directory
        self.resources = [_USAGE, _MEMORY, _STAT, _QUOTA, _PERIOD]
        paths = [reader.path(resource, directory) for resource in self.resources]  # SystemFileError: unsupported
        try:
            paths.append(reader.path(_CPUSET, directory))
            self.resources.append(_CPUSET)
        except SystemFileError:
            pass
        self.batch = FileBatch(paths)

    def figures(self, texts: list[bytes | None]) -> tuple[int, int, float | None, int] | None:
        """(CPU time in ns, memory working set, quota in CPUs or None, cpuset size or 0);
        None when a file could not be read (the tier is being remade)."""
        read = dict(zip(self.resources, texts))
        if any(read[resource] is None for resource in (_USAGE, _MEMORY, _STAT, _QUOTA, _PERIOD)):
            return None
        reader = self.reader

        def parse(resource: str) -> Any:
            text = read[resource]
            assert text is not None
            return reader.parse(resource, text.decode("ascii", "replace"))

        version = reader.files.version_for(_STAT)
        key = inactive_file_key(version)
        stat = read[_STAT]
        assert stat is not None
        inactive = key_value_of(stat.decode("ascii", "replace"), key)
        memory = working_set_bytes(int(parse(_MEMORY)), {key: inactive}, version)
        quota = CpuMax(parse(_QUOTA), parse(_PERIOD)).cpus
        cpus = len(parse(_CPUSET)) if read.get(_CPUSET) is not None else 0
        return int(parse(_USAGE)), memory, quota, cpus


class BEResourceCollector(RoundCollector):
    name = "beresource"

    def __init__(self, interval: float) -> None:
        super().__init__(interval)
        self._facts: HostFacts | None = None
        self._reader: CgroupReader | None = None
        self._last: tuple[float, int] | None = None
        self._requests: KeptPodSum | None = None  # be_request_milli over the informer's pods
        self._files: _TierFiles | None = None

    def setup(self, ctx: CollectContext) -> None:
        if ctx.reader is None or ctx.facts is None:
            raise CollectorUnsupported("no cgroup hierarchy on this host")
        self._facts, self._reader = ctx.facts, ctx.reader
        if self._requests is not None:
            self._requests.close()
        self._requests = None if ctx.states is None else KeptPodSum(ctx.states, be_request_milli)

    def _be_dir(self) -> str | None:
        """The besteffort tier's dir; None until kubelet made it (the facts look again)."""
        assert self._facts is not None
        return self._facts.qos_dirs().get(QoSTier.BESTEFFORT)

    def _tier_files(self, directory: str) -> _TierFiles | None:
        """The tier's batch, made again when the tier's dir changes; None when a file it
        needs is not supported here."""
        assert self._reader is not None
        if self._files is None or self._files.directory != directory:
            try:
                self._files = _TierFiles(self._reader, directory)
            except SystemFileError:
                return None
        return self._files

    def round(self, now: float) -> Round:
        samples: list[tuple[SeriesKey, float]] = []
        if self._requests is not None:
            samples.append((BE_REQUEST, self._requests.total / 1000.0))
        directory = self._be_dir()
        files = None if directory is None else self._tier_files(directory)
        if files is None:
            return samples
        replies = yield (files.batch,)
        assert replies is not None
        try:
            figures = files.figures(replies[0])
        except SystemFileError:
            figures = None
        if figures is None:
            self._last = None
            return samples
        usage_ns, memory, quota, cpus = figures
        samples.append((BE_MEMORY, float(memory)))
        samples.append((BE_LIMIT, real_limit_cores(cpus, quota)))
        last, self._last = self._last, (now, usage_ns)
        if last is not None:
            cores = cores_from_ns(last[0], last[1], now, usage_ns)
            if cores is not None:
                samples.append((BE_CPU, cores))
        return samples
