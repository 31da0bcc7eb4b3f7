"""One CRI listing into the store: ListPodSandbox + ListContainers, and a verbose
status call only for what is new or changed state.

The status calls are what give cgroups, pids and resources; they are cached by
(id, state) so that a steady node costs two list calls per poll, and the cache
holds only what the last listing had.
"""

from __future__ import annotations

import asyncio
import time
from typing import Awaitable, Callable, TypeVar

import structlog

from koordlet.statesinformer.cri_client import CriClient, CriError
from koordlet.statesinformer.from_cri import container_info, sandbox_view
from koordlet.statesinformer.model import ContainerInfo, PodInfo
from koordlet.statesinformer.problems import ProblemLog
from koordlet.statesinformer.runtime_view import SandboxView
from koordlet.statesinformer.store import PodStore
from proto.cri import api_pb2

log = structlog.get_logger(__name__)

T = TypeVar("T")
STATUS_CONCURRENCY = 8

_SandboxKey = tuple[str, int]  # (id, state)
_ContainerKey = tuple[str, int, str]  # (id, state, pod cgroup parent)


class CriPoller:
    def __init__(
        self,
        client: CriClient,
        store: PodStore,
        *,
        clock: Callable[[], float] = time.monotonic,
        problem_log: ProblemLog | None = None,
    ) -> None:
        self._client = client
        self._store = store
        self._clock = clock
        self._problems = problem_log or ProblemLog()
        self._sandboxes: dict[_SandboxKey, SandboxView] = {}
        self._containers: dict[_ContainerKey, ContainerInfo] = {}
        self._limit = asyncio.Semaphore(STATUS_CONCURRENCY)

    async def poll_once(self) -> None:
        """List, fill in what is new, hand the complete listing to the store.
        CriError when the runtime fails a list call (nothing is changed then)."""
        listed_at = self._clock()
        sandboxes = await self._client.list_pod_sandboxes()
        containers = await self._client.list_containers()
        views = await self._sandbox_views(sandboxes)
        pods = {view.pod.sandbox_id: view.pod for view in views}
        # exited containers are not part of a pod any more: no status call for them
        live = [c for c in containers if c.pod_sandbox_id in pods and c.state != api_pb2.CONTAINER_EXITED]
        listed = await self._container_infos(live, pods)
        self._store.cri_listed(views, listed, listed_at)

    async def _sandbox_views(self, sandboxes: list[api_pb2.PodSandbox]) -> list[SandboxView]:
        fresh: dict[_SandboxKey, SandboxView] = {}
        missing = [s for s in sandboxes if (s.id, s.state) not in self._sandboxes]
        statuses = await asyncio.gather(*(self._status(self._client.pod_sandbox_status, s.id) for s in missing))
        built = {s.id: sandbox_view(s, reply.info) for s, reply in zip(missing, statuses) if reply is not None}
        for sandbox in sandboxes:
            key = (sandbox.id, sandbox.state)
            view = self._sandboxes.get(key) or built.get(sandbox.id)
            if view is not None:
                fresh[key] = view
        self._sandboxes = fresh
        return list(fresh.values())

    async def _container_infos(
        self, containers: list[api_pb2.Container], pods: dict[str, PodInfo]
    ) -> list[tuple[str, ContainerInfo]]:
        def key(c: api_pb2.Container) -> _ContainerKey:
            return (c.id, c.state, pods[c.pod_sandbox_id].cgroup_parent)

        missing = [c for c in containers if key(c) not in self._containers]
        statuses = await asyncio.gather(*(self._status(self._client.container_status, c.id) for c in missing))
        built: dict[str, ContainerInfo] = {}
        for container, reply in zip(missing, statuses):
            if reply is None:
                continue
            info, problems = container_info(container, pods[container.pod_sandbox_id], reply)
            self._problems.report(info.pod_uid, container.metadata.name, problems)
            built[container.id] = info
        fresh: dict[_ContainerKey, ContainerInfo] = {}
        out: list[tuple[str, ContainerInfo]] = []
        for container in containers:
            known = self._containers.get(key(container)) or built.get(container.id)
            if known is not None:
                fresh[key(container)] = known
                out.append((container.pod_sandbox_id, known))
        self._containers = fresh
        return out

    async def _status(self, call: Callable[[str], Awaitable[T]], object_id: str) -> T | None:
        """A status call; None when the object went away since the listing."""
        async with self._limit:
            try:
                return await call(object_id)
            except CriError as exc:
                if exc.not_found:
                    return None
                raise
