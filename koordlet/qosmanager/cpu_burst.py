"""CPU burst: cpu.cfs_burst_us (v2 cpu.max.burst) for LS containers with a CPU limit, and
dynamic CFS quota scaling of throttled containers while the node's share pool is idle.

Acts on pods whose class is LS (or none, i.e. treated as LS) with running containers.
Quota changes go to the container and its pod as one levelled update (the pod's quota
grows first and shrinks last on cgroup v1).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import structlog

from koordlet.metriccache.api import Metric
from koordlet.qosmanager.cpu_burst_policy import (
    CFS_PERIOD_US, BurstLimiter, CFSOperation, NodeBurstState, adjust_by_node, container_operation,
    node_burst_state, static_burst_us, target_quota,
)
from koordlet.qosmanager.framework import QoSContext
from koordlet.statesinformer.model import ContainerInfo, KoordQoSClass, PodInfo
from koordlet.statesinformer.node_slo import CPUBurstStrategy
from resourceexecutor import Outcome
from system.errors import SystemFileError

log = structlog.get_logger(__name__)

NAME = "cpu_burst"
BURSTABLE = (KoordQoSClass.LS, KoordQoSClass.NONE)
STATE_WINDOW = 10.0  # koordlet: min(5 reconcile intervals, 10 s)


def container_limit_milli(container: ContainerInfo) -> int:
    if container.spec is not None and container.spec.limits.get("cpu", 0) > 0:
        return container.spec.limits["cpu"]
    linux = container.linux
    if linux.cpu_quota and linux.cpu_quota > 0 and linux.cpu_period:
        return linux.cpu_quota * 1000 // linux.cpu_period
    return 0


@dataclass(slots=True)
class CPUBurst:
    interval: float = 1.0
    name: str = NAME
    gate: str = "CPUBurst"
    limiters: dict[str, BurstLimiter] = field(default_factory=dict)
    rng: random.Random = field(default_factory=random.Random)

    async def run(self, ctx: QoSContext) -> None:
        cfg = ctx.slo().cpu_burst_strategy
        pods = [p for p in ctx.states.pods() if p.qos.effective in BURSTABLE and p.running_containers]
        state = self.node_state(ctx, cfg)
        now = ctx.clock()
        usage = ctx.usage()
        burst_updaters = []
        for pod in pods:
            burst_updaters += self._burst_updaters(ctx, cfg, pod)
            for container in pod.running_containers:
                self._scale_quota(ctx, cfg, pod, container, state, now, usage)
        if burst_updaters:
            result = ctx.executor.update_batch(burst_updaters)
            if result.writes:
                ctx.metrics.action(NAME, "cfs_burst", result.writes)
                log.info("cpu_burst_set", writes=result.writes, policy=cfg.policy.value,
                         cpu_burst_percent=cfg.cpu_burst_percent, reason="cpuBurstStrategy")
        for key in [k for k, limiter in self.limiters.items() if limiter.expired(now)]:
            del self.limiters[key]

    def node_state(self, ctx: QoSContext, cfg: CPUBurstStrategy) -> NodeBurstState:
        usage = ctx.usage()
        node_used = usage.average(Metric.NODE_CPU_USAGE_CORES, STATE_WINDOW)
        if node_used is None:
            return NodeBurstState.UNKNOWN
        cpus = len(ctx.topology.cpus) if ctx.topology is not None else \
            ctx.states.node().capacity.get("cpu", 0) // 1000
        lsr_request, lsr_be_used = 0.0, 0.0
        for pod in ctx.states.pods():
            cls = pod.qos.effective
            if cls is KoordQoSClass.LSR:
                lsr_request += sum((c.spec.requests.get("cpu", 0) if c.spec else 0) for c in pod.containers) / 1000
            if cls in (KoordQoSClass.LSR, KoordQoSClass.BE):
                used = usage.average(Metric.POD_CPU_USAGE_CORES, STATE_WINDOW, pod.uid)
                lsr_be_used += used[0] if used else 0.0
        return node_burst_state(cpus, node_used[0], lsr_request, lsr_be_used, cfg.share_pool_threshold_percent)

    def _burst_updaters(self, ctx: QoSContext, cfg: CPUBurstStrategy, pod: PodInfo) -> list:
        updaters, pod_total = [], 0
        for container in pod.running_containers:
            if not container.cgroup_dir:
                continue
            value = static_burst_us(container_limit_milli(container), cfg.cpu_burst_percent) \
                if cfg.policy.cpu_burst else 0
            pod_total += value
            updaters.append(ctx.executor.updater("cpu.cfs_burst_us", container.cgroup_dir,
                                                 self._within_quota(ctx, container.cgroup_dir, value)))
        if updaters and pod.cgroup_parent:
            updaters.append(ctx.executor.updater("cpu.cfs_burst_us", pod.cgroup_parent,
                                                 self._within_quota(ctx, pod.cgroup_parent, pod_total)))
        return updaters

    @staticmethod
    def _within_quota(ctx: QoSContext, cgroup_dir: str, burst: int) -> int:
        """The kernel refuses a burst above the cgroup's quota (EINVAL from tg_set_cfs_bandwidth);
        koordlet v1.1 wrote 1000 % of the limit and failed on such kernels. Clamp to the quota."""
        if burst <= 0:
            return burst
        try:
            quota = int(ctx.reader.value("cpu.cfs_quota_us", cgroup_dir))
        except SystemFileError:
            return burst
        return min(burst, quota) if quota > 0 else burst

    def _allowed(self, cfg: CPUBurstStrategy, container: ContainerInfo, now: float, usage) -> bool:
        if cfg.cfs_quota_burst_period_seconds < 0:
            return True
        if cfg.cfs_quota_burst_percent < 100:
            return False
        limit = container_limit_milli(container) / 1000
        used = usage.last(Metric.CONTAINER_CPU_USAGE_CORES, container.pod_uid, container.id)
        used = limit if used is None else used
        limiter = self.limiters.get(container.id)
        capacity = cfg.cfs_quota_burst_period_seconds * (cfg.cfs_quota_burst_percent - 100)
        if limiter is None or limiter.capacity != capacity:
            limiter = BurstLimiter.new(cfg.cfs_quota_burst_period_seconds, cfg.cfs_quota_burst_percent,
                                       now, self.rng)
            self.limiters[container.id] = limiter
        return limiter.allow(now, int(used / limit * 100) if limit > 0 else 0)

    def _scale_quota(self, ctx: QoSContext, cfg: CPUBurstStrategy, pod: PodInfo, container: ContainerInfo,
                     state: NodeBurstState, now: float, usage) -> None:
        base = container_limit_milli(container) * CFS_PERIOD_US // 1000
        if base <= 0 or not container.cgroup_dir:
            return
        try:
            current = int(ctx.reader.value("cpu.cfs_quota_us", container.cgroup_dir))
            pod_quota = int(ctx.reader.value("cpu.cfs_quota_us", pod.cgroup_parent))
        except SystemFileError:
            return
        if current <= 0:
            return
        throttled = usage.last(Metric.CONTAINER_CPU_THROTTLED_RATIO, container.pod_uid, container.id)
        wanted = container_operation(cfg.policy.cfs_quota_burst, self._allowed(cfg, container, now, usage),
                                     throttled)
        operation = adjust_by_node(state, wanted)
        target = target_quota(operation, current, base, cfg.cfs_quota_burst_percent)
        if target == current:
            return
        delta = target - current
        levels = [[], [ctx.executor.updater("cpu.cfs_quota_us", container.cgroup_dir, target)]]
        if pod_quota > 0:
            levels[0].append(ctx.executor.updater("cpu.cfs_quota_us", pod.cgroup_parent, pod_quota + delta))
        result = ctx.executor.update_levels(levels, use_cache=False)
        if result.outcomes and result.outcomes[-1] is Outcome.WRITTEN:
            action = operation.value if operation is not CFSOperation.REMAIN else "adjust"
            ctx.metrics.action(NAME, action)
            log.info("cfs_quota_scaled", pod=f"{pod.namespace}/{pod.name}", container=container.name,
                     operation=operation.value, quota_us=target, previous_us=current, node_state=state.value,
                     reason="throttled" if wanted is CFSOperation.SCALE_UP else wanted.value)
