"""The daemon's one ResourceExecutor, owned as a module so that its metrics sit
on /metrics and its kept file descriptors are closed at shutdown.

Runtime hooks, the reconciler and the QoS strategies take `.executor` from here.
On a host without a cgroup hierarchy the module still starts, with no executor,
and says so: the rest of the daemon (metrics, reports) stays useful.
Its kept fds live in the daemon's one KeptFdPool (`Hubs.fd_pool`), shared with the
collectors' usage reads; stopping the executor closes the pool's fds (the pool stays
usable and reopens on the next read).
"""

from __future__ import annotations

import structlog
from prometheus_client import CollectorRegistry

from resourceexecutor import KeptFdFileIO, ResourceExecutor
from system.cgroup_files import CgroupFiles
from system.cgroup_version import detect_hierarchy
from system.errors import SystemFileError
from system.file_io import KeptFdPool
from system.host import Host

log = structlog.get_logger(__name__)


class ExecutorModule:
    name = "resourceexecutor"

    def __init__(self, host: Host, registry: CollectorRegistry, fd_pool: KeptFdPool | None = None) -> None:
        self._host = host
        self._registry = registry
        self._fd_pool = fd_pool  # the daemon's one kept-fd budget (Hubs.fd_pool); None: its own
        self.executor: ResourceExecutor | None = None

    async def start(self) -> None:
        try:
            hierarchy = detect_hierarchy(self._host)
        except SystemFileError as exc:
            log.warning("cgroup_writes_disabled", reason=str(exc))
            return
        io = KeptFdFileIO(pool=self._fd_pool)
        self.executor = ResourceExecutor(CgroupFiles(self._host, hierarchy), registry=self._registry, io=io)

    async def stop(self) -> None:
        if self.executor is not None:
            self.executor.close()
            self.executor = None

    def ready(self) -> bool:
        return True
