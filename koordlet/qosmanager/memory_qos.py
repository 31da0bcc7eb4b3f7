"""Memory QoS: memory.min / memory.low / memory.high per pod and container (koordlet
resmanager/cgroup_reconcile.go, v1.1).

    memory.min  = request * minLimitPercent / 100
    memory.low  = request * lowLimitPercent / 100      (never below memory.min)
    memory.high = limit (or node allocatable when no limit) * throttlingPercent / 100
                  (throttlingPercent 0: unlimited; never below memory.min)

A pod's request is the sum of its containers' (no protection when any container has
none); its limit the sum when every container has one. The kube QoS tiers and kubepods
get the sums of their pods' memory.min / memory.low: protection reaches only as far down
as every ancestor grants it.

While no class enables memory QoS nothing is written (kubelet's own MemoryQoS may own these
files); while one does, the other classes get the kernel defaults (0, 0, unlimited); after
it is turned off, one pass writes the defaults. On cgroup v1 these files exist only on
Anolis kernels; elsewhere the executor reports them unsupported once and moves on.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass, field

import structlog

from koordlet.apis.qos import KoordQoSClass
from koordlet.qosmanager.framework import QoSContext
from koordlet.qosmanager.pod_changes import PodChanges
from koordlet.slo.node_slo import MemoryQOS
from koordlet.statesinformer.model import ContainerInfo, PodInfo

log = structlog.get_logger(__name__)

NAME = "memory_qos"
UNLIMITED = -1
DISABLED = MemoryQOS(enable=False, min_limit_percent=0, low_limit_percent=0, throttling_percent=0)
CLASSES = (KoordQoSClass.LSR, KoordQoSClass.LS, KoordQoSClass.BE)


@dataclass(frozen=True, slots=True)
class MemoryQoSValues:
    min: int
    low: int
    high: int  # -1: unlimited


def memory_qos_values(request: int, limit: int, node_allocatable: int, cfg: MemoryQOS) -> MemoryQoSValues:
    """`request`/`limit` in bytes, 0 when unset."""
    minimum = request * cfg.min_limit_percent // 100
    low = max(request * cfg.low_limit_percent // 100, minimum)
    if cfg.throttling_percent == 0:
        high = UNLIMITED
    else:
        base = limit if limit > 0 else node_allocatable
        high = max(base * cfg.throttling_percent // 100, minimum)
    return MemoryQoSValues(minimum, low, high)


def _container_memory(container: ContainerInfo) -> tuple[int, int]:
    spec = container.spec
    if spec is None:
        return 0, container.linux.memory_limit or 0
    return spec.requests.get("memory", 0), spec.limits.get("memory", 0)


def pod_memory(pod: PodInfo) -> tuple[int, int]:
    """(request, limit) of the pod: request 0 if any container lacks one, limit 0 likewise."""
    pairs = [_container_memory(c) for c in pod.containers]
    request = 0 if not pairs or any(r <= 0 for r, _ in pairs) else sum(r for r, _ in pairs)
    limit = 0 if not pairs or any(l <= 0 for _, l in pairs) else sum(l for _, l in pairs)
    return request, limit


def tier_protection(pods: Iterable[tuple[str, MemoryQoSValues]], kubepods: str) -> dict[str, tuple[int, int]]:
    """memory.min / memory.low of the kube QoS tiers: the sums of their pods' values.

    Protection is hierarchical (a cgroup is protected only as far as its parents are), so
    the tier dirs and kubepods must hold at least what their pods ask for."""
    sums: dict[str, list[int]] = {kubepods: [0, 0]}
    for pod_dir, values in pods:
        tier = posixpath.dirname(pod_dir)
        for target in {tier, kubepods}:
            entry = sums.setdefault(target, [0, 0])
            entry[0] += values.min
            entry[1] += values.low
    return {tier: (minimum, low) for tier, (minimum, low) in sums.items()}


@dataclass(slots=True)
class MemoryQoS:
    interval: float = 1.0
    name: str = NAME
    gate: str = "CgroupReconcile"
    changes: PodChanges = field(default_factory=PodChanges)
    pod_values: dict[str, tuple[str, MemoryQoSValues]] = field(default_factory=dict)  # uid -> (dir, values)
    applied: bool = False  # some class had memory QoS enabled in an earlier round

    async def run(self, ctx: QoSContext) -> None:
        slo = ctx.slo()
        allocatable = ctx.states.node().allocatable.get("memory", 0) or ctx.states.node().capacity.get("memory", 0)
        enabled = any(cfg is not None and cfg.enable for cfg in map(slo.memory_qos, CLASSES))
        if not enabled and not self.applied:
            return  # never configured: leave the files to kubelet (its own MemoryQoS may set them)
        all_pods = ctx.states.pods()
        pods, full = self.changes.select(all_pods, ctx.clock(), (slo.resource_qos_strategy, allocatable))
        self.applied = enabled  # after turning it off, this pass writes the kernel defaults once
        if not pods and not full and not self.changes.removed:
            return
        if full or self.changes.removed:
            live = {pod.uid for pod in all_pods}
            self.pod_values = {uid: v for uid, v in self.pod_values.items() if uid in live}
        pod_level, container_level = [], []
        for pod in pods:
            cfg = slo.memory_qos(pod.qos.effective)
            if cfg is None or not pod.cgroup_parent:
                continue
            cfg = cfg if cfg.enable else DISABLED
            request, limit = pod_memory(pod)
            values = memory_qos_values(request, limit, allocatable, cfg)
            self.pod_values[pod.uid] = (pod.cgroup_parent, values)
            pod_level += self._updaters(ctx, pod.cgroup_parent, values)
            for container in pod.running_containers:
                if container.cgroup_dir:
                    c_request, c_limit = _container_memory(container)
                    values = memory_qos_values(c_request, c_limit, allocatable, cfg)
                    container_level += self._updaters(ctx, container.cgroup_dir, values)
        tiers = tier_protection(self.pod_values.values(), ctx.dirs.kubepods)
        kubepods_level = [ctx.updater(name, ctx.dirs.kubepods, value)
                          for name, value in zip(("memory.min", "memory.low"), tiers.pop(ctx.dirs.kubepods))]
        tier_level = [ctx.updater(name, tier, value) for tier, pair in tiers.items()
                      for name, value in zip(("memory.min", "memory.low"), pair)]
        result = ctx.executor.update_levels([kubepods_level, tier_level, pod_level, container_level],
                                            use_cache=not full)  # a full pass re-reads every file
        if result.writes:
            ctx.metrics.action(NAME, "write", result.writes)
            log.info("memory_qos_applied", writes=result.writes, pods=len(pod_level) // 3,
                     reason="resourceQOSStrategy.memoryQOS")

    @staticmethod
    def _updaters(ctx: QoSContext, cgroup_dir: str, values: MemoryQoSValues) -> list:
        make = ctx.updater
        return [make("memory.min", cgroup_dir, values.min), make("memory.low", cgroup_dir, values.low),
                make("memory.high", cgroup_dir, values.high)]
