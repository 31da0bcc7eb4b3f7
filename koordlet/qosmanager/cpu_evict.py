"""BE CPU eviction by satisfaction (koordlet resmanager/cpu_evict.go, v1.1).

satisfaction = BE real limit / BE CPU request. When the window average and the current
value are both below the lower percent, and BE pods use at least the usage threshold of
their real limit, release request * (upper% - satisfaction) milli-cores (the smaller of
the window and current figures) by evicting BE pods: lowest priority first, then the
highest usage / request. Cool-down 20 s after a round that evicted.

The real limit (the BE tier's cpuset size or CFS quota, whichever is smaller), the BE
request (batch-cpu) and BE usage come from the metric cache, as the BE collector reports them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import structlog

from koordlet.apis import keys
from koordlet.apis.qos import KoordQoSClass
from koordlet.metriccache.api import Metric
from koordlet.qosmanager.eviction import EvictionReason
from koordlet.qosmanager.framework import QoSContext
from koordlet.qosmanager.usage import UsageView
from koordlet.qosmanager.victims import Candidate, CoolDown, order_cpu_victims, request_released, take_until
from koordlet.slo.node_slo import CPU_EVICT_SATISFACTION_LOWER_MAX, CPU_EVICT_SATISFACTION_UPPER_MAX
from koordlet.statesinformer.model import PodInfo

log = structlog.get_logger(__name__)

CPU_EVICT_COOL_DOWN = 20.0
COLLECT_INTERVAL = 1.0
# What the BE collector reports each second, in the order of BECPUSample's fields.
BE_SERIES = (Metric.BE_CPU_LIMIT_CORES, Metric.BE_CPU_REQUEST_CORES, Metric.BE_CPU_USAGE_CORES)


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


def pod_batch_cpu_request(pod: PodInfo) -> int:
    total = 0
    for container in pod.containers:
        if container.spec is None:
            continue
        request = container.spec.requests.get(keys.BATCH_CPU, container.spec.requests.get("cpu", 0))
        total += max(0, request)
    return total


def release_for(window_avg: BECPUSample, window_count: int, current: BECPUSample, window: float,
                lower: int, upper: int, usage_threshold: int) -> int:
    """Milli-cores to release, or 0. The window's samples must cover a third of it; both
    the window average and the current figures must call for a release; the smaller wins."""
    if window_count * COLLECT_INTERVAL < window / 3:
        return 0
    release = 0
    for sample in (window_avg, current):
        if not be_usage_high_enough(sample.used_milli, sample.real_limit_milli, usage_threshold):
            return 0
        value = cpu_to_release(sample.request_milli, sample.real_limit_milli, lower, upper)
        if value <= 0:
            return 0
        release = value if release == 0 else min(release, value)
    return release


def be_figures(usage: UsageView, window: float, now: float) -> tuple[BECPUSample, int, BECPUSample] | None:
    """(window average, its sample count, current) of the BE series, or None if any is missing."""
    averages = [usage.average(metric, window) for metric in BE_SERIES]
    current = [usage.last(metric) for metric in BE_SERIES]
    if any(a is None for a in averages) or any(c is None for c in current):
        return None
    limit, request, used = (a for a in averages if a is not None)
    c_limit, c_request, c_used = (c for c in current if c is not None)
    milli = lambda cores: int(cores * 1000)  # noqa: E731
    return (BECPUSample(now, milli(limit[0]), milli(request[0]), milli(used[0])),
            min(limit[1], request[1], used[1]),
            BECPUSample(now, milli(c_limit), milli(c_request), milli(c_used)))


@dataclass(slots=True)
class CPUEvict:
    interval: float = 1.0
    cool_down: float = CPU_EVICT_COOL_DOWN
    name: str = "cpu_evict"
    gate: str = "BECPUEvict"
    _quiet: CoolDown = field(init=False)

    def __post_init__(self) -> None:
        self._quiet = CoolDown(self.cool_down)

    async def run(self, ctx: QoSContext) -> None:
        strategy = ctx.slo().resource_used_threshold_with_be
        now = ctx.clock()
        if not strategy.enable or self._quiet.active(now):
            return
        lower = strategy.cpu_evict_be_satisfaction_lower_percent
        upper = strategy.cpu_evict_be_satisfaction_upper_percent
        if not satisfaction_config_valid(lower, upper):
            return
        assert lower is not None and upper is not None
        window = float(strategy.cpu_evict_time_window_seconds or 0)
        if window <= COLLECT_INTERVAL:
            window = 2 * COLLECT_INTERVAL
        usage = ctx.usage()
        figures = be_figures(usage, window, now)
        if figures is None:
            return  # the BE collector has not reported yet
        avg, count, last = figures
        release = release_for(avg, count, last, window, lower, upper,
                              strategy.cpu_evict_be_usage_threshold_percent)
        if release <= 0:
            return
        pods = {p.uid: p for p in ctx.states.pods() if p.qos.effective is KoordQoSClass.BE}
        candidates = []
        for pod in pods.values():
            used = usage.last(Metric.POD_CPU_USAGE_CORES, pod.uid)
            candidates.append(Candidate(pod.uid, pod.name, pod.priority,
                                        None if used is None else int(used * 1000),
                                        pod_batch_cpu_request(pod)))
        victims = take_until(order_cpu_victims(candidates), release, request_released)
        message = (f"BE CPU satisfaction {last.real_limit_milli}/{last.request_milli} below "
                   f"{lower}%, release {release} milli-cores")
        log.info("cpu_evict_round", release_milli=release, victims=[v.name for v in victims], reason=message)
        if await ctx.evictions.evict([pods[v.uid] for v in victims], EvictionReason.BE_CPU_SATISFACTION,
                                     message):
            self._quiet.evicted(now)
