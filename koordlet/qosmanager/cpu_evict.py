"""BE CPU eviction by satisfaction (koordlet resmanager/cpu_evict.go, v1.1).

satisfaction = BE real limit / BE CPU request. When the window average and the current
value are both below the lower percent, and BE pods use at least the usage threshold of
their real limit, release request * (upper% - satisfaction) milli-cores (the smaller of
the window and current figures) by evicting BE pods: lowest priority first, then the
highest usage / request. Cool-down 20 s after a round that evicted.

The real limit is the BE tier's cpuset size or its CFS quota, whichever is smaller; the
strategy samples it (with the request and usage) each round into its own window.
"""

from __future__ import annotations

import functools
from collections import deque
from dataclasses import dataclass, field
from typing import Sequence

import structlog

from koordlet.metriccache.api import Metric
from koordlet.qosmanager.eviction import EvictionReason
from koordlet.qosmanager.framework import QoSContext
from koordlet.qosmanager.memory_evict import Candidate
from koordlet.statesinformer.model import KoordQoSClass, PodInfo
from koordlet.statesinformer.node_slo import CPU_EVICT_SATISFACTION_LOWER_MAX, CPU_EVICT_SATISFACTION_UPPER_MAX
from system.errors import SystemFileError

log = structlog.get_logger(__name__)

CPU_EVICT_COOL_DOWN = 20.0
COLLECT_INTERVAL = 1.0
BATCH_CPU = "kubernetes.io/batch-cpu"


@dataclass(frozen=True, slots=True)
class BECPUSample:
    at: float
    real_limit_milli: int
    request_milli: int
    used_milli: int


def satisfaction_config_valid(lower: int | None, upper: int | None) -> bool:
    if lower is None or upper is None:
        return False
    return (0 < lower <= CPU_EVICT_SATISFACTION_LOWER_MAX and 0 < upper < CPU_EVICT_SATISFACTION_UPPER_MAX
            and upper >= lower)


def be_usage_high_enough(used_milli: int, real_limit_milli: int, threshold_percent: int) -> bool:
    if real_limit_milli <= 0:
        return False
    if real_limit_milli < 1000:  # under one core the ratio says nothing
        return True
    return used_milli / real_limit_milli >= threshold_percent / 100


def cpu_to_release(request_milli: int, real_limit_milli: int, lower_percent: int, upper_percent: int) -> int:
    if request_milli <= 0:
        return 0
    satisfaction = real_limit_milli / request_milli
    if satisfaction > lower_percent / 100:
        return 0
    gap = upper_percent / 100 - satisfaction
    if gap <= 0:
        return 0
    return int(request_milli * gap)


def _by_priority_then_pressure(a: Candidate, b: Candidate) -> int:
    pa, pb = a.priority or 0, b.priority or 0  # the API server defaults an unset priority to 0
    if pa == pb:
        ra, rb = _pressure(a), _pressure(b)
        return (rb > ra) - (rb < ra)
    return -1 if pa < pb else 1


def _pressure(c: Candidate) -> float:
    return (c.usage or 0) / c.request if c.request > 0 else 0.0


def order_cpu_victims(candidates: Sequence[Candidate]) -> list[Candidate]:
    return sorted(candidates, key=functools.cmp_to_key(_by_priority_then_pressure))


def take_until_request_released(ordered: Sequence[Candidate], need_milli: int) -> list[Candidate]:
    victims, released = [], 0
    for candidate in ordered:
        if released >= need_milli:
            break
        victims.append(candidate)
        released += candidate.request
    return victims


def pod_batch_cpu_request(pod: PodInfo) -> int:
    total = 0
    for container in pod.containers:
        if container.spec is None:
            continue
        request = container.spec.requests.get(BATCH_CPU, container.spec.requests.get("cpu", 0))
        total += max(0, request)
    return total


