"""The Eviction API evictor against a fake API server transport."""

from __future__ import annotations

import asyncio

from koordlet.qosmanager.api_evictor import ApiEvictor
from koordlet.qosmanager.eviction import EvictionReason
from koordlet.statesinformer.model import KoordQoSClass
from tests.koordlet.qosmanager.helpers import pod


class FakeApi:
    def __init__(self, *statuses: int, unreachable: bool = False) -> None:
        self.statuses = list(statuses)
        self.unreachable = unreachable
        self.posts: list[tuple[str, dict]] = []

    async def post(self, path, body):
        if self.unreachable:
            raise ConnectionRefusedError("no API server")
        self.posts.append((path, body))
        status = self.statuses.pop(0) if self.statuses else 201
        return status, {"message": "Cannot evict pod as it would violate the pod's disruption budget."}


def evict(api: FakeApi) -> bool:
    evictor = ApiEvictor(api, "node-a", clock=lambda: 0.0)
    be = pod("u1", KoordQoSClass.BE, name="batch-1")
    return asyncio.run(evictor.evict(be, EvictionReason.NODE_MEMORY_USAGE, "release 1 GiB"))


def test_posts_a_policy_v1_eviction_then_a_node_event():
    api = FakeApi(201, 201)
    assert evict(api)
    (path, body), (event_path, event) = api.posts
    assert path == "/api/v1/namespaces/default/pods/batch-1/eviction"
    assert body == {"apiVersion": "policy/v1", "kind": "Eviction",
                    "metadata": {"name": "batch-1", "namespace": "default"}}
    assert event_path == "/api/v1/namespaces/default/events"
    assert event["involvedObject"] == {"apiVersion": "v1", "kind": "Node", "name": "node-a", "uid": "node-a"}
    assert (event["reason"], event["type"]) == ("evictPodSuccess", "Warning")
    assert "EvictPodByNodeMemoryUsage" in event["message"]


def test_pdb_refusal_gone_pod_and_unreachable_server():
    blocked = FakeApi(429)
    assert not evict(blocked) and len(blocked.posts) == 1  # no Event for an eviction that did not happen
    assert evict(FakeApi(404))
    assert not evict(FakeApi(500))
    assert not evict(FakeApi(unreachable=True))
