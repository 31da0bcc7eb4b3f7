"""Kubernetes mode eviction: the Eviction API (policy/v1) and an Event, as koordlet does.

POST /api/v1/namespaces/<ns>/pods/<name>/eviction with a policy/v1 Eviction: the API server
applies PodDisruptionBudgets (429 when one forbids it now) and deletes the pod gracefully.
On success a Warning Event `evictPodSuccess` is recorded on the Node (koordlet's reason).

The HTTP client is not chosen here: `ApiEvictor` takes anything with
`async post(path, body) -> (status, body)`, so the daemon binds it to the API client the
reports module brings (lightkube), and tests to a fake.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Mapping, Protocol

import structlog

from koordlet.qosmanager.eviction import EvictionReason
from koordlet.statesinformer.model import PodInfo

log = structlog.get_logger(__name__)

EVENT_REASON = "evictPodSuccess"
COMPONENT = "koordlet"


class KubePoster(Protocol):
    async def post(self, path: str, body: Mapping[str, Any]) -> tuple[int, Mapping[str, Any]]:
        """POST JSON to an API server path; (HTTP status, decoded body). Raises OSError when
        the server cannot be reached."""
        ...


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

    def __init__(self, api: KubePoster, node: str, clock: Callable[[], float] = time.time) -> None:
        self.api = api
        self.node = node
        self.clock = clock

    async def evict(self, pod: PodInfo, reason: EvictionReason, message: str) -> bool:
        who = f"{pod.namespace}/{pod.name}"
        path = f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/eviction"
        try:
            status, body = await self.api.post(path, eviction_body(pod))
        except OSError as exc:
            log.warning("pod_eviction_failed", pod=who, reason=reason.value, error=str(exc))
            return False
        if status == 404:
            return True  # already gone
        if status == 429:
            log.info("pod_eviction_blocked", pod=who, reason=reason.value,
                     why=body.get("message", "a PodDisruptionBudget forbids it now"))
            return False
        if not 200 <= status < 300:
            log.warning("pod_eviction_failed", pod=who, reason=reason.value, status=status,
                        error=body.get("message", ""))
            return False
        try:
            await self.api.post("/api/v1/namespaces/default/events",
                                node_event(self.node, pod, reason, message, self.clock()))
        except OSError as exc:  # the eviction stands; only its Event is missing
            log.warning("eviction_event_not_recorded", pod=who, error=str(exc))
        return True
