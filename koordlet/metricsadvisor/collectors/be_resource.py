"""Best-effort CPU: usage and real limit of the besteffort QoS cgroup, and the sum of the
BE pods' batch-cpu requests (koordlet's beresource collector), every 1 s.

Real limit (koordlet getBECPURealMilliLimit): the CPUs of the tier's cpuset, lowered to
quota/period when a CFS quota is set.
"""

from __future__ import annotations

from koordlet.apis import keys
from koordlet.apis.qos import KoordQoSClass
from koordlet.metriccache.api import Metric, SeriesKey
from koordlet.metricsadvisor.framework import CollectContext, CollectorUnsupported, PeriodicCollector
from koordlet.metricsadvisor.rates import cores_from_ns
from koordlet.statesinformer.api import StatesInformer
from koordlet.statesinformer.model import PodInfo
from koordlet.util.host_facts import HostFacts
from system.cgroup_layout import QoSTier
from system.cgroup_readers import CgroupReader
from system.errors import SystemFileError

BE_CPU = SeriesKey.of(Metric.BE_CPU_USAGE_CORES)
BE_MEMORY = SeriesKey.of(Metric.BE_MEMORY_USAGE_BYTES)
BE_LIMIT = SeriesKey.of(Metric.BE_CPU_LIMIT_CORES)
BE_REQUEST = SeriesKey.of(Metric.BE_CPU_REQUEST_CORES)


def be_request_cores(pods: tuple[PodInfo, ...]) -> float:
    """Sum of the batch-cpu requests of every container of every BE pod, in cores."""
    milli = 0
    for pod in pods:
        if pod.qos.effective is not KoordQoSClass.BE:
            continue
        for container in pod.containers:
            if container.spec is not None:
                milli += container.spec.requests.get(keys.BATCH_CPU, 0)
    return milli / 1000.0


def real_limit_cores(cpuset_cpus: int, quota_cores: float | None) -> float:
    """The tighter of the cpuset size and the CFS quota (None = no quota)."""
    if quota_cores is None or quota_cores <= 0:
        return float(cpuset_cpus)
    return min(float(cpuset_cpus), quota_cores) if cpuset_cpus > 0 else quota_cores


class BEResourceCollector(PeriodicCollector):
    name = "beresource"

    def __init__(self, interval: float) -> None:
        super().__init__(interval)
        self._facts: HostFacts | None = None
        self._reader: CgroupReader | None = None
        self._states: StatesInformer | None = None
        self._last: tuple[float, int] | None = None
        self._requests: tuple[tuple[PodInfo, ...], float] | None = None  # (the informer's listing, its sum)

    def setup(self, ctx: CollectContext) -> None:
        if ctx.reader is None or ctx.facts is None:
            raise CollectorUnsupported("no cgroup hierarchy on this host")
        self._facts, self._reader, self._states = ctx.facts, ctx.reader, ctx.states

    def _be_dir(self) -> str | None:
        """The besteffort tier's dir; None until kubelet made it (the facts look again)."""
        assert self._facts is not None
        return self._facts.qos_dirs().get(QoSTier.BESTEFFORT)

    def _request_cores(self, pods: tuple[PodInfo, ...]) -> float:
        """be_request_cores, summed again only when the informer's listing changed (it
        hands out the same tuple while no pod changed): 2.7 % of the daemon's samples
        at 1,000 pods when summed every second."""
        known = self._requests
        if known is None or known[0] is not pods:
            known = self._requests = (pods, be_request_cores(pods))
        return known[1]

    def collect(self, now: float) -> list[tuple[SeriesKey, float]]:
        assert self._reader is not None
        samples: list[tuple[SeriesKey, float]] = []
        if self._states is not None:
            samples.append((BE_REQUEST, self._request_cores(self._states.pods())))
        directory = self._be_dir()
        if directory is None:
            return samples
        try:
            usage_ns = self._reader.cpu_usage_ns(directory)
            memory = self._reader.memory_working_set_bytes(directory)
            quota = self._reader.cpu_max(directory).cpus
        except SystemFileError:
            self._last = None
            return samples
        try:
            cpus = len(self._reader.cpuset_cpus(directory, effective=True))
        except SystemFileError:  # no cpuset controller here: the quota alone limits
            cpus = 0
        samples.append((BE_MEMORY, float(memory)))
        samples.append((BE_LIMIT, real_limit_cores(cpus, quota)))
        last, self._last = self._last, (now, usage_ns)
        if last is not None:
            cores = cores_from_ns(last[0], last[1], now, usage_ns)
            if cores is not None:
                samples.append((BE_CPU, cores))
        return samples
