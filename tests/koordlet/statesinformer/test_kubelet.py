"""kubelet's /pods: the PodList parser and the HTTP poll against a local server."""

from __future__ import annotations

import json

import pytest

from koordlet.statesinformer.from_kubelet import PodListError, parse_pod_list
from koordlet.statesinformer.kubelet_client import KubeletClient, KubeletError, PodsUrl
from system.cgroup_layout import QoSTier
from tests.koordlet.statesinformer.kubelet_server import FakeKubelet, pod_json

UID = "5e1c0d8a-1111-4222-8333-444455556666"


def test_a_pod_list_gives_priority_qos_labels_and_container_specs() -> None:
    doc = {"items": [pod_json(UID, priority=9500, qos="Guaranteed", labels={"koordinator.sh/qosClass": "LSR"},
                              containers=[{"name": "main", "resources": {
                                  "requests": {"cpu": "2", "memory": "1Gi", "kubernetes.io/batch-cpu": "500"},
                                  "limits": {"cpu": "2", "memory": "1Gi"}}},
                                  {"name": "side"}])]}
    (pod,) = parse_pod_list(json.dumps(doc))
    assert (pod.uid, pod.name, pod.namespace) == (UID, "web", "default")
    assert (pod.priority, pod.priority_class_name, pod.k8s_qos) == (9500, "koord-prod", QoSTier.GUARANTEED)
    assert pod.labels == {"koordinator.sh/qosClass": "LSR"}
    main = pod.container_specs["main"]
    assert dict(main.requests) == {"cpu": 2000, "memory": 1 << 30, "kubernetes.io/batch-cpu": 500}
    assert dict(main.limits) == {"cpu": 2000, "memory": 1 << 30}
    assert dict(pod.container_specs["side"].requests) == {}


def test_init_containers_have_specs_too_and_missing_fields_are_unset() -> None:
    doc = {"items": [{"metadata": {"uid": UID}, "spec": {
        "initContainers": [{"name": "init", "resources": {"limits": {"cpu": "100m"}}}], "containers": []}}]}
    (pod,) = parse_pod_list(json.dumps(doc))
    assert (pod.priority, pod.k8s_qos, pod.name) == (None, None, "")
    assert dict(pod.container_specs["init"].limits) == {"cpu": 100}


@pytest.mark.parametrize("body", [
    "not json", "[]", '{"items": {}}', '{"items": [3]}', '{"items": [{"metadata": {}}]}',
    '{"items": [{"metadata": {"uid": "u"}, "spec": {"priority": "high"}}]}',
    '{"items": [{"metadata": {"uid": "u", "labels": {"a": 1}}}]}',
    '{"items": [{"metadata": {"uid": "u"}, "spec": {"containers": [{"resources": {}}]}}]}',
    '{"items": [{"metadata": {"uid": "u"}, "spec": {"containers": [{"name": "c", "resources": '
    '{"requests": {"cpu": "lots"}}}]}}]}',
])
def test_a_malformed_pod_list_is_rejected_whole(body: str) -> None:
    with pytest.raises(PodListError):
        parse_pod_list(body)


def test_an_unknown_qos_class_reads_as_unknown() -> None:
    (pod,) = parse_pod_list(json.dumps({"items": [pod_json(UID, qos="Platinum")]}))
    assert pod.k8s_qos is None


@pytest.mark.parametrize("url", ["127.0.0.1:10255/pods", "http:///pods", "ftp://127.0.0.1/pods", "https://:10250/"])
def test_only_http_and_https_urls(url: str) -> None:
    with pytest.raises(ValueError):
        PodsUrl.parse(url)


@pytest.mark.parametrize(("url", "where", "host"), [
    ("https://10.0.0.7:10250/pods", PodsUrl("10.0.0.7", 10250, "/pods", True), "10.0.0.7:10250"),
    ("https://node-a/pods/", PodsUrl("node-a", 443, "/pods/", True), "node-a"),
    ("http://127.0.0.1:10255", PodsUrl("127.0.0.1", 10255, "/pods", False), "127.0.0.1:10255"),
    ("http://[fd00::7]/pods?x=1", PodsUrl("fd00::7", 80, "/pods?x=1", False), "[fd00::7]"),
])
def test_a_url_gives_where_to_connect_and_the_host_header(url: str, where: PodsUrl, host: str) -> None:
    assert PodsUrl.parse(url) == where
    assert where.host_header() == host


@pytest.fixture
async def kubelet():
    server = FakeKubelet()
    await server.start()
    yield server
    await server.stop()


@pytest.mark.parametrize("chunked", [False, True])
async def test_poll_reads_the_pods(kubelet: FakeKubelet, chunked: bool) -> None:
    kubelet.pods = [pod_json(UID, priority=5500, qos="BestEffort")]
    kubelet.chunked = chunked
    (pod,) = await KubeletClient(kubelet.url).pods()
    assert (pod.uid, pod.priority, pod.k8s_qos) == (UID, 5500, QoSTier.BESTEFFORT)
    assert kubelet.requests[0].startswith(b"GET /pods HTTP/1.1\r\n")


async def test_an_http_error_is_a_kubelet_error(kubelet: FakeKubelet) -> None:
    kubelet.status = 404
    with pytest.raises(KubeletError, match="HTTP 404"):
        await KubeletClient(kubelet.url).pods()


async def test_a_bad_body_is_a_kubelet_error(kubelet: FakeKubelet) -> None:
    kubelet.body = b'{"items": [{"metadata": {}}]}'
    with pytest.raises(KubeletError, match="metadata.uid"):
        await KubeletClient(kubelet.url).pods()


async def test_nobody_listening_is_a_kubelet_error(kubelet: FakeKubelet) -> None:
    url = kubelet.url
    await kubelet.stop()
    with pytest.raises(KubeletError):
        await KubeletClient(url, timeout_s=1.0).pods()


async def test_each_answered_request_is_observed_with_its_path_and_code(kubelet: FakeKubelet) -> None:
    """koordlet_kubelet_request_duration_seconds{verb,path,code}: what the client measured."""
    seen: list[tuple[str, str, float]] = []
    client = KubeletClient(kubelet.url, observe=lambda path, code, seconds: seen.append((path, code, seconds)))
    await client.pods()
    kubelet.status = 403
    with pytest.raises(KubeletError):
        await client.pods()
    assert [(path, code) for path, code, _ in seen] == [("/pods", "200"), ("/pods", "403")]
    assert all(seconds >= 0 for _, _, seconds in seen)
