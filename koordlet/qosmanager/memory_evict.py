"""BE memory eviction (koordlet resmanager/memory_evict.go, v1.1).

When node memory usage reaches memoryEvictThresholdPercent of capacity, release
capacity * (usage% - lower%) / 100 bytes by evicting best-effort pods: lowest priority
first, then the largest memory user; pods without usage figures after those with, by
name (qosmanager/victims.py). After an eviction nothing happens for the cool-down (4 s).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import structlog

from koordlet.apis.qos import KoordQoSClass
from koordlet.metriccache.api import Metric
from koordlet.qosmanager.eviction import EvictionReason
from koordlet.qosmanager.framework import QoSContext
from koordlet.qosmanager.victims import Candidate, CoolDown, memory_released, order_memory_victims, take_until

log = structlog.get_logger(__name__)

MEMORY_EVICT_COOL_DOWN = 4.0


def memory_to_release(capacity: int, used: int, threshold_percent: int, lower_percent: int) -> int:
    """Bytes to release, 0 below the threshold (integer percent, as koordlet computes it)."""
    if capacity <= 0:
        return 0
    usage_percent = used * 100 // capacity
    if usage_percent < threshold_percent:
        return 0
    return capacity * (usage_percent - lower_percent) // 100


@dataclass(slots=True)
class MemoryEvict:
    interval: float = 1.0
    cool_down: float = MEMORY_EVICT_COOL_DOWN
    name: str = "memory_evict"
    gate: str = "BEMemoryEvict"
    _quiet: CoolDown = field(init=False)

    def __post_init__(self) -> None:
        self._quiet = CoolDown(self.cool_down)

    async def run(self, ctx: QoSContext) -> None:
        now = ctx.clock()
        if self._quiet.active(now):
            return
        strategy = ctx.slo().resource_used_threshold_with_be
        if not strategy.enable:
            return
        capacity = ctx.states.node().capacity.get("memory", 0)
        usage = ctx.usage()
        used = usage.last(Metric.NODE_MEMORY_USAGE_BYTES)
        if used is None or capacity <= 0:
            return
        need = memory_to_release(capacity, int(used), strategy.memory_evict_threshold_percent,
                                 strategy.memory_evict_lower)
        if need <= 0:
            return
        pods = {p.uid: p for p in ctx.states.pods() if p.qos.effective is KoordQoSClass.BE}
        candidates = []
        for pod in pods.values():
            value = usage.last(Metric.POD_MEMORY_USAGE_BYTES, pod.uid)
            candidates.append(Candidate(pod.uid, pod.name, pod.priority,
                                        None if value is None else int(value)))
        victims = take_until(order_memory_victims(candidates), need, memory_released)
        message = (f"node memory usage {int(used) * 100 // capacity}% >= threshold "
                   f"{strategy.memory_evict_threshold_percent}%, release {need} bytes")
        log.info("memory_evict_round", used_bytes=int(used), capacity_bytes=capacity, need_release=need,
                 victims=[v.name for v in victims], reason=message)
        if await ctx.evictions.evict([pods[v.uid] for v in victims], EvictionReason.NODE_MEMORY_USAGE, message):
            self._quiet.evicted(now)
