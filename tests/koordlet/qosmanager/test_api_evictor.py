"""The Eviction API evictor: decisions over a fake API, and the lightkube adapter's requests."""

from __future__ import annotations

import asyncio

import pytest

from koordlet.apis.qos import KoordQoSClass
from koordlet.qosmanager.api_evictor import ApiEvictor, LightkubeEvictionApi
from koordlet.qosmanager.eviction import EvictionReason
from tests.koordlet.qosmanager.helpers import pod


class FakeApi:
    def __init__(self, *statuses: int, unreachable: bool = False) -> None:
        self.statuses = list(statuses)
        self.unreachable = unreachable
        self.evictions: list[tuple[str, str, dict]] = []
        self.events: list[tuple[str, dict]] = []

    async def create_eviction(self, namespace, name, body):
        if self.unreachable:
            raise ConnectionRefusedError("no API server")
        self.evictions.append((namespace, name, body))
        status = self.statuses.pop(0) if self.statuses else 201
        return status, "Cannot evict pod as it would violate the pod's disruption budget."

    async def create_event(self, namespace, body):
        self.events.append((namespace, body))

    async def close(self):
        pass


def evict(api) -> bool:
    evictor = ApiEvictor(api, "node-a", clock=lambda: 0.0)
    be = pod("u1", KoordQoSClass.BE, name="batch-1")
    return asyncio.run(evictor.evict(be, EvictionReason.NODE_MEMORY_USAGE, "release 1 GiB"))


def test_creates_a_policy_v1_eviction_then_a_node_event():
    api = FakeApi(201)
    assert evict(api)
    assert api.evictions == [("default", "batch-1", {"apiVersion": "policy/v1", "kind": "Eviction",
                                                     "metadata": {"name": "batch-1", "namespace": "default"}})]
    ((namespace, event),) = api.events
    assert namespace == "default"
    assert event["involvedObject"] == {"apiVersion": "v1", "kind": "Node", "name": "node-a", "uid": "node-a"}
    assert (event["reason"], event["type"]) == ("evictPodSuccess", "Warning")
    assert "EvictPodByNodeMemoryUsage" in event["message"]


def test_pdb_refusal_gone_pod_and_unreachable_server():
    blocked = FakeApi(429)
    assert not evict(blocked) and blocked.events == []  # no Event for an eviction that did not happen
    assert evict(FakeApi(404))
    assert not evict(FakeApi(500))
    assert not evict(FakeApi(unreachable=True))


def test_refused_and_failed_evictions_are_counted_by_result_and_left_to_the_next_round():
    from prometheus_client import CollectorRegistry

    from koordlet.qosmanager.metrics import QoSMetrics

    registry = CollectorRegistry()
    metrics = QoSMetrics(registry, "node-a")
    api = FakeApi(429, 429, 500)
    evictor = ApiEvictor(api, "node-a", clock=lambda: 0.0, not_done=metrics.eviction_not_done)
    be = pod("u1", KoordQoSClass.BE, name="batch-1")
    for _ in range(3):
        assert not asyncio.run(evictor.evict(be, EvictionReason.NODE_MEMORY_USAGE, "release 1 GiB"))
    assert len(api.evictions) == 3  # one request a round: no retry loop around a 429

    def count(result: str) -> float | None:
        return registry.get_sample_value("koordlet_pod_eviction_total", {
            "node": "node-a", "reason": EvictionReason.NODE_MEMORY_USAGE.value, "result": result})

    assert (count("refused"), count("failed"), count("evicted")) == (2.0, 1.0, None)


class RecordingLightkube:
    """Stands in for lightkube's AsyncClient: records create() calls, answers with ApiErrors."""

    def __init__(self, status: int | None = None) -> None:
        self.calls: list[tuple[object, str | None, str | None]] = []
        self.status = status
        self.closed = False

    async def create(self, obj, name=None, *, namespace=None):
        self.calls.append((obj, name, namespace))
        if self.status is not None:
            from lightkube import ApiError
            from lightkube.models.meta_v1 import Status

            raise ApiError(status=Status(code=self.status, message="budget"))

    async def close(self):
        self.closed = True


def test_lightkube_adapter_posts_the_pod_eviction_subresource():
    pytest.importorskip("lightkube")
    from lightkube.resources.core_v1 import Event, Pod

    client = RecordingLightkube()
    api = LightkubeEvictionApi(client, client.close)
    assert evict(api)
    (eviction, name, namespace), (event, _, event_namespace) = client.calls
    assert isinstance(eviction, Pod.Eviction) and (name, namespace) == ("batch-1", "default")
    assert eviction.metadata.name == "batch-1" and eviction.apiVersion == "policy/v1"
    assert isinstance(event, Event) and event.reason == "evictPodSuccess" and event_namespace == "default"
    refused = RecordingLightkube(status=429)
    assert not evict(LightkubeEvictionApi(refused, refused.close)) and len(refused.calls) == 1
    asyncio.run(api.close())
    assert client.closed
