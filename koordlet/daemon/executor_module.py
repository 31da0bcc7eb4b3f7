"""The daemon's one ResourceExecutor as a module: it exists from the hubs' construction
(over an empty hierarchy where the host has no cgroups, so every write is refused as not
supported); this module says so at start and closes the executor's kept fds at stop.
The fds live in the daemon's one KeptFdPool (`Hubs.fd_pool`), touched only in the
executor's IO thread: closing them leaves the pool usable (it reopens on the next write)."""

from __future__ import annotations

import structlog

from koordlet.util.host_facts import HostFacts
from resourceexecutor import ResourceExecutor

log = structlog.get_logger(__name__)


class ExecutorModule:
    name = "resourceexecutor"

    def __init__(self, executor: ResourceExecutor, facts: HostFacts) -> None:
        self.executor = executor
        self._facts = facts

    async def start(self) -> None:
        if not self._facts.has_cgroups:
            log.warning("cgroup_writes_disabled", reason=self._facts.cgroup_error)

    async def stop(self) -> None:
        await self.executor.aclose()

    def ready(self) -> bool:
        return True
