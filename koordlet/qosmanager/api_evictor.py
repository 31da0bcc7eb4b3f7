"""Kubernetes mode eviction: the Eviction API (policy/v1) and an Event, as koordlet does.

POST /api/v1/namespaces/<ns>/pods/<name>/eviction with a policy/v1 Eviction: the API server
applies PodDisruptionBudgets (429 when one forbids it now) and deletes the pod gracefully.
On success a Warning Event `evictPodSuccess` is recorded on the Node (koordlet's reason).

`ApiEvictor` decides; `EvictionApi` is the two calls it needs. `LightkubeEvictionApi` makes
them with the daemon's shared lightkube client (koordlet/util/kube_client.py); tests use a fake.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Mapping, Protocol

import structlog

from koordlet.qosmanager.eviction import EvictionReason
from koordlet.statesinformer.model import PodInfo

if TYPE_CHECKING:
    from lightkube import AsyncClient

log = structlog.get_logger(__name__)

EVENT_REASON = "evictPodSuccess"
COMPONENT = "koordlet"


class EvictionApi(Protocol):
    async def create_eviction(self, namespace: str, name: str, body: Mapping[str, Any]) -> tuple[int, str]:
        """POST the pod's eviction subresource: (HTTP status, the server's message).
        Raises OSError when the server cannot be reached."""
        ...

    async def create_event(self, namespace: str, body: Mapping[str, Any]) -> None: ...

    async def close(self) -> None: ...


class LightkubeEvictionApi:
    """EvictionApi over a lightkube AsyncClient (imported only in Kubernetes mode)."""

    def __init__(self, client: AsyncClient, release: Callable[[], Awaitable[None]]) -> None:
        self.client = client
        self._release = release

    async def create_eviction(self, namespace: str, name: str, body: Mapping[str, Any]) -> tuple[int, str]:
        from lightkube import ApiError
        from lightkube.resources.core_v1 import Pod

        try:
            eviction: Any = Pod.Eviction.from_dict(dict(body))  # lightkube types from_dict as its base class
            await self.client.create(eviction, name=name, namespace=namespace)
        except ApiError as exc:
            return int(exc.status.code or 500), str(exc.status.message or "")
        except Exception as exc:  # httpx transport errors: the server is not reachable
            if exc.__class__.__module__.startswith(("httpx", "httpcore", "anyio")):
                raise OSError(str(exc)) from exc
            raise
        return 201, ""

    async def create_event(self, namespace: str, body: Mapping[str, Any]) -> None:
        from lightkube import ApiError
        from lightkube.resources.core_v1 import Event

        try:
            event: Any = Event.from_dict(dict(body))  # lightkube types from_dict as its base class
            # lightkube's overloads leave namespace= out for namespaced objects; it accepts it
            await self.client.create(event, namespace=namespace)  # type: ignore[call-overload]
        except ApiError as exc:
            raise OSError("event refused: %s" % exc.status.message) from exc

    async def close(self) -> None:
        """Let go of the daemon's shared client (it closes with its last user)."""
        await self._release()


def eviction_body(pod: PodInfo) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "Eviction",
            "metadata": {"name": pod.name, "namespace": pod.namespace}}


def node_event(node: str, pod: PodInfo, reason: EvictionReason, message: str, now: float) -> dict[str, Any]:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))
    return {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"generateName": f"{node}.", "namespace": "default"},
        "involvedObject": {"apiVersion": "v1", "kind": "Node", "name": node, "uid": node},
        "reason": EVENT_REASON, "type": "Warning",
        "message": f"evict Pod:{pod.name}, reason: {reason.value}, message: {message}",
        "source": {"component": COMPONENT, "host": node},
        "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
    }


class ApiEvictor:
    name = "eviction-api"

    def __init__(self, api: EvictionApi, node: str, clock: Callable[[], float] = time.time,
                 not_done: Callable[[str, str], None] = lambda reason, result: None) -> None:
        self.api = api
        self.node = node
        self.clock = clock
        self.not_done = not_done  # (reason, "refused" | "failed"): QoSMetrics.eviction_not_done

    async def evict(self, pod: PodInfo, reason: EvictionReason, message: str) -> bool:
        who = f"{pod.namespace}/{pod.name}"
        try:
            status, server_message = await self.api.create_eviction(pod.namespace, pod.name, eviction_body(pod))
        except OSError as exc:
            log.warning("pod_eviction_failed", pod=who, reason=reason.value, error=str(exc))
            self.not_done(reason.value, "failed")
            return False
        if status == 404:
            return True  # already gone
        if status == 429:
            log.info("pod_eviction_blocked", pod=who, reason=reason.value,
                     why=server_message or "a PodDisruptionBudget forbids it now", retry="next round")
            self.not_done(reason.value, "refused")
            return False
        if not 200 <= status < 300:
            log.warning("pod_eviction_failed", pod=who, reason=reason.value, status=status, error=server_message)
            self.not_done(reason.value, "failed")
            return False
        try:
            await self.api.create_event("default", node_event(self.node, pod, reason, message, self.clock()))
        except OSError as exc:  # the eviction stands; only its Event is missing
            log.warning("eviction_event_not_recorded", pod=who, error=str(exc))
        return True

    async def close(self) -> None:
        await self.api.close()
