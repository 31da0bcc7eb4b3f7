"""CPU suppress: shrink the best-effort tier to what latency-sensitive work leaves.

Reads node and pod CPU usage from the metric cache, the pods from the states informer;
writes the BE tier's cpuset (the tier widened first, then its pods and containers a few
pods at a time, then the tier's own value) or its
CFS quota, and restores the policy not in use (cpuset: every CPU but LSE's; quota: -1).
Each decision in force is published on the hub (`ctx.be_suppress`): the runtime hooks keep
BE containers' cpusets and BE quotas inside it instead of resetting them.
"""

from __future__ import annotations

import asyncio
import json
import math
from dataclasses import dataclass, field
from typing import NamedTuple

import structlog

from koordlet.apis import keys
from koordlet.apis.annotations import AnnotationError, resource_status_cpuset
from koordlet.apis.qos import KoordQoSClass
from koordlet.metriccache.api import Metric, SeriesKey
from koordlet.ports.be_suppress import BESuppress, quota_under_tier
from koordlet.qosmanager.cpu_suppress_policy import (
    BE_MIN_QUOTA_US,
    CFS_PERIOD_US,
    UNLIMITED_QUOTA,
    be_cfs_quota,
    be_cpuset_size,
    be_suppress_budget_of,
    pick_cpus,
    split_between_pools,
)
from koordlet.qosmanager.framework import QoSContext
from koordlet.qosmanager.pod_changes import RESYNC_SECONDS, PodChanges
from koordlet.slo.node_slo import CPUSuppressPolicy
from koordlet.statesinformer.model import ContainerInfo, NodeInfo, PodInfo
from koordlet.statesinformer.pod_memo import PodMemo
from koordlet.util.steps import PODS_PER_STEP
from resourceexecutor import Outcome, Updater
from system.errors import Gone, SystemFileError
from system.topology import CpuInfo, CpuTopology

log = structlog.get_logger(__name__)

NAME = "cpu_suppress"
CPUSET_RESYNC_SECONDS = 10.0  # suppressing: kubelet's CPU manager may widen BE cpusets every 10 s
# not suppressing: the full cpuset is reasserted as koordlet's executor does (a cached write is
# checked again after ResourceForceUpdateSeconds); reading ~750 files back every 10 s was 5.5 %
# of the daemon's samples at 1,000 pods
RESTORE_RESYNC_SECONDS = RESYNC_SECONDS
# Pods a step on a full pass, which reads back each pod's and container's cpuset: 25 pods
# (75 files) held the loop 9-20 ms at 1,000 pods (bench/daemon_holds.py); the pods of
# other rounds are only written when they changed, PODS_PER_STEP at a time.
READ_BACK_PODS_PER_STEP = 8


def pod_cpuset(pod: PodInfo) -> frozenset[int]:
    """The CPUs the scheduler bound the pod to (resource-status annotation), or none."""
    try:
        return resource_status_cpuset(pod.annotations) or frozenset()
    except AnnotationError:  # an invalid annotation binds nothing (the hooks read it alike)
        return frozenset()


def node_cpus(ctx: QoSContext) -> list[CpuInfo]:
    if ctx.topology is not None:
        return sorted(ctx.topology.cpus, key=lambda info: info.cpu)
    count = max(1, math.ceil(ctx.states.node().capacity.get("cpu", 0) / 1000))
    return [CpuInfo(cpu, cpu, 0, 0, 0) for cpu in range(count)]


@dataclass(frozen=True, slots=True)
class PodFacts:
    """What suppress derives from the pod set and the node, built again only when one of
    them changes (the informer hands out the same pods tuple until then): a round then
    reads usage and decides without walking pods."""

    pods: tuple[PodInfo, ...]
    node: NodeInfo
    topology: CpuTopology | None
    ls_usage: tuple[SeriesKey, ...]  # CPU usage series of the pods not of the BE class (counted as LS)
    be_usage: tuple[SeriesKey, ...]  # of the BE class's
    be_tier: list[PodInfo]  # pods whose cgroup is under the BE tier
    cpus: int  # the node's CPUs
    lsr_pool: list[CpuInfo]  # CPUs bound to LSR pods
    ls_pool: list[CpuInfo]  # CPUs no LSE or LSR pod is bound to
    unsuppressed: frozenset[int]  # every CPU but those of LSE pods: the BE cpuset when nothing is suppressed


