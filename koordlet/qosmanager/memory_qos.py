"""Memory QoS: memory.min / memory.low on pods and containers, memory.high on containers
(koordlet resmanager/cgroup_reconcile.go, v1.1).

    memory.min  = request * minLimitPercent / 100
    memory.low  = request * lowLimitPercent / 100      (raised to memory.min when it is set but lower)
    memory.high = limit (or node allocatable when no limit) * throttlingPercent / 100
                  (throttlingPercent 0: unlimited; raised to memory.min when lower)

Requests and limits are `memory`, or `kubernetes.io/batch-memory` for BE pods. A pod's
request is kubelet's: the sum of its app containers' requests (a container without one
adds nothing), or its largest init container's when that is larger. The kube QoS tiers
and kubepods get the sums of their pods' memory.min / memory.low: protection reaches only
as far down as every ancestor grants it.

A pod's config is its class's, with its own annotation `koordinator.sh/memoryQOS` laid
over it (slo.spec.pod_memory_qos); an invalid annotation is logged once and ignored.
While no class enables memory QoS and no pod asks for it nothing is written (kubelet's own
MemoryQoS may own these files); while one does, the others get the kernel defaults (0, 0,
unlimited); after it is turned off, one pass writes the defaults. On cgroup v1 these files
exist only on Anolis kernels; elsewhere the executor reports them unsupported once and
moves on.
"""

from __future__ import annotations

import asyncio
import posixpath
from collections.abc import Iterable
from dataclasses import dataclass, field

import structlog

from koordlet.apis.keys import BATCH_MEMORY, POD_MEMORY_QOS
from koordlet.apis.qos import KoordQoSClass
from koordlet.qosmanager.framework import QoSContext
from koordlet.qosmanager.pod_changes import PodChanges
from koordlet.slo.node_slo import MEMORY_QOS_OFF, MemoryQOS, NodeSLO, NodeSLOError, ResourceQOSStrategy
from koordlet.slo.spec import pod_memory_qos
from koordlet.statesinformer.model import ContainerInfo, ContainerKind, PodInfo
from koordlet.util.steps import PODS_PER_STEP
from resourceexecutor.updater import Updater

log = structlog.get_logger(__name__)

NAME = "memory_qos"
UNLIMITED = -1
CLASSES = (KoordQoSClass.LSR, KoordQoSClass.LS, KoordQoSClass.BE)
_DEFAULTS = ResourceQOSStrategy()


@dataclass(frozen=True, slots=True)
class MemoryQoSValues:
    min: int
    low: int
    high: int  # -1: unlimited


