"""Kubernetes mode: the node's Node object watched, its allocatable, labels and annotations
in the PodStore for the reports; host figures kept where the object has none or bad ones."""

from __future__ import annotations

from types import MappingProxyType

import pytest

from koordlet.statesinformer.model import NodeInfo
from koordlet.statesinformer.node_watch import NodeWatch, node_from_object
from koordlet.util.kube_client import KubeApi
from tests.koordlet.hubs_helper import config_of
from tests.polling import until

HOST = NodeInfo("node-1", capacity=MappingProxyType({"cpu": 8000, "memory": 32 << 30}),
                allocatable=MappingProxyType({"cpu": 8000, "memory": 32 << 30}))


def node(version: str, allocatable: dict, annotations: dict | None = None) -> dict:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "node-1", "resourceVersion": version, "labels": {"zone": "a"},
                         "annotations": annotations or {}},
            "status": {"capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"}, "allocatable": allocatable}}


def test_kubelets_allocatable_and_the_annotations_replace_the_host_figures():
    info, problem = node_from_object(node("5", {"cpu": "7500m", "memory": "30Gi"},
                                          {"katalyst.kubewharf.io/cpu_overcommit_ratio": "1.5"}), HOST)
    assert problem is None
    assert (info.allocatable["cpu"], info.allocatable["memory"]) == (7500, 30 << 30)
    assert info.capacity["pods"] == 110 and info.labels == {"zone": "a"}
    assert info.annotations["katalyst.kubewharf.io/cpu_overcommit_ratio"] == "1.5"


def test_a_node_with_bad_quantities_keeps_the_host_figures_and_says_why():
    info, problem = node_from_object(node("6", {"cpu": "lots"}), HOST)
    assert problem is not None and "status.allocatable.cpu" in problem
    assert info.allocatable == HOST.allocatable and info.labels == {"zone": "a"}


async def test_the_watch_feeds_the_store_through_the_real_client(tmp_path):
    pytest.importorskip("lightkube")
    from tests.koordlet.reporter.fake_apiserver import FakeApiServer, kubeconfig

    server = FakeApiServer()
    server.watch_scripts = [[{"type": "ADDED", "object": node("5", {"cpu": "7", "memory": "30Gi"})},
                             {"type": "MODIFIED", "object": node("7", {"cpu": "6", "memory": "30Gi"})}]]
    url = await server.start()
    config = config_of(kubeconfig=kubeconfig(tmp_path, url), node_name="node-1")
    seen: list[NodeInfo] = []
    watch = NodeWatch(KubeApi(config), HOST, seen.append)
    try:
        await watch.start()
        await until(lambda: len(seen) == 2 and len(server.watch_params) >= 2)
        assert watch.ready()
    finally:
        await watch.stop()
        await server.stop()
    assert [n.allocatable["cpu"] for n in seen] == [7000, 6000]
    assert server.watch_params[0]["fieldSelector"] == "metadata.name=node-1"
    assert server.watch_params[1]["resourceVersion"] == "7"  # resumed after the stream ended
    assert [r.path for r in server.requests if r.method == "WATCH"][0] == "/api/v1/nodes"


def test_the_agent_watches_the_node_only_in_kubernetes_mode(tmp_path, monkeypatch):
    from koordlet.statesinformer.agent import build
    from tests.koordlet.hubs_helper import hubs_for

    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    standalone = build(hubs_for(config_of(state_dir=tmp_path)))
    cluster = build(hubs_for(config_of(state_dir=tmp_path, kubeconfig=tmp_path / "kubeconfig")))
    assert [m.name for m in standalone.modules] == ["statesinformer"]
    assert [m.name for m in cluster.modules] == ["statesinformer", "node-watch"]
