"""Kubernetes mode: the node's NodeSLO object (slo.koordinator.sh/v1alpha1, cluster-scoped,
named after the node) followed through a watch, as koordlet's informer does.

One watch request, field-selected to the node's object, held open by the API server; a
change arrives as one event, and nothing is sent while nothing changes (a poll every 10 s
would be 500 GETs a second at 5,000 nodes). The watch resumes from the last
resourceVersion seen when its stream ends; a 410 Gone (that version is compacted away)
restarts it without one, which the API server answers with the current object first: a
relist. Errors back off with jitter, doubling up to a minute.

Each version is validated once (`ValidatedNodeSLO.apply`); a refused one keeps the last
good NodeSLO, and the same refused version seen again after a relist is not logged again.
A deleted object keeps the last good NodeSLO in force (the slo-controller recreates it).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Mapping
from typing import Any, Callable

import structlog

from koordlet.config import Config
from koordlet.slo.source import ValidatedNodeSLO
from koordlet.util.kube_client import KubeApi, KubeClientError

log = structlog.get_logger(__name__)

BACKOFF_FIRST_SECONDS = 1.0
BACKOFF_MAX_SECONDS = 60.0


def node_slo_resource():
    from lightkube.generic_resource import create_global_resource

    return create_global_resource("slo.koordinator.sh", "v1alpha1", "NodeSLO", "nodeslos")


def backoff_seconds(failures: int, rand: Callable[[], float] = random.random) -> float:
    """Doubling from 1 s to a minute, each wait drawn from its upper half (jitter keeps
    5,000 agents from coming back in step after an API server restart)."""
    ceiling = min(BACKOFF_MAX_SECONDS, BACKOFF_FIRST_SECONDS * 2 ** max(0, failures - 1))
    return ceiling * (0.5 + 0.5 * rand())


def status_code_of(exc: BaseException) -> int | None:
    status = getattr(exc, "status", None)
    code = getattr(status, "code", None)
    return code if isinstance(code, int) else None


class NodeSLOWatch(ValidatedNodeSLO):
    name = "nodeslo-cluster"

    def __init__(self, config: Config, api: KubeApi, sleep: Callable[[float], Any] = asyncio.sleep,
                 rand: Callable[[], float] = random.random) -> None:
        super().__init__()
        self.node = config.common.node_name
        self._api = api
        self._sleep = sleep
        self._rand = rand
        self._client: Any = None
        self._task: asyncio.Task[None] | None = None
        self.resource_version: str | None = None  # of the object whose spec is in force or was refused last
        self.relists = 0
        self.failures = 0
        self._refused_version: str | None = None
        self._logged_error: str | None = None

    def source(self) -> str:
        if self.resource_version is None:
            return "defaults (no NodeSLO/%s seen yet)" % self.node
        return "NodeSLO/%s resourceVersion %s" % (self.node, self.resource_version)

    async def start(self) -> None:
        try:
            self._client = self._api.acquire()
        except KubeClientError as exc:
            log.warning("node_slo_defaults", reason=str(exc))
            return
        self._task = asyncio.get_running_loop().create_task(self._follow(), name="nodeslo-watch")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        if self._client is not None:
            self._client = None
            await self._api.release()

    def ready(self) -> bool:
        """Without a client the defaults are in force and nothing is watched; otherwise the
        watch must be alive."""
        return self._client is None or (self._task is not None and not self._task.done())

    async def _follow(self) -> None:
        resource = node_slo_resource()
        version: str | None = None
        while True:
            try:
                async for kind, obj in self._client.watch(resource, fields={"metadata.name": self.node},
                                                          resource_version=version, on_error=self._on_error):
                    self.failures = 0
                    version = self.on_event(kind, obj) or version
                # the stream ended without an error: resume from the version seen
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the API server unreachable, or an answer lightkube raises
                self.failures += 1
                if status_code_of(exc) == 410:
                    version = None
                self._log_once("node_slo_watch_failed", exc)
                await self._sleep(backoff_seconds(self.failures, self._rand))

    def _on_error(self, exc: Exception, count: int) -> Any:
        """lightkube's watch error handler: retry; 410 restarts without a version (lightkube
        drops it), other errors after a jittered backoff."""
        from lightkube.types import OnErrorAction, OnErrorResult

        if status_code_of(exc) == 410:
            self.relists += 1
            log.info("node_slo_watch_relist", node=self.node, reason="resourceVersion too old (410 Gone)")
            return OnErrorResult(OnErrorAction.RETRY, sleep=0)
        self.failures += 1
        self._log_once("node_slo_watch_failed", exc)
        return OnErrorResult(OnErrorAction.RETRY, sleep=backoff_seconds(self.failures, self._rand))

    def on_event(self, kind: str, obj: Any) -> str | None:
        """Apply one watch event; the object's resourceVersion."""
        document = obj.to_dict() if hasattr(obj, "to_dict") else obj
        if not isinstance(document, Mapping):
            document = dict(document)
        version = (document.get("metadata") or {}).get("resourceVersion")
        if kind == "DELETED":
            log.warning("node_slo_deleted", node=self.node, kept="last good NodeSLO")
            return version
        if kind not in ("ADDED", "MODIFIED"):
            return version
        self._logged_error = None
        if version is not None and version == self._refused_version:
            return version  # the same refused object again (a relist): already logged and counted
        self.resource_version = version
        refused_before = self.refusals
        self.apply(document, "NodeSLO/%s@%s" % (self.node, version))
        if self.refusals > refused_before:
            self._refused_version = version
        return version

    def _log_once(self, event: str, exc: BaseException) -> None:
        text = "%s: %s" % (type(exc).__name__, exc)
        if text != self._logged_error:
            self._logged_error = text
            log.warning(event, node=self.node, error=text, retry="with backoff")