class _PodFact(NamedTuple):
    """What PodFacts takes from one pod (kept per pod object: PodMemo)."""

    usage_key: SeriesKey
    qos: KoordQoSClass
    bound: frozenset[int]  # an LSE or LSR pod's CPUs (pod_cpuset), else none


_NOT_BOUND: frozenset[int] = frozenset()


def _pod_fact(pod: PodInfo) -> _PodFact:
    cls = pod.qos.effective
    return _PodFact(SeriesKey(Metric.POD_CPU_USAGE_CORES, pod.uid), cls,
                    pod_cpuset(pod) if cls in (KoordQoSClass.LSE, KoordQoSClass.LSR) else _NOT_BOUND)


def pod_facts(ctx: QoSContext, known: PodFacts | None = None, memo: PodMemo[_PodFact] | None = None) -> PodFacts:
    """The facts of the informer's pods; `known` when neither they nor the node changed,
    and each pod's part from `memo` while that pod did not."""
    pods, node = ctx.states.pods(), ctx.states.node()
    if known is not None and known.pods is pods and known.node is node and known.topology is ctx.topology:
        return known
    below = ctx.dirs.besteffort + "/"
    facts = (memo if memo is not None else PodMemo(_pod_fact)).values(pods)
    owner: dict[int, KoordQoSClass] = {}
    lse: set[int] = set()
    for fact in facts:
        if fact.bound:
            for cpu in fact.bound:
                owner[cpu] = fact.qos
            if fact.qos is KoordQoSClass.LSE:
                lse |= fact.bound
    cpus = node_cpus(ctx)
    return PodFacts(
        pods, node, ctx.topology,
        ls_usage=tuple([fact.usage_key for fact in facts if fact.qos is not KoordQoSClass.BE]),
        be_usage=tuple([fact.usage_key for fact in facts if fact.qos is KoordQoSClass.BE]),
        be_tier=[pod for pod in pods if pod.cgroup_parent.startswith(below)],
        cpus=len(cpus),
        lsr_pool=[i for i in cpus if owner.get(i.cpu) is KoordQoSClass.LSR],
        ls_pool=[i for i in cpus if i.cpu not in owner],
        unsuppressed=frozenset(i.cpu for i in cpus if i.cpu not in lse))


