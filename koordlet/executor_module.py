"""The daemon's one ResourceExecutor, owned as a module so that its metrics sit
on /metrics and its kept file descriptors are closed at shutdown.

Runtime hooks, the reconciler and the QoS strategies take `.executor` from here.
On a host without a cgroup hierarchy the module still starts, with no executor,
and says so: the rest of the daemon (metrics, reports) stays useful.
"""

from __future__ import annotations

import structlog
from prometheus_client import CollectorRegistry

from resourceexecutor import ResourceExecutor
from system.cgroup_files import CgroupFiles
from system.cgroup_version import detect_hierarchy
from system.errors import SystemFileError
from system.host import Host

log = structlog.get_logger(__name__)


class ExecutorModule:
    name = "resourceexecutor"

    def __init__(self, host: Host, registry: CollectorRegistry) -> None:
        self._host = host
        self._registry = registry
        self.executor: ResourceExecutor | None = None

    async def start(self) -> None:
        try:
            hierarchy = detect_hierarchy(self._host)
        except SystemFileError as exc:
            log.warning("cgroup_writes_disabled", reason=str(exc))
            return
        self.executor = ResourceExecutor(CgroupFiles(self._host, hierarchy), registry=self._registry)

    async def stop(self) -> None:
        if self.executor is not None:
            self.executor.close()
            self.executor = None

    def ready(self) -> bool:
        return True
