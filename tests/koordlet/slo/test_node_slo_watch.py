"""Kubernetes mode NodeSLO: the node's object read with the API client, last good kept."""

from __future__ import annotations

import asyncio

import pytest

from koordlet.daemon.cli import parse_args
from koordlet.slo.cluster_watch import NodeSLOWatch
from koordlet.slo.node_slo import CPUSuppressPolicy, NodeSLO

lightkube = pytest.importorskip("lightkube")


class FakeClient:
    """lightkube's AsyncClient as NodeSLOWatch uses it: get(resource, name) and close()."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.asked: list[tuple[object, str]] = []
        self.closed = False

    async def get(self, resource, name):
        self.asked.append((resource, name))
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    async def close(self):
        self.closed = True


def not_found():
    from lightkube.models.meta_v1 import Status

    return lightkube.ApiError(status=Status(code=404, message="nodeslos.slo.koordinator.sh not found"))


def nodeslo(spec):
    return {"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeSLO", "metadata": {"name": "node-a"},
            "spec": spec}


def test_object_read_applied_and_refusal_keeps_the_last_good():
    client = FakeClient([not_found(),
                         nodeslo({"resourceUsedThresholdWithBE": {"enable": True, "cpuSuppressPolicy": "cfsQuota"}}),
                         nodeslo({"resourceUsedThresholdWithBE": {"cpuSuppressThresholdPercent": 101}}),
                         ConnectionRefusedError("api server down")])
    config = parse_args(["--node-name", "node-a", "--kubeconfig", "/nonexistent"])
    watch = NodeSLOWatch(config, client_factory=lambda cfg: client)

    async def scenario():
        watch._client, watch._resource = client, object()
        assert not await watch.read_once() and watch.current() == NodeSLO()  # no object yet: defaults
        assert await watch.read_once()
        good = watch.current()
        assert good.resource_used_threshold_with_be.cpu_suppress_policy is CPUSuppressPolicy.CFS_QUOTA
        assert not await watch.read_once() and watch.current() is good
        assert "cpuSuppressThresholdPercent" in watch.last_error
        assert not await watch.read_once() and watch.current() is good  # unreachable: kept
        await watch.stop()

    asyncio.run(scenario())
    assert [name for _, name in client.asked] == ["node-a"] * 4
    assert client.closed


def test_module_start_polls_with_the_daemon_client():
    client = FakeClient([nodeslo({"cpuBurstStrategy": {"policy": "auto"}})] * 50)
    config = parse_args(["--node-name", "node-a", "--kubeconfig", "/nonexistent"])
    watch = NodeSLOWatch(config, poll_interval=0.01, client_factory=lambda cfg: client)

    async def scenario():
        await watch.start()
        for _ in range(100):
            if watch.current().cpu_burst_strategy.policy.value == "auto":
                break
            await asyncio.sleep(0.01)
        await watch.stop()

    asyncio.run(scenario())
    assert watch.current().cpu_burst_strategy.policy.value == "auto"
    assert client.closed


def test_an_unchanged_object_is_read_once_per_interval_not_back_to_back():
    """read_once's False ("nothing changed") is not a zero delay: one GET, then the interval."""
    client = FakeClient([nodeslo({})] * 1000)
    config = parse_args(["--node-name", "node-a", "--kubeconfig", "/nonexistent"])
    watch = NodeSLOWatch(config, poll_interval=3600.0, client_factory=lambda cfg: client)

    async def scenario():
        await watch.start()
        for _ in range(500):
            if client.asked:
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        await watch.stop()

    asyncio.run(scenario())
    assert len(client.asked) == 1
