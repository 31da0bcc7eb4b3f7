"""CPU burst: cpu.cfs_burst_us (v2 cpu.max.burst) for LS containers with a CPU limit, and
dynamic CFS quota scaling of throttled containers while the node's share pool is idle.

Acts on pods whose class is LS (or none, i.e. treated as LS) with running containers.
Quota changes go to the container and its pod as one levelled update (the pod's quota
grows first and shrinks last on cgroup v1).
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field
from itertools import chain, repeat
from typing import NamedTuple

import structlog

from koordlet.apis.qos import KoordQoSClass
from koordlet.metriccache.api import Metric, SeriesKey
from koordlet.qosmanager.cpu_burst_policy import (
    CFS_PERIOD_US,
    BurstLimiter,
    CFSOperation,
    NodeBurstState,
    adjust_by_node,
    container_operation,
    node_burst_state,
    static_burst_us,
    target_quota,
)
from koordlet.qosmanager.framework import QoSContext
from koordlet.qosmanager.pod_changes import PodChanges
from koordlet.slo.node_slo import CPUBurstStrategy, NodeSLOError
from koordlet.slo.spec import POD_CPU_BURST_ANNOTATION, pod_cpu_burst
from koordlet.statesinformer.model import ContainerInfo, PodInfo
from koordlet.statesinformer.pod_memo import PodMemo
from koordlet.util.steps import PODS_PER_STEP
from resourceexecutor import Outcome
from system.errors import SystemFileError

log = structlog.get_logger(__name__)

NAME = "cpu_burst"
BURSTABLE = (KoordQoSClass.LS, KoordQoSClass.NONE)
STATE_WINDOW = 10.0  # koordlet: min(5 reconcile intervals, 10 s)
_QUOTA = "cpu.cfs_quota_us"


def container_limit_milli(container: ContainerInfo) -> int:
    if container.spec is not None and container.spec.limits.get("cpu", 0) > 0:
        return container.spec.limits["cpu"]
    linux = container.linux
    if linux.cpu_quota and linux.cpu_quota > 0 and linux.cpu_period:
        return linux.cpu_quota * 1000 // linux.cpu_period
    return 0


def limited(cfg: CPUBurstStrategy) -> bool:
    """Whether quota scaling under these settings goes through the token bucket."""
    return cfg.cfs_quota_burst_period_seconds >= 0 and cfg.cfs_quota_burst_percent >= 100


@dataclass(frozen=True, slots=True)
class Scalable:
    """A running container whose quota the strategy may scale, with its pod's settings."""

    pod: PodInfo
    container: ContainerInfo
    cfg: CPUBurstStrategy
    base: int  # its quota at its CPU limit, microseconds a period
    limit_cores: float
    id: str  # the container's
    scales: bool  # its settings scale quotas (cfg.policy.cfs_quota_burst)
    limited: bool  # through a token bucket


@dataclass(frozen=True, slots=True)
class BurstPlan:
    """What quota scaling derives from the pod set and the settings, built again only when
    either changes: a round then reads usage in bulk and walks this instead of every pod."""

    pods: tuple[PodInfo, ...]
    cfg: CPUBurstStrategy
    containers: tuple[Scalable, ...]
    throttled_keys: tuple[SeriesKey, ...]  # in `containers` order
    usage_keys: tuple[SeriesKey, ...]
    running: frozenset[str]  # ids of the running containers of burstable pods
    lsr_request_cores: float
    # (uid, is BE) of the LSR and BE pods, in pod order: whose usage the node's state subtracts
    # (BE pods' only when the BE tier's own series is missing)
    state_pods: tuple[tuple[str, bool], ...]
    all_limited: bool  # every container's settings run its token bucket (so each round touches it)
    any_limited: bool  # some container's do (only token buckets read CPU usage)


class _PodPart(NamedTuple):
    """One pod's share of a BurstPlan (kept per pod object: PodMemo)."""

    containers: tuple[Scalable, ...]
    throttled_keys: tuple[SeriesKey, ...]
    usage_keys: tuple[SeriesKey, ...]
    running: tuple[str, ...]
    lsr_request_cores: float
    state: tuple[str, bool] | None  # its entry in BurstPlan.state_pods


