"""The one eviction path: every strategy that removes a pod goes through `EvictionPath`.

The path refuses any pod that is not best-effort, evicts a pod once (a pod being
evicted is remembered for `remember_for` seconds), logs each eviction with its reason
and counts it in `koordlet_pod_eviction{reason}`. How a pod is removed is the
`Evictor`'s business:

- `CgroupKillEvictor` (standalone, opt-in with --qos-standalone-eviction): kills the
  pod's processes: cgroup v2 writes `cgroup.kill`; cgroup v1 sends SIGKILL to every pid
  in the pod's and its containers' `cgroup.procs`, again until they are empty. kubelet
  (or the runtime) sees the containers die; nothing else is touched.
- `DisabledEvictor`: the default in standalone mode; logs what it would have done.
- `ApiEvictor` (api_evictor.py), Kubernetes mode: policy/v1 Evictions (the API server
  applies PodDisruptionBudgets) and a Node Event, with the daemon's lightkube client.
"""

from __future__ import annotations

import asyncio
import os
import signal
from dataclasses import dataclass
from enum import Enum
from typing import Callable, Iterable, Protocol

import structlog

from koordlet.apis.qos import KoordQoSClass
from koordlet.qosmanager.metrics import QoSMetrics
from koordlet.statesinformer.model import PodInfo
from resourceexecutor import ResourceExecutor
from resourceexecutor.commands import kill_cgroup
from resourceexecutor.outcome import Outcome
from system.cgroup_readers import CgroupReader
from system.errors import Gone, SystemFileError

log = structlog.get_logger(__name__)


class EvictionReason(Enum):
    """koordlet's reasons (pkg/koordlet/common/reason)."""

    NODE_MEMORY_USAGE = "EvictPodByNodeMemoryUsage"
    BE_CPU_SATISFACTION = "EvictPodByBECPUSatisfaction"


class Evictor(Protocol):
    name: str

    async def evict(self, pod: PodInfo, reason: EvictionReason, message: str) -> bool:
        """Remove the pod; True when it is gone or going."""
        ...


class DisabledEvictor:
    name = "disabled"

    async def evict(self, pod: PodInfo, reason: EvictionReason, message: str) -> bool:
        log.warning("pod_eviction_not_enabled", pod=f"{pod.namespace}/{pod.name}",
                    reason=reason.value, message=message,
                    hint="standalone eviction is opt-in: --qos-standalone-eviction=true")
        return False


def pod_cgroup_dirs(reader: CgroupReader, pod: PodInfo) -> list[str]:
    """The pod's cgroup and every cgroup below it (containers, their children)."""
    root = pod.cgroup_parent.strip("/")
    if not root:
        return []
    found, todo = [], [root]
    while todo:
        current = todo.pop()
        try:
            children = reader.files.children(current, "cpu")
        except SystemFileError:
            continue
        found.append(current)
        todo.extend(children)
    return found


class CgroupKillEvictor:
    """Kills the pod's processes through its cgroups (standalone mode)."""

    name = "cgroup-kill"

    def __init__(self, executor: ResourceExecutor, reader: CgroupReader, *,
                 kill: Callable[[int, int], None] = os.kill, attempts: int = 20,
                 pause: float = 0.05) -> None:
        self.executor = executor
        self.reader = reader
        self.kill = kill
        self.attempts = attempts
        self.pause = pause

    async def evict(self, pod: PodInfo, reason: EvictionReason, message: str) -> bool:
        dirs = await self.executor.in_io_thread(pod_cgroup_dirs, self.reader, pod)  # listing dirs waits on the kernel too
        if not dirs:
            return True  # no cgroup left: nothing runs
        outcome = await self.executor.in_io_thread(kill_cgroup, self.executor, dirs[0])
        if outcome is Outcome.WRITTEN or outcome is Outcome.GONE:
            return True
        for _ in range(self.attempts):
            pids = self._pids(dirs)
            if not pids:
                return True
            for pid in pids:
                try:
                    self.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    continue
            await asyncio.sleep(self.pause)
        return not self._pids(dirs)

    def _pids(self, dirs: Iterable[str]) -> set[int]:
        pids: set[int] = set()
        for cgroup_dir in dirs:
            try:
                pids.update(self.reader.procs(cgroup_dir))
            except Gone:
                continue
            finally:
                self.reader.forget(cgroup_dir)  # a dying cgroup: read it fresh each time
        return pids


@dataclass(slots=True)
class EvictionPath:
    evictor: Evictor
    metrics: QoSMetrics
    clock: Callable[[], float]
    remember_for: float = 300.0
    _evicted: dict[str, float] | None = None

    async def evict(self, pods: Iterable[PodInfo], reason: EvictionReason, message: str) -> list[str]:
        """Evict each pod in order; returns the uids evicted now (refused and repeated ones excluded)."""
        now = self.clock()
        if self._evicted is None:
            self._evicted = {}
        for uid in [uid for uid, at in self._evicted.items() if now - at > self.remember_for]:
            del self._evicted[uid]
        done: list[str] = []
        for pod in pods:
            who = f"{pod.namespace}/{pod.name}"
            if pod.qos.effective is not KoordQoSClass.BE:
                log.error("pod_eviction_refused", pod=who, qos=pod.qos.effective.value,
                          reason=reason.value, why="only best-effort pods are evicted")
                continue
            if pod.uid in self._evicted:
                log.debug("pod_eviction_already_done", pod=who, reason=reason.value)
                continue
            if await self.evictor.evict(pod, reason, message):
                self._evicted[pod.uid] = now
                self.metrics.evicted(reason.value, pod.namespace, pod.name)
                log.info("pod_evicted", pod=who, uid=pod.uid, reason=reason.value, message=message,
                         evictor=self.evictor.name)
                done.append(pod.uid)
        return done