def memory_qos_values(request: int, limit: int, node_allocatable: int, cfg: MemoryQOS) -> MemoryQoSValues:
    """`request`/`limit` in bytes, 0 when unset."""
    minimum = request * cfg.min_limit_percent // 100
    low = request * cfg.low_limit_percent // 100
    if 0 < low < minimum:
        low = minimum
    if cfg.throttling_percent == 0:
        high = UNLIMITED
    else:
        base = limit if limit > 0 else node_allocatable
        high = max(base * cfg.throttling_percent // 100, minimum)
    return MemoryQoSValues(minimum, low, high)


def _memory_name(pod: PodInfo) -> str:
    return BATCH_MEMORY if pod.qos.effective is KoordQoSClass.BE else "memory"


def container_memory(container: ContainerInfo, name: str = "memory") -> tuple[int, int]:
    """(request, limit) in bytes of resource `name`, 0 when unset; without a spec, the
    runtime's memory limit."""
    spec = container.spec
    if spec is None:
        return 0, max(container.linux.memory_limit or 0, 0)
    return max(spec.requests.get(name, 0), 0), max(spec.limits.get(name, 0), 0)


def pod_memory_request(pod: PodInfo) -> int:
    """kubelet's effective request: the app containers' sum or the largest init container's."""
    name = _memory_name(pod)
    app = init = 0
    for container in pod.containers:
        request = container_memory(container, name)[0]
        if container.role.kind is ContainerKind.INIT:
            init = max(init, request)
        else:
            app += request
    return max(app, init)


def tier_protection(tiered: Iterable[tuple[str, MemoryQoSValues]], kubepods: str) -> dict[str, tuple[int, int]]:
    """memory.min / memory.low of the kube QoS tiers: the sums of their pods' values, each pod
    given as (the dir of its tier, its values); kubepods first.

    Protection is hierarchical (a cgroup is protected only as far as its parents are), so
    the tier dirs and kubepods must hold at least what their pods ask for."""
    total_min = total_low = 0
    tiers: dict[str, list[int]] = {}
    for tier, values in tiered:
        minimum, low = values.min, values.low
        total_min += minimum
        total_low += low
        if tier != kubepods:  # a guaranteed pod sits right below kubepods
            sums = tiers.get(tier)
            if sums is None:
                tiers[tier] = [minimum, low]
            else:
                sums[0] += minimum
                sums[1] += low
    out = {kubepods: (total_min, total_low)}
    out.update((tier, (minimum, low)) for tier, (minimum, low) in tiers.items())
    return out


def class_config(slo: NodeSLO, pod: PodInfo) -> MemoryQOS | None:
    """The memory QoS of the pod's class (MEMORY_QOS_OFF while off); None for a class
    without settings (SYSTEM)."""
    cfg = slo.memory_qos(pod.qos.effective)
    return None if cfg is None else cfg if cfg.enable else MEMORY_QOS_OFF


def pod_config(slo: NodeSLO, pod: PodInfo) -> MemoryQOS | None:
    """The pod's memory QoS: its class's with its annotation laid over it. NodeSLOError for
    an invalid annotation."""
    cfg = class_config(slo, pod)
    text = pod.annotations.get(POD_MEMORY_QOS)
    if cfg is None or not text:
        return cfg
    default = _DEFAULTS.for_class(pod.qos.effective)
    return pod_memory_qos(cfg, default.memory_qos if default is not None else MEMORY_QOS_OFF, text)


@dataclass(slots=True)
class MemoryQoS:
    interval: float = 1.0
    name: str = NAME
    gate: str = "CgroupReconcile"
    changes: PodChanges = field(default_factory=PodChanges)
    # uid -> (the dir of its tier, its values): what the tiers sum, every round a pod changed
    pod_values: dict[str, tuple[str, MemoryQoSValues]] = field(default_factory=dict)
    applied: bool = False  # some class or pod had memory QoS on in an earlier round
    refused: dict[str, str] = field(default_factory=dict)  # pod uid -> the invalid annotation logged
    annotated: tuple[tuple[PodInfo, ...], bool] | None = None  # (pods, whether one has the annotation)

    async def run(self, ctx: QoSContext) -> None:
        slo = ctx.slo()
        allocatable = ctx.states.node().allocatable.get("memory", 0) or ctx.states.node().capacity.get("memory", 0)
        all_pods = ctx.states.pods()
        enabled = any(cfg is not None and cfg.enable for cfg in map(slo.memory_qos, CLASSES)) or \
            self._annotated(all_pods)
        if not enabled and not self.applied:
            return  # never configured: leave the files to kubelet (its own MemoryQoS may set them)
        pods, full = self.changes.select(all_pods, ctx.clock(), (slo.resource_qos_strategy, allocatable))
        self.applied = enabled  # after turning it off, this pass writes the kernel defaults once
        if not pods and not full and not self.changes.removed:
            return
        if full or self.changes.removed:
            live = {pod.uid for pod in all_pods}
            self.pod_values = {uid: v for uid, v in self.pod_values.items() if uid in live}
            self.refused = {uid: text for uid, text in self.refused.items() if uid in live}
        # PODS_PER_STEP pods a step, the loop given back in between: a full pass re-reads every
        # file, five a pod (1,000 pods held the loop ~58 ms in one levelled batch). The kube
        # tiers, which sum every pod's protection, go first once all values are known; a
        # protection is not a limit, so the kernel takes a child's above its parent's.
        steps: list[tuple[list[Updater], list[Updater]]] = []
        for start in range(0, len(pods), PODS_PER_STEP):
            if start:
                await asyncio.sleep(0)
            steps.append(self._updaters(ctx, slo, allocatable, pods[start:start + PODS_PER_STEP]))
        tiers = tier_protection(self.pod_values.values(), ctx.dirs.kubepods)
        kubepods_level = [ctx.updater(name, ctx.dirs.kubepods, value)
                          for name, value in zip(("memory.min", "memory.low"), tiers.pop(ctx.dirs.kubepods))]
        tier_level = [ctx.updater(name, tier, value) for tier, pair in tiers.items()
                      for name, value in zip(("memory.min", "memory.low"), pair)]
        use_cache = not full  # a full pass re-reads every file
        writes = (await ctx.executor.apply_levels([kubepods_level, tier_level], use_cache=use_cache)).writes
        for pod_level, container_level in steps:
            if pod_level or container_level:
                writes += (await ctx.executor.apply_levels([pod_level, container_level], use_cache=use_cache)).writes
        if writes:
            ctx.metrics.action(NAME, "write", writes)
            log.info("memory_qos_applied", writes=writes, pods=sum(len(step[0]) for step in steps) // 2,
                     reason="resourceQOSStrategy.memoryQOS")

    def _updaters(self, ctx: QoSContext, slo: NodeSLO, allocatable: int,
                  pods: list[PodInfo]) -> tuple[list[Updater], list[Updater]]:
        """The pods' and their containers' updaters; each pod's values kept for the tiers."""
        pod_level, container_level = [], []
        for pod in pods:
            cfg = self._config(slo, pod)
            if cfg is None or not pod.cgroup_parent:
                continue
            values = memory_qos_values(pod_memory_request(pod), 0, allocatable, cfg)
            self.pod_values[pod.uid] = (posixpath.dirname(pod.cgroup_parent), values)
            pod_level += [ctx.updater("memory.min", pod.cgroup_parent, values.min),
                          ctx.updater("memory.low", pod.cgroup_parent, values.low)]
            name = _memory_name(pod)
            for container in pod.running_containers:
                if container.cgroup_dir and container.role.kind is not ContainerKind.INIT:
                    request, limit = container_memory(container, name)
                    values = memory_qos_values(request, limit, allocatable, cfg)
                    container_level += [ctx.updater("memory.min", container.cgroup_dir, values.min),
                                        ctx.updater("memory.low", container.cgroup_dir, values.low),
                                        ctx.updater("memory.high", container.cgroup_dir, values.high)]
        return pod_level, container_level

    def _annotated(self, pods: tuple[PodInfo, ...]) -> bool:
        """Whether some pod asks for memory QoS by annotation (looked up once per pod set)."""
        if self.annotated is None or self.annotated[0] is not pods:
            self.annotated = (pods, any(POD_MEMORY_QOS in pod.annotations for pod in pods))
        return self.annotated[1]

    def _config(self, slo: NodeSLO, pod: PodInfo) -> MemoryQOS | None:
        try:
            return pod_config(slo, pod)
        except NodeSLOError as exc:
            text = pod.annotations.get(POD_MEMORY_QOS, "")
            if self.refused.get(pod.uid) != text:
                self.refused[pod.uid] = text
                log.warning("memory_qos_pod_annotation_ignored", pod=pod.name, namespace=pod.namespace,
                            uid=pod.uid, error=str(exc))
            return class_config(slo, pod)