@dataclass(slots=True)
class CPUBurst:
    interval: float = 1.0
    name: str = NAME
    gate: str = "CPUBurst"
    limiters: dict[str, BurstLimiter] = field(default_factory=dict)
    scaled: set[str] = field(default_factory=set)  # containers whose quota we moved off its base
    seen: set[str] = field(default_factory=set)
    # static burst: new or changed pods each round, every pod once a minute
    changes: PodChanges = field(default_factory=PodChanges)
    # uid -> (annotation text, node settings, the pod's settings)
    pod_settings: dict[str, tuple[str | None, CPUBurstStrategy, CPUBurstStrategy]] = field(default_factory=dict)
    rng: random.Random = field(default_factory=random.Random)  # token buckets start at a random fill
    plan: BurstPlan | None = None
    pod_parts: PodMemo[_PodPart] = field(init=False)  # each pod's part of the plan, under parts_cfg
    parts_cfg: CPUBurstStrategy = field(default_factory=CPUBurstStrategy)

    def __post_init__(self) -> None:
        self.pod_parts = PodMemo(self._pod_part)

    def settings_for(self, node_cfg: CPUBurstStrategy, pod: PodInfo) -> CPUBurstStrategy:
        """The node's settings, or the pod's koordinator.sh/cpuBurst override (parsed once per text)."""
        text = pod.annotations.get(POD_CPU_BURST_ANNOTATION)
        if text is None:
            return node_cfg
        known = self.pod_settings.get(pod.uid)
        if known is not None and known[0] == text and known[1] == node_cfg:
            return known[2]
        try:
            cfg = pod_cpu_burst(node_cfg, text)
        except NodeSLOError as exc:
            log.warning("pod_cpu_burst_annotation_invalid", pod=f"{pod.namespace}/{pod.name}", field=exc.field,
                        error=str(exc))
            cfg = node_cfg
        if len(self.pod_settings) > 4096:
            self.pod_settings.clear()
        self.pod_settings[pod.uid] = (text, node_cfg, cfg)
        return cfg

    async def run(self, ctx: QoSContext) -> None:
        cfg = ctx.slo().cpu_burst_strategy
        now = ctx.clock()
        all_pods = ctx.states.pods()
        quotas = QuotaReads(ctx)
        changed, full = self.changes.select(all_pods, now, cfg)
        burstable = [pod for pod in changed if pod.qos.effective in BURSTABLE and pod.running_containers]
        writes = 0
        # PODS_PER_STEP pods a batch, the loop given back in between: the minute's full pass
        # re-reads every file (2,000 containers held the loop 52-57 ms in one batch)
        # (the files are read and written in the executor's IO thread: an open() of a cgroup
        # file waited up to 34 ms in the kernel at N = 1,000 while the runtime made and removed cgroups)
        for start in range(0, len(burstable), PODS_PER_STEP):
            if start:
                await asyncio.sleep(0)
            chunk = burstable[start:start + PODS_PER_STEP]
            await quotas.load([d for pod in chunk for d in [c.cgroup_dir for c in pod.running_containers]
                               + [pod.cgroup_parent] if d])
            burst_updaters = [u for pod in chunk
                              for u in self._burst_updaters(ctx, self.settings_for(cfg, pod), pod, quotas)]
            if burst_updaters:
                writes += (await ctx.executor.apply_batch(burst_updaters, use_cache=not full)).writes
        if writes:
            ctx.metrics.action(NAME, "cfs_burst", writes)
            log.info("cpu_burst_set", writes=writes, policy=cfg.policy.value,
                     cpu_burst_percent=cfg.cpu_burst_percent, reason="cpuBurstStrategy")
        if cfg.policy.cfs_quota_burst or self.scaled or not self.seen or self.pod_settings:
            await self._scale_quotas(ctx, cfg, self._plan(cfg, all_pods), now, quotas)
        if full:
            ctx.metrics.forget_containers({c.id for p in all_pods for c in p.containers})

    def _plan(self, cfg: CPUBurstStrategy, all_pods: tuple[PodInfo, ...]) -> BurstPlan:
        plan = self.plan
        if plan is not None and plan.pods is all_pods and (plan.cfg is cfg or plan.cfg == cfg):
            return plan
        if self.parts_cfg != cfg:
            self.pod_parts.clear()
            self.parts_cfg = cfg
        parts = self.pod_parts.values(all_pods)
        containers = tuple(chain.from_iterable(part.containers for part in parts))
        plan = self.plan = BurstPlan(
            all_pods, cfg, containers,
            tuple(chain.from_iterable(part.throttled_keys for part in parts)),
            tuple(chain.from_iterable(part.usage_keys for part in parts)),
            frozenset(chain.from_iterable(part.running for part in parts)),
            sum(part.lsr_request_cores for part in parts),
            tuple(part.state for part in parts if part.state is not None),
            all(c.limited for c in containers), any(c.limited for c in containers))
        return plan

    def _pod_part(self, pod: PodInfo) -> _PodPart:
        """What the plan takes from one pod, under the settings the parts are kept for."""
        cfg = self.parts_cfg
        cls = pod.qos.effective
        lsr_request, state = 0.0, None
        if cls is KoordQoSClass.LSR:
            lsr_request = sum((c.spec.requests.get("cpu", 0) if c.spec else 0) for c in pod.containers) / 1000
            state = (pod.uid, False)
        elif cls is KoordQoSClass.BE:
            state = (pod.uid, True)
        if cls not in BURSTABLE or not pod.running_containers:
            return _PodPart((), (), (), (), lsr_request, state)
        pod_cfg = self.settings_for(cfg, pod)
        containers = []
        for container in pod.running_containers:
            limit = container_limit_milli(container)
            base = limit * CFS_PERIOD_US // 1000
            if base > 0 and container.cgroup_dir:
                containers.append(Scalable(pod, container, pod_cfg, base, limit / 1000, container.id,
                                           pod_cfg.policy.cfs_quota_burst, limited(pod_cfg)))
        return _PodPart(
            tuple(containers),
            tuple(SeriesKey(Metric.CONTAINER_CPU_THROTTLED_RATIO, pod.uid, c.id) for c in containers),
            tuple(SeriesKey(Metric.CONTAINER_CPU_USAGE_CORES, pod.uid, c.id) for c in containers),
            tuple(c.id for c in pod.running_containers), lsr_request, state)

    async def _scale_quotas(self, ctx: QoSContext, cfg: CPUBurstStrategy, plan: BurstPlan, now: float,
                            quotas: QuotaReads) -> None:
        usage = ctx.usage()
        throttled_all = usage.last_of(plan.throttled_keys, usage.container_max_age)
        used_all = usage.last_of(plan.usage_keys, usage.container_max_age) if plan.any_limited else repeat(None)
        seen, scaled = self.seen, self.scaled
        state = None
        for entry, throttled, used in zip(plan.containers, throttled_all, used_all):
            allowed = self._allowed(entry, now, used) if entry.limited else \
                entry.cfg.cfs_quota_burst_period_seconds < 0
            if not (entry.scales and allowed and throttled is not None and throttled > 0) and \
                    entry.id in seen and entry.id not in scaled:
                continue  # it sits at its base quota and would not scale up: nothing to do, whatever the node
            if state is None:
                state = self.node_state(ctx, cfg, plan)
            await self._scale_quota(ctx, entry, state, now, throttled, allowed, quotas)
        if len(self.limiters) > len(plan.containers) or not plan.all_limited:  # else each was just touched
            for key in [k for k, limiter in self.limiters.items() if limiter.expired(now)]:
                del self.limiters[key]
        if len(seen) > 4 * max(1, len(plan.running)):
            seen &= plan.running
            scaled &= plan.running

    def node_state(self, ctx: QoSContext, cfg: CPUBurstStrategy, plan: BurstPlan) -> NodeBurstState:
        usage = ctx.usage()
        node_used = usage.average(Metric.NODE_CPU_USAGE_CORES, STATE_WINDOW)
        if node_used is None:
            return NodeBurstState.UNKNOWN
        cpus = len(ctx.topology.cpus) if ctx.topology is not None else \
            ctx.states.node().capacity.get("cpu", 0) // 1000
        be_total = usage.average(Metric.BE_CPU_USAGE_CORES, STATE_WINDOW)  # one series instead of every BE pod
        lsr_be_used = be_total[0] if be_total else 0.0
        for uid, is_be in plan.state_pods:
            if is_be and be_total is not None:
                continue
            used = usage.average(Metric.POD_CPU_USAGE_CORES, STATE_WINDOW, uid)
            lsr_be_used += used[0] if used else 0.0
        return node_burst_state(cpus, node_used[0], plan.lsr_request_cores, lsr_be_used,
                                cfg.share_pool_threshold_percent)

    def _burst_updaters(self, ctx: QoSContext, cfg: CPUBurstStrategy, pod: PodInfo,
                        quotas: QuotaReads) -> list:
        updaters, pod_total = [], 0
        for container in pod.running_containers:
            if not container.cgroup_dir:
                continue
            value = static_burst_us(container_limit_milli(container), cfg.cpu_burst_percent) \
                if cfg.policy.cpu_burst else 0
            pod_total += value
            burst = within_quota(value, quotas.get(container.cgroup_dir))
            updaters.append(ctx.updater("cpu.cfs_burst_us", container.cgroup_dir, burst))
            ctx.metrics.container_scaled(ctx.metrics.scaled_cfs_burst_us, pod, container, burst)
        if updaters and pod.cgroup_parent:
            updaters.append(ctx.updater("cpu.cfs_burst_us", pod.cgroup_parent,
                                        within_quota(pod_total, quotas.get(pod.cgroup_parent))))
        return updaters

    def _allowed(self, entry: Scalable, now: float, used: float | None) -> bool:
        cfg = entry.cfg
        if cfg.cfs_quota_burst_period_seconds < 0:
            return True
        if cfg.cfs_quota_burst_percent < 100:
            return False
        limit = entry.limit_cores
        used = limit if used is None else used
        limiter = self.limiters.get(entry.container.id)
        capacity = cfg.cfs_quota_burst_period_seconds * (cfg.cfs_quota_burst_percent - 100)
        if limiter is None or limiter.capacity != capacity:
            limiter = BurstLimiter.new(cfg.cfs_quota_burst_period_seconds, cfg.cfs_quota_burst_percent,
                                       now, self.rng)
            self.limiters[entry.container.id] = limiter
        return limiter.allow(now, int(used / limit * 100) if limit > 0 else 0)

    async def _scale_quota(self, ctx: QoSContext, entry: Scalable, state: NodeBurstState, now: float,
                           throttled: float | None, allowed: bool, quotas: QuotaReads) -> None:
        pod, container, cfg, base = entry.pod, entry.container, entry.cfg, entry.base
        wanted = container_operation(cfg.policy.cfs_quota_burst, allowed, throttled)
        operation = adjust_by_node(state, wanted)
        first_look = container.id not in self.seen  # after a restart a quota may still be scaled
        self.seen.add(container.id)
        if operation is CFSOperation.REMAIN or not first_look and container.id not in self.scaled and \
                operation in (CFSOperation.RESET, CFSOperation.SCALE_DOWN):
            return  # nothing to change: a container we never scaled sits at its base quota
        await quotas.load([container.cgroup_dir, pod.cgroup_parent])
        current = quotas.get(container.cgroup_dir)
        pod_quota = quotas.get(pod.cgroup_parent)
        if current is None or pod_quota is None or current <= 0:
            return
        target = target_quota(operation, current, base, cfg.cfs_quota_burst_percent)
        if target == base:
            self.scaled.discard(container.id)
        if target == current:
            return
        delta = target - current
        levels = [[], [ctx.updater("cpu.cfs_quota_us", container.cgroup_dir, target)]]
        if pod_quota > 0:
            levels[0].append(ctx.updater("cpu.cfs_quota_us", pod.cgroup_parent, pod_quota + delta))
        result = await ctx.executor.apply_levels(levels, use_cache=False)
        # the pod's quota moved: the pod's next container reads it again (koordlet re-reads
        # per container), so two containers scaled in one round add up
        quotas.forget(pod.cgroup_parent)
        quotas.forget(container.cgroup_dir)
        if result.outcomes and result.outcomes[-1] is Outcome.WRITTEN:
            if target != base:
                self.scaled.add(container.id)
            ctx.metrics.action(NAME, operation.value)
            ctx.metrics.container_scaled(ctx.metrics.scaled_cfs_quota_us, pod, container, target)
            log.info("cfs_quota_scaled", pod=f"{pod.namespace}/{pod.name}", container=container.name,
                     operation=operation.value, quota_us=target, previous_us=current, node_state=state.value,
                     reason="throttled" if wanted is CFSOperation.SCALE_UP else wanted.value)