def own_quota(container: ContainerInfo) -> int:
    """The quota a BE container has without suppression: from its batch-cpu (or cpu) limit,
    else what the runtime was asked for; -1 when unlimited."""
    if container.spec is not None:
        limit = container.spec.limits.get(keys.BATCH_CPU) or container.spec.limits.get("cpu")
        if limit:
            return max(limit * CFS_PERIOD_US // 1000, BE_MIN_QUOTA_US)
    quota = container.linux.cpu_quota
    return quota if quota is not None and quota > 0 else UNLIMITED_QUOTA


def kubelet_static_policy(node: NodeInfo) -> bool:
    """Whether kubelet's CPU manager runs the static policy (koordinator's node annotation)."""
    try:
        return json.loads(node.annotations.get(keys.KUBELET_CPU_MANAGER_POLICY, "{}")).get("policy") == "static"
    except (ValueError, AttributeError):
        return False


def publish_cpus(ctx: QoSContext, cpus: frozenset[int] | None) -> None:
    """The BE tier's cpuset as suppress leaves it (None: not suppressed), for the runtime hooks."""
    board = ctx.be_suppress
    board.publish(BESuppress(cpus, board.current().cfs_quota_us))


def publish_quota(ctx: QoSContext, quota_us: int) -> None:
    board = ctx.be_suppress
    board.publish(BESuppress(board.current().cpus, quota_us))


@dataclass(slots=True)
class CPUSuppress:
    interval: float = 1.0
    name: str = NAME
    gate: str = "BECPUSuppress"
    # policy -> True while it is in force (False once restored), like koordlet's status map
    in_force: dict[CPUSuppressPolicy, bool] = field(default_factory=dict)
    # koordlet reasserts the BE cpusets every round; the full read-back here runs every 10 s,
    # the period of kubelet's CPU manager reconcile, the likeliest writer of BE cpusets
    changes: PodChanges = field(default_factory=lambda: PodChanges(resync=CPUSET_RESYNC_SECONDS))
    last_cpus: frozenset[int] = frozenset()
    tier_absent: bool = False
    nothing_known: bool = False
    facts: PodFacts | None = None
    pod_parts: PodMemo[_PodFact] = field(default_factory=lambda: PodMemo(_pod_fact))
    _last_pick: tuple[PodFacts, int, int, frozenset[int]] | None = None

    async def run(self, ctx: QoSContext) -> None:
        node = ctx.states.node()
        pods = ctx.states.pods()
        allocatable = node.allocatable.get("cpu") or node.capacity.get("cpu", 0)
        if not pods or allocatable <= 0:  # koordlet: nothing is known to act on, nothing written
            if not self.nothing_known:
                log.info("cpu_suppress_skipped", reason="no pods known" if not pods else "node CPU capacity unknown")
            self.nothing_known = True
            return
        self.nothing_known = False
        strategy = ctx.slo().resource_used_threshold_with_be
        if not strategy.enable:
            await self.restore_cfs_quota(ctx)
            await self.restore_cpuset(ctx)
            return
        usage = ctx.usage()
        node_used = usage.last(Metric.NODE_CPU_USAGE_CORES)
        if node_used is None:
            log.debug("cpu_suppress_skipped", reason="no recent node CPU usage")
            return
        facts = self.facts = pod_facts(ctx, self.facts, self.pod_parts)
        # Pods the informer does not know are left out: their usage then counts as system
        # usage instead of LS usage, which takes the same CPUs from the BE budget.
        ls_used = sum(int(v * 1000) for v in usage.last_of(facts.ls_usage, usage.max_age) if v is not None)
        be_used = sum(int(v * 1000) for v in usage.last_of(facts.be_usage, usage.max_age) if v is not None)
        budget = be_suppress_budget_of(allocatable, strategy.cpu_suppress_threshold_percent,
                                       int(node_used * 1000), ls_used + be_used, ls_used)
        ctx.metrics.be_suppress_ls_used_cpu_cores.labels(node=ctx.metrics.node).set(
            budget.ls_used_milli / 1000)
        ctx.metrics.be_suppress_be_used_cpu_cores.labels(node=ctx.metrics.node).set(be_used / 1000)
        log.debug("cpu_suppress_budget", be_milli=budget.be_milli, threshold_milli=budget.threshold_milli,
                  ls_used_milli=budget.ls_used_milli, system_used_milli=budget.system_used_milli)
        if strategy.cpu_suppress_policy is CPUSuppressPolicy.CFS_QUOTA:
            await self.by_cfs_quota(ctx, budget.be_milli)
            await self.restore_cpuset(ctx)
        else:
            await self.by_cpuset(ctx, budget.be_milli)
            await self.restore_cfs_quota(ctx)

    def _tier_absent(self, be_dir: str) -> None:
        """No BE tier (no kubelet, or no BE pod yet): normal life, said once."""
        if not self.tier_absent:
            log.info("cpu_suppress_idle", reason="no best-effort tier cgroup", cgroup=be_dir)
        self.tier_absent = True

    # ---------------------------------------------------------------- cfs quota

    async def by_cfs_quota(self, ctx: QoSContext, be_milli: int) -> None:
        be_dir = ctx.dirs.besteffort
        try:
            current = int(await ctx.value("cpu.cfs_quota_us", be_dir))
        except Gone:
            self._tier_absent(be_dir)
            return
        except SystemFileError as exc:
            log.warning("cpu_suppress_skipped", reason="cannot read BE quota", error=str(exc))
            return
        self.tier_absent = False
        capacity = math.ceil(ctx.states.node().capacity.get("cpu", 0) / 1000)
        self.in_force[CPUSuppressPolicy.CFS_QUOTA] = True
        new = be_cfs_quota(be_milli, current, capacity)
        if new is None:
            publish_quota(ctx, current)
            return
        result = await ctx.executor.apply_levels(self.quota_levels(ctx, new), use_cache=False)
        publish_quota(ctx, new if result.outcomes[0] in (Outcome.WRITTEN, Outcome.SKIPPED) else current)
        ctx.metrics.suppressed(CPUSuppressPolicy.CFS_QUOTA.value, new / CFS_PERIOD_US)
        if result.outcomes[0] is Outcome.WRITTEN:
            ctx.metrics.action(NAME, "cfs_quota")
            log.info("be_cpu_suppressed", policy="cfsQuota", cgroup=be_dir, quota_us=new,
                     previous_us=current, be_milli=be_milli, reason="node CPU usage above threshold")

    async def restore_cfs_quota(self, ctx: QoSContext) -> None:
        if self.in_force.get(CPUSuppressPolicy.CFS_QUOTA) is False:
            return
        be_dir = ctx.dirs.besteffort
        result = await ctx.executor.apply_levels(self.quota_levels(ctx, UNLIMITED_QUOTA), use_cache=False)
        if result.outcomes[0] is Outcome.GONE:  # no tier: nothing is suppressed, nothing to restore
            self._tier_absent(be_dir)
            self.in_force[CPUSuppressPolicy.CFS_QUOTA] = False
            publish_quota(ctx, UNLIMITED_QUOTA)
            return
        if result.outcomes[0] in (Outcome.WRITTEN, Outcome.SKIPPED):
            self.in_force[CPUSuppressPolicy.CFS_QUOTA] = False
            publish_quota(ctx, UNLIMITED_QUOTA)
        if result.outcomes[0] is Outcome.WRITTEN:
            ctx.metrics.action(NAME, "restore_cfs_quota")
            log.info("be_cpu_suppress_restored", policy="cfsQuota", cgroup=be_dir)

    def quota_levels(self, ctx: QoSContext, tier_quota: int) -> list[list[Updater]]:
        """The BE tier's quota, first of the levels. cgroup v1 refuses a parent quota below
        a child's (EINVAL): there, while the tier is limited, BE pods and containers are held
        at the tier's quota (koordlet unsets batch quotas under the cfsQuota policy; the
        runtime hooks' BatchResource caps to the same value), and get their own back when
        the tier is restored."""
        be_dir = ctx.dirs.besteffort
        levels: list[list[Updater]] = [[ctx.updater("cpu.cfs_quota_us", be_dir, tier_quota)], [], []]
        if ctx.reader.files.version_for("cpu.cfs_quota_us") != 1:
            return levels
        self.facts = pod_facts(ctx, self.facts, self.pod_parts)
        for pod in self.facts.be_tier:  # the pods whose cgroup is under the BE tier
            own = [(c.cgroup_dir, own_quota(c) if tier_quota == UNLIMITED_QUOTA else UNLIMITED_QUOTA)
                   for c in pod.running_containers if c.cgroup_dir]
            pod_own = sum(q for _, q in own) if own and all(q > 0 for _, q in own) else UNLIMITED_QUOTA
            levels[1].append(ctx.updater("cpu.cfs_quota_us", pod.cgroup_parent, quota_under_tier(pod_own, tier_quota)))
            levels[2] += [ctx.updater("cpu.cfs_quota_us", d, quota_under_tier(q, tier_quota)) for d, q in own]
        return levels

    # ---------------------------------------------------------------- cpuset

    async def by_cpuset(self, ctx: QoSContext, be_milli: int) -> None:
        be_dir = ctx.dirs.besteffort
        if not await ctx.exists(be_dir, "cpuset"):
            self._tier_absent(be_dir)
            return
        self.tier_absent = False
        static = kubelet_static_policy(ctx.states.node())
        try:
            current = len(self.last_cpus) if static and self.last_cpus else len(await ctx.value("cpuset.cpus", be_dir))
        except SystemFileError as exc:
            log.warning("cpu_suppress_skipped", reason="cannot read BE cpuset", error=str(exc))
            return
        facts = self.facts = pod_facts(ctx, self.facts, self.pod_parts)
        lsr, ls = facts.lsr_pool, facts.ls_pool
        size = be_cpuset_size(be_milli, current, facts.cpus)
        from_lsr, from_ls = split_between_pools(size, len(lsr), len(ls))
        cpus = self._picked(from_lsr, from_ls, facts)
        self.in_force[CPUSuppressPolicy.CPUSET] = True
        if not cpus:
            log.warning("cpu_suppress_skipped", reason="not enough CPUs in the pools", wanted=size)
            return
        self.last_cpus = cpus
        # the same CPUs as last round: only new or changed BE pods need writing (all of them each minute)
        self.changes.resync = CPUSET_RESYNC_SECONDS
        pods, full = self.changes.select(facts.be_tier, ctx.clock(), (cpus, static))
        written = True
        if pods or full:
            # kubelet's static CPU manager owns pod-level cpusets: suppress containers only (as koordlet)
            upper_cpus = facts.unsuppressed if static else cpus
            written = await self._write_cpuset(ctx, pods, CpusetTargets(upper_cpus, upper_cpus, cpus), "cpuset",
                                               be_milli, full)
        if written:  # a tier left wider than `cpus` still holds the hooks' writes of `cpus`
            publish_cpus(ctx, cpus)
        ctx.metrics.suppressed(CPUSuppressPolicy.CPUSET.value, len(cpus))

    def _picked(self, from_lsr: int, from_ls: int, facts: PodFacts) -> frozenset[int]:
        """pick_cpus from both pools; the same pools and counts as last round give the same CPUs."""
        last = self._last_pick
        if last is not None and last[0] is facts and last[1] == from_lsr and last[2] == from_ls:
            return last[3]
        cpus = frozenset(pick_cpus(from_lsr, facts.lsr_pool) + pick_cpus(from_ls, facts.ls_pool))
        self._last_pick = (facts, from_lsr, from_ls, cpus)
        return cpus

    async def restore_cpuset(self, ctx: QoSContext) -> None:
        """The full BE cpuset on the tier, its pods and containers, every round the cpuset
        policy is not in force. koordlet writes all of it every round through its executor's
        cache, so a cpuset changed by someone else is repaired when the cache entry is checked
        again (60 s); here new or changed BE pods are written each round and the whole tree is
        read back on a full pass (on a change of policy or CPUs, and every
        RESTORE_RESYNC_SECONDS): reading back every BE cpuset each second was 14 % of a core
        at 1,000 pods."""
        self.last_cpus = frozenset()
        be_dir = ctx.dirs.besteffort
        if not await ctx.exists(be_dir, "cpuset"):
            self.changes.forget()
            self.in_force[CPUSuppressPolicy.CPUSET] = False
            publish_cpus(ctx, None)
            return
        facts = self.facts = pod_facts(ctx, self.facts, self.pod_parts)
        cpus = facts.unsuppressed
        self.changes.resync = RESTORE_RESYNC_SECONDS
        pods, full = self.changes.select(facts.be_tier, ctx.clock(), ("restore", cpus))
        if not pods and not full:
            return
        action = "restore_cpuset" if self.in_force.get(CPUSuppressPolicy.CPUSET) is not False else "repair_cpuset"
        if await self._write_cpuset(ctx, pods, CpusetTargets(cpus, cpus, cpus), action, None, full):
            self.in_force[CPUSuppressPolicy.CPUSET] = False
            publish_cpus(ctx, None)
        else:  # read back everything again next round
            self.changes.forget()

    async def _write_cpuset(self, ctx: QoSContext, pods: list[PodInfo], targets: CpusetTargets, action: str,
                            be_milli: int | None, full: bool = True) -> bool:
        """The tier, then `pods` (BE pods: be_pods) PODS_PER_STEP at a time (READ_BACK_PODS_PER_STEP on a
        full pass) with the loop given back in between (a full pass over 500 BE pods held it
        ~40 ms in one batch). cgroup v1 keeps a child's
        cpuset inside its parent's: the tier first takes the union of what it holds and what
        it gets, then the pods and their containers, then the tier its own value."""
        be_dir = ctx.dirs.besteffort
        try:
            held = await ctx.value("cpuset.cpus", be_dir)
        except SystemFileError:
            held = frozenset()
        steps = [[ctx.updater("cpuset.cpus", be_dir, held | targets.tier)]]
        per_step = READ_BACK_PODS_PER_STEP if full else PODS_PER_STEP
        for start in range(0, len(pods), per_step):
            step = []
            for pod in pods[start:start + per_step]:
                step.append(ctx.updater("cpuset.cpus", pod.cgroup_parent, targets.pod))
                step += [ctx.updater("cpuset.cpus", c.cgroup_dir, targets.container)
                         for c in pod.running_containers if c.cgroup_dir]
            steps.append(step)
        if held | targets.tier != targets.tier:
            steps.append([ctx.updater("cpuset.cpus", be_dir, targets.tier)])
        writes, ok = 0, True
        for n, updaters in enumerate(steps):
            if n:
                await asyncio.sleep(0)
            result = await ctx.executor.apply_batch(updaters, use_cache=not full)  # full: every file read back
            writes += result.writes
            ok = ok and result.ok
        if writes:
            ctx.metrics.action(NAME, action)
            log.info("be_cpu_suppressed" if be_milli is not None else "be_cpu_suppress_restored",
                     policy="cpuset", cgroup=be_dir, cpus=sorted(targets.container), be_milli=be_milli,
                     cgroups=sum(map(len, steps)), reason="node CPU usage" if be_milli is not None else "policy off")
        return ok


@dataclass(frozen=True, slots=True)
class CpusetTargets:
    """The cpusets CPU suppress gives the BE tier, its pods and their containers."""

    tier: frozenset[int]
    pod: frozenset[int]
    container: frozenset[int]