def release_from_window(samples: Sequence[BECPUSample], window: float, lower: int, upper: int,
                        usage_threshold: int) -> int:
    """Milli-cores to release, or 0: the window needs samples covering a third of it."""
    if not samples or len(samples) * COLLECT_INTERVAL < window / 3:
        return 0
    n = len(samples)
    avg = BECPUSample(samples[-1].at, sum(s.real_limit_milli for s in samples) // n,
                      sum(s.request_milli for s in samples) // n, sum(s.used_milli for s in samples) // n)
    release = 0
    for sample in (avg, samples[-1]):
        if not be_usage_high_enough(sample.used_milli, sample.real_limit_milli, usage_threshold):
            return 0
        value = cpu_to_release(sample.request_milli, sample.real_limit_milli, lower, upper)
        if value <= 0:
            return 0
        release = value if release == 0 else min(release, value)
    return release


@dataclass(slots=True)
class CPUEvict:
    interval: float = 1.0
    cool_down: float = CPU_EVICT_COOL_DOWN
    name: str = "cpu_evict"
    gate: str = "BECPUEvict"
    last_evict: float | None = None
    samples: deque[BECPUSample] = field(default_factory=deque)
    requests: dict[str, tuple[PodInfo, int]] = field(default_factory=dict)

    def real_limit_milli(self, ctx: QoSContext) -> int | None:
        be_dir = ctx.dirs.besteffort
        try:
            limit = len(ctx.reader.cpuset_cpus(be_dir)) * 1000
        except SystemFileError:
            return None
        try:
            quota = ctx.reader.cpu_max(be_dir)
        except SystemFileError:
            return limit
        cpus = quota.cpus
        return limit if cpus is None else min(limit, int(cpus * 1000))

    async def run(self, ctx: QoSContext) -> None:
        strategy = ctx.slo().resource_used_threshold_with_be
        now = ctx.clock()
        window = float(strategy.cpu_evict_time_window_seconds or 0)
        if window <= COLLECT_INTERVAL:
            window = 2 * COLLECT_INTERVAL
        self._sample(ctx, now, window)
        if not strategy.enable or self.last_evict is not None and now - self.last_evict < self.cool_down:
            return
        lower = strategy.cpu_evict_be_satisfaction_lower_percent
        upper = strategy.cpu_evict_be_satisfaction_upper_percent
        if not satisfaction_config_valid(lower, upper):
            return
        assert lower is not None and upper is not None
        release = release_from_window(list(self.samples), window, lower, upper,
                                      strategy.cpu_evict_be_usage_threshold_percent)
        if release <= 0:
            return
        usage = ctx.usage()
        pods = {p.uid: p for p in ctx.states.pods() if p.qos.effective is KoordQoSClass.BE}
        candidates = []
        for pod in pods.values():
            used = usage.last(Metric.POD_CPU_USAGE_CORES, pod.uid)
            candidates.append(Candidate(pod.uid, pod.name, pod.priority,
                                        None if used is None else int(used * 1000),
                                        pod_batch_cpu_request(pod)))
        victims = take_until_request_released(order_cpu_victims(candidates), release)
        last = self.samples[-1]
        message = (f"BE CPU satisfaction {last.real_limit_milli}/{last.request_milli} below "
                   f"{lower}%, release {release} milli-cores")
        log.info("cpu_evict_round", release_milli=release, victims=[v.name for v in victims], reason=message)
        if await ctx.evictions.evict([pods[v.uid] for v in victims], EvictionReason.BE_CPU_SATISFACTION,
                                     message):
            self.last_evict = now

    def _sample(self, ctx: QoSContext, now: float, window: float) -> None:
        while self.samples and now - self.samples[0].at > window:
            self.samples.popleft()
        limit = self.real_limit_milli(ctx)
        if limit is None:
            return
        be_pods = [p for p in ctx.states.pods() if p.qos.effective is KoordQoSClass.BE]
        usage = ctx.usage()
        used = usage.last(Metric.BE_CPU_USAGE_CORES)
        if used is None:
            values = [usage.last(Metric.POD_CPU_USAGE_CORES, p.uid) for p in be_pods]
            known = [v for v in values if v is not None]
            if not known:
                return
            used = sum(known)
        requests = {}
        for p in be_pods:  # a pod's spec is frozen: its request is computed once
            known = self.requests.get(p.uid)
            requests[p.uid] = known if known is not None and known[0] is p else (p, pod_batch_cpu_request(p))
        self.requests = requests
        request = sum(r for _, r in requests.values())
        self.samples.append(BECPUSample(now, limit, request, int(used * 1000)))