class QuotaReads:
    """cpu.cfs_quota_us of each cgroup, read at most once a round (None: unreadable)."""

    def __init__(self, ctx: QoSContext) -> None:
        self._ctx = ctx
        self._values: dict[str, int | None] = {}

    def forget(self, cgroup_dir: str) -> None:
        """Read it again next time (it was just written)."""
        self._values.pop(cgroup_dir, None)

    def get(self, cgroup_dir: str) -> int | None:
        if cgroup_dir not in self._values:
            try:
                self._values[cgroup_dir] = int(self._ctx.reader.value("cpu.cfs_quota_us", cgroup_dir))
            except SystemFileError:
                self._values[cgroup_dir] = None
        return self._values[cgroup_dir]

    async def load(self, cgroup_dirs: list[str]) -> None:
        """Read the quotas of these cgroups not read yet this round, in one batch in the
        executor's IO thread (`get` then answers without reading)."""
        reader = self._ctx.reader
        paths: dict[str, str] = {}
        for cgroup_dir in cgroup_dirs:
            if cgroup_dir not in self._values and cgroup_dir not in paths:
                try:
                    paths[cgroup_dir] = reader.path(_QUOTA, cgroup_dir)
                except SystemFileError:
                    self._values[cgroup_dir] = None
        if not paths:
            return
        texts = await self._ctx.executor.read_in_thread(list(paths.values()))
        for cgroup_dir, text in zip(paths, texts):
            try:
                self._values[cgroup_dir] = None if text is None else int(reader.parse(_QUOTA, text))
            except (SystemFileError, ValueError):
                self._values[cgroup_dir] = None


def within_quota(burst: int, quota: int | None) -> int:
    """The kernel refuses a burst above the cgroup's quota (EINVAL from tg_set_cfs_bandwidth);
    koordlet v1.1 wrote 1000 % of the limit and failed on such kernels. Clamp to the quota."""
    return min(burst, quota) if burst > 0 and quota is not None and quota > 0 else burst
