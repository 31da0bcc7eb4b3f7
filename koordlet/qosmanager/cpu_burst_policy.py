"""CPU burst decisions (koordlet resmanager/cpu_burst.go, v1.1): pure functions and the
token bucket.

Static burst: cfs_burst_us = limit cores * cpuBurstPercent / 100 * 100000.
Dynamic quota: a throttled container's quota grows x1.2 up to base * cfsQuotaBurstPercent,
shrinks x0.8 (never below base) when the share pool is overloaded or its token bucket is
empty; the node's share pool (all CPUs minus LSR requests, usage minus LSR and BE usage)
is overloaded at >= sharePoolThresholdPercent, cooling at >= 90 % of that, else idle.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from enum import Enum

CFS_PERIOD_US = 100_000
SCALE_UP_STEP = 1.2
SCALE_DOWN_STEP = 0.8
SHARE_POOL_COOLING_RATIO = 0.9
CONSUME_TOKENS_AT_PERCENT = 100
SAVE_TOKENS_BELOW_PERCENT = 60


class NodeBurstState(Enum):
    OVERLOAD = "overload"
    COOLING = "cooling"
    IDLE = "idle"
    UNKNOWN = "unknown"


class CFSOperation(Enum):
    SCALE_UP = "scale_up"
    SCALE_DOWN = "scale_down"
    REMAIN = "remain"
    RESET = "reset"


def static_burst_us(limit_milli: int, cpu_burst_percent: int) -> int:
    if limit_milli <= 0:
        return 0
    return int(limit_milli / 1000 * cpu_burst_percent / 100 * CFS_PERIOD_US)


def node_burst_state(node_cpus: int, node_used_cores: float, lsr_request_cores: float,
                     lsr_and_be_used_cores: float, threshold_percent: int) -> NodeBurstState:
    if node_cpus <= 0:  # the node's CPUs are not known: hold every quota (koordlet: unknown)
        return NodeBurstState.UNKNOWN
    pool_total = node_cpus - lsr_request_cores
    pool_used = node_used_cores - lsr_and_be_used_cores
    ratio = pool_used / pool_total if pool_total > 0 else 1.0
    threshold = threshold_percent / 100
    if ratio >= threshold:
        return NodeBurstState.OVERLOAD
    if ratio >= threshold * SHARE_POOL_COOLING_RATIO:
        return NodeBurstState.COOLING
    return NodeBurstState.IDLE


def container_operation(cfs_quota_burst_enabled: bool, allowed_by_limiter: bool,
                        throttled_ratio: float | None) -> CFSOperation:
    if not cfs_quota_burst_enabled:
        return CFSOperation.RESET
    if not allowed_by_limiter:
        return CFSOperation.SCALE_DOWN
    if throttled_ratio is None:
        return CFSOperation.REMAIN
    return CFSOperation.SCALE_UP if throttled_ratio > 0 else CFSOperation.REMAIN


def adjust_by_node(state: NodeBurstState, operation: CFSOperation) -> CFSOperation:
    if state is NodeBurstState.OVERLOAD and operation in (CFSOperation.SCALE_UP, CFSOperation.REMAIN):
        return CFSOperation.SCALE_DOWN
    if state in (NodeBurstState.COOLING, NodeBurstState.UNKNOWN) and operation is CFSOperation.SCALE_UP:
        return CFSOperation.REMAIN
    return operation


def target_quota(operation: CFSOperation, current: int, base: int, burst_percent: int) -> int:
    ceiling = int(base * burst_percent / 100) if burst_percent > 100 else base
    target = current
    if operation is CFSOperation.SCALE_UP:
        target = int(current * SCALE_UP_STEP)
    elif operation is CFSOperation.SCALE_DOWN:
        target = int(current * SCALE_DOWN_STEP)
    elif operation is CFSOperation.RESET:
        target = base
    return max(base, min(target, ceiling))


@dataclass(slots=True)
class BurstLimiter:
    """A container's token bucket: capacity period * (pct - 100) percent-seconds; running at
    >= 100 % of its base quota spends tokens, under 60 % saves them."""

    capacity: int
    tokens: float
    last: float
    expire_after: float

    @classmethod
    def new(cls, period_seconds: int, burst_percent: int, now: float,
            rng: random.Random | None = None) -> BurstLimiter:
        capacity = period_seconds * (burst_percent - 100)
        start = (rng or random.Random()).random() / 2  # koordlet starts buckets at a random fill < 50 %
        return cls(capacity, capacity * start, now, 2.0 * period_seconds)

    def allow(self, now: float, usage_percent: int) -> bool:
        elapsed = now - self.last  # koordlet truncates to whole seconds; a 0.99 s round would count 0
        if usage_percent >= CONSUME_TOKENS_AT_PERCENT:
            self.tokens -= (usage_percent - 100) * elapsed
        elif usage_percent < SAVE_TOKENS_BELOW_PERCENT:
            self.tokens += (100 - usage_percent) * elapsed
        self.tokens = max(-self.capacity, min(self.tokens, self.capacity))
        self.last = now
        return self.tokens > 0

    def expired(self, now: float) -> bool:
        return now - self.last > self.expire_after
