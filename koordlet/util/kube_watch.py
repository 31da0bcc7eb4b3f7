"""Following one named cluster-scoped object through a watch, as an informer does for it.

One watch request, field-selected to the object's name, held open by the API server; a
change arrives as one event, and nothing is sent while nothing changes. The watch resumes
from the last resourceVersion seen when its stream ends; a 410 Gone (that version is
compacted away) restarts it without one, which the API server answers with the current
object first: a relist. Errors back off with jitter, doubling up to a minute, and each
distinct error is logged once until an event arrives again.

The NodeSLO (slo/cluster_watch.py) and the Node (statesinformer/node_watch.py) are followed
this way. The caller opens the stream (its own `client.watch(<resource>, ...)`, so the RBAC
test finds each watched resource where it is named) and turns each event's object (a plain
mapping) into what it holds.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Mapping
from typing import Any, AsyncIterator, Callable

import structlog

from koordlet.util.kube_client import KubeApi, KubeClientError

log = structlog.get_logger(__name__)

BACKOFF_FIRST_SECONDS = 1.0
BACKOFF_MAX_SECONDS = 60.0

EventHandler = Callable[[str, Mapping[str, Any]], None]
# (client, resourceVersion or None, lightkube's on_error handler) -> the watch's event stream
OpenStream = Callable[[Any, "str | None", Callable[[Exception, int], Any]], AsyncIterator[tuple[str, Any]]]


def backoff_seconds(failures: int, rand: Callable[[], float] = random.random) -> float:
    """Doubling from 1 s to a minute, each wait drawn from its upper half (jitter keeps
    5,000 agents from coming back in step after an API server restart)."""
    ceiling = min(BACKOFF_MAX_SECONDS, BACKOFF_FIRST_SECONDS * 2 ** max(0, failures - 1))
    return ceiling * (0.5 + 0.5 * rand())


def status_code_of(exc: BaseException) -> int | None:
    status = getattr(exc, "status", None)
    code = getattr(status, "code", None)
    return code if isinstance(code, int) else None


def as_mapping(obj: Any) -> Mapping[str, Any]:
    """A watch event's object as plain data (lightkube decodes into objects with to_dict())."""
    document = obj.to_dict() if hasattr(obj, "to_dict") else obj
    return document if isinstance(document, Mapping) else dict(document)


class ObjectWatch:
    def __init__(self, what: str, api: KubeApi, open_stream: OpenStream, name: str, on_event: EventHandler,
                 sleep: Callable[[float], Any] = asyncio.sleep, rand: Callable[[], float] = random.random) -> None:
        self.what = what  # "NodeSLO", "Node": for logs
        self.name = name
        self._api = api
        self._open_stream = open_stream
        self._on_event = on_event
        self._sleep = sleep
        self._rand = rand
        self._client: Any = None
        self._task: asyncio.Task[None] | None = None
        self.relists = 0
        self.failures = 0
        self._logged_error: str | None = None

    async def start(self) -> bool:
        """Begin following; False (logged) when no client can be had: nothing is watched."""
        try:
            self._client = self._api.acquire()
        except KubeClientError as exc:
            log.warning("kube_watch_unavailable", object=self.what, name=self.name, reason=str(exc))
            return False
        self._task = asyncio.get_running_loop().create_task(self._follow(), name="watch-%s" % self.what.lower())
        return True

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        if self._client is not None:
            self._client = None
            await self._api.release()

    def ready(self) -> bool:
        """Alive while it has a client (without one nothing is watched: the caller's
        defaults stand, which is ready too)."""
        return self._client is None or (self._task is not None and not self._task.done())

    async def _follow(self) -> None:
        version: str | None = None
        while True:
            try:
                async for kind, obj in self._open_stream(self._client, version, self._on_error):
                    self.failures = 0
                    self._logged_error = None
                    document = as_mapping(obj)
                    version = (document.get("metadata") or {}).get("resourceVersion") or version
                    self._on_event(kind, document)
                # the stream ended without an error: resume from the version seen
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the API server unreachable, or an answer lightkube raises
                self.failures += 1
                if status_code_of(exc) == 410:
                    version = None
                self._log_once(exc)
                await self._sleep(backoff_seconds(self.failures, self._rand))

    def _on_error(self, exc: Exception, count: int) -> Any:
        """lightkube's watch error handler: retry; a 410 restarts without a version (lightkube
        drops it) at once, other errors after a jittered backoff."""
        from lightkube.types import OnErrorAction, OnErrorResult

        if status_code_of(exc) == 410:
            self.relists += 1
            log.info("kube_watch_relist", object=self.what, name=self.name,
                     reason="resourceVersion too old (410 Gone)")
            return OnErrorResult(OnErrorAction.RETRY, sleep=0)
        self.failures += 1
        self._log_once(exc)
        return OnErrorResult(OnErrorAction.RETRY, sleep=backoff_seconds(self.failures, self._rand))

    def _log_once(self, exc: BaseException) -> None:
        text = "%s: %s" % (type(exc).__name__, exc)
        if text != self._logged_error:
            self._logged_error = text
            log.warning("kube_watch_failed", object=self.what, name=self.name, error=text, retry="with backoff")
