"""The Kubernetes sink over HTTP, through the agent's own client (open_kube_client with a
kubeconfig) against a local server with the API server's status-subresource rules."""


import pytest

pytest.importorskip("lightkube")

from koordlet.reporter.kube_sink import CONFLICT_RETRIES, KubeSink, Outcome, SinkError  # noqa: E402
from koordlet.reporter.nodemetric import node_metric_object  # noqa: E402
from koordlet.reporter.policy import MetricCollectPolicy  # noqa: E402
from koordlet.util.json_text import canonical_json  # noqa: E402
from koordlet.util.kube_client import KubeClientError, open_kube_client  # noqa: E402
from koordlet.util.token_bucket import TokenBucket  # noqa: E402
from tests.koordlet.hubs_helper import config_of  # noqa: E402
from tests.koordlet.reporter.fake_apiserver import FakeApiServer, kubeconfig  # noqa: E402

NODE = "node-1"
STATUS = {"updateTime": "2027-01-15T08:00:00Z",
          "nodeMetric": {"nodeUsage": {"resources": {"cpu": "1500m", "memory": "2Gi"}}}}
STATUS_TEXT = canonical_json(STATUS)
NEW_OBJECT = node_metric_object(NODE, MetricCollectPolicy(), None)


@pytest.fixture
async def api(tmp_path):
    server = FakeApiServer()
    url = await server.start()
    client = open_kube_client(config_of(kubeconfig=kubeconfig(tmp_path, url)))
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    sink = KubeSink(client, NODE, TokenBucket(1000, 1000), sleep=sleep)
    sink.waits = waits  # type: ignore[attr-defined]
    yield server, sink
    await client.close()
    await server.stop()


async def test_a_missing_nodemetric_is_created_then_its_status_written(api):
    server, sink = api
    assert await sink.write_status(STATUS_TEXT, NEW_OBJECT) is Outcome.WRITTEN
    stored = server.objects[("nodemetrics", NODE)]
    assert stored["status"] == STATUS
    assert stored["spec"]["metricCollectPolicy"]["reportIntervalSeconds"] == 60
    assert [(r.method, r.path) for r in server.requests] == [
        ("GET", "/apis/slo.koordinator.sh/v1alpha1/nodemetrics/node-1"),
        ("POST", "/apis/slo.koordinator.sh/v1alpha1/nodemetrics"),
        ("PUT", "/apis/slo.koordinator.sh/v1alpha1/nodemetrics/node-1/status"),
    ]
    assert server.calls("GET")[0].status == 404


async def test_the_status_put_carries_the_current_resource_version(api):
    server, sink = api
    server.put_object("nodemetrics", {"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric",
                                      "metadata": {"name": NODE}, "spec": {}})
    version = server.objects[("nodemetrics", NODE)]["metadata"]["resourceVersion"]
    assert await sink.write_status(STATUS_TEXT, NEW_OBJECT) is Outcome.WRITTEN
    put = server.calls("PUT")[0]
    assert put.body["metadata"]["resourceVersion"] == version
    assert put.body["status"] == STATUS
    assert not server.calls("POST")


async def test_the_status_goes_as_the_report_text_with_the_field_manager(api):
    server, sink = api
    server.put_object("nodemetrics", {"metadata": {"name": NODE}, "spec": {}})
    assert await sink.write_status(STATUS_TEXT, NEW_OBJECT) is Outcome.WRITTEN
    put = server.calls("PUT")[0]
    assert put.path == "/apis/slo.koordinator.sh/v1alpha1/nodemetrics/node-1/status"
    assert put.query == {"fieldManager": "koordlet"}
    assert put.headers["content-type"] == "application/json"
    assert put.body == {"metadata": {"name": NODE, "resourceVersion": put.body["metadata"]["resourceVersion"]},
                        "spec": {}, "status": STATUS}


@pytest.mark.parametrize("order", [("apiVersion", "kind", "metadata", "spec", "status"),  # the API server's
                                   ("status", "spec", "metadata", "kind", "apiVersion")])
async def test_the_next_put_follows_the_answer_whatever_its_key_order(api, order):
    server, sink = api
    server.answer_key_order = order
    server.put_object("nodemetrics", {"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric",
                                      "metadata": {"name": NODE}, "spec": {"metricCollectPolicy": {}}})
    for _ in range(3):
        assert await sink.write_status(STATUS_TEXT, NEW_OBJECT) is Outcome.WRITTEN
    puts = server.calls("PUT")
    assert [p.status for p in puts] == [200, 200, 200]
    assert len(server.calls("GET")) == 1  # each next PUT carried the version the last answer gave
    assert all(set(p.body) == {"apiVersion", "kind", "metadata", "spec", "status"} for p in puts)
    assert sink.last_spec == {"metricCollectPolicy": {}}


async def test_an_answer_that_is_no_object_is_a_sink_error_and_the_next_write_reads_again(api):
    server, sink = api
    server.put_object("nodemetrics", {"metadata": {"name": NODE}, "spec": {}})
    server.put_answer = b'["not", "an", "object"]'
    with pytest.raises(SinkError, match="not an object"):
        await sink.write_status(STATUS_TEXT, NEW_OBJECT)
    server.put_answer = None
    assert await sink.write_status(STATUS_TEXT, NEW_OBJECT) is Outcome.WRITTEN
    assert len(server.calls("GET")) == 2
    assert server.objects[("nodemetrics", NODE)]["status"] == STATUS


async def test_a_conflict_is_retried_with_the_fresh_object(api):
    server, sink = api
    server.put_object("nodemetrics", {"metadata": {"name": NODE}, "spec": {}})
    server.concurrent_writes = 2  # someone else writes before each of our next two PUTs
    assert await sink.write_status(STATUS_TEXT, NEW_OBJECT) is Outcome.WRITTEN
    puts = server.calls("PUT")
    assert [p.status for p in puts] == [409, 409, 200]
    # each retry read the object again and sent the version it read
    assert len(server.calls("GET")) == 3
    assert len({p.body["metadata"]["resourceVersion"] for p in puts}) == 3
    assert server.objects[("nodemetrics", NODE)]["status"] == STATUS
    # a wait before each retry, growing x5 from 10 ms, jittered by at most 10 %
    assert len(sink.waits) == 2
    for attempt, wait in enumerate(sink.waits, start=1):
        base = 0.010 * 5 ** (attempt - 1)
        assert base <= wait <= base * 1.1


async def test_the_status_put_leaves_the_managed_fields_out(api):
    server, sink = api
    server.put_object("nodemetrics", {"metadata": {"name": NODE, "managedFields": [
        {"manager": "koordlet", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {}}}]},
        "spec": {}})
    assert await sink.write_status(STATUS_TEXT, NEW_OBJECT) is Outcome.WRITTEN
    put = server.calls("PUT")[0]
    assert "managedFields" not in put.body["metadata"] and put.body["metadata"]["name"] == NODE


async def test_every_request_names_the_agent_and_a_warning_is_logged_once(api):
    from structlog.testing import capture_logs

    from koordlet import __version__

    server, sink = api
    server.warning = '299 - "unknown field \\"status.x\\""'
    with capture_logs() as logs:
        for _ in range(3):
            assert await sink.write_status(STATUS_TEXT, NEW_OBJECT) is Outcome.WRITTEN
    agents = {r.headers.get("user-agent") for r in server.requests}
    assert len(agents) == 1 and next(iter(agents)).startswith("koordlet-py/%s (linux/" % __version__)
    assert [e["event"] for e in logs].count("kube_api_warning") == 1


async def test_endless_conflicts_give_up_with_an_error(api):
    server, sink = api
    server.put_object("nodemetrics", {"metadata": {"name": NODE}, "spec": {}})
    server.concurrent_writes = 100
    with pytest.raises(SinkError, match="conflicting"):
        await sink.write_status(STATUS_TEXT, NEW_OBJECT)
    assert len(server.calls("PUT")) == CONFLICT_RETRIES


async def test_a_server_error_is_a_sink_error_and_writes_nothing(api):
    server, sink = api
    server.fail_with = 500
    with pytest.raises(SinkError):
        await sink.write_status(STATUS_TEXT, NEW_OBJECT)
    assert ("nodemetrics", NODE) not in server.objects


async def test_rate_limited_rounds_send_nothing(tmp_path):
    server = FakeApiServer()
    url = await server.start()
    client = open_kube_client(config_of(kubeconfig=kubeconfig(tmp_path, url)))
    now = [0.0]
    sink = KubeSink(client, NODE, TokenBucket(0.1, 2, clock=lambda: now[0]))
    try:
        outcomes = [await sink.write_status(STATUS_TEXT, NEW_OBJECT) for _ in range(3)]
        assert outcomes == [Outcome.WRITTEN, Outcome.WRITTEN, Outcome.RATE_LIMITED]
        now[0] = 10.0  # one token back after 1/0.1 s
        assert await sink.write_status(STATUS_TEXT, NEW_OBJECT) is Outcome.WRITTEN
        assert len(server.calls("PUT")) == 3
    finally:
        await client.close()
        await server.stop()


async def test_spec_is_read_from_the_cluster_object(api):
    server, sink = api
    assert await sink.node_metric_spec() is None
    server.put_object("nodemetrics", {"metadata": {"name": NODE},
                                      "spec": {"metricCollectPolicy": {"reportIntervalSeconds": 90}}})
    assert await sink.node_metric_spec() == {"metricCollectPolicy": {"reportIntervalSeconds": 90}}


async def test_kcnr_annotations_are_merge_patched(api):
    server, sink = api
    annotations = {"katalyst.kubewharf.io/cpu_overcommit_ratio": "1.59"}
    assert await sink.patch_annotations(annotations) is Outcome.NOT_FOUND
    server.put_object("customnoderesources", {"metadata": {"name": NODE, "annotations": {"keep": "me"}}})
    assert await sink.patch_annotations(annotations) is Outcome.WRITTEN
    patch = server.calls("PATCH")[-1]
    assert patch.path == "/apis/node.katalyst.kubewharf.io/v1alpha1/customnoderesources/node-1"
    assert patch.body == {"metadata": {"annotations": annotations}}
    assert server.objects[("customnoderesources", NODE)]["metadata"]["annotations"] == {
        "keep": "me", "katalyst.kubewharf.io/cpu_overcommit_ratio": "1.59"}


def test_an_unusable_kubeconfig_is_a_clear_error(tmp_path):
    (tmp_path / "bad").write_text("clusters: [")
    with pytest.raises(KubeClientError, match="kubeconfig"):
        open_kube_client(config_of(kubeconfig=tmp_path / "bad"))


async def test_a_second_report_puts_over_the_last_answer_without_a_get(api):
    server, sink = api
    server.put_object("nodemetrics", {"metadata": {"name": NODE}, "spec": {"metricCollectPolicy": {}}})
    for _ in range(3):
        assert await sink.write_status(STATUS_TEXT, NEW_OBJECT) is Outcome.WRITTEN
    assert [r.method for r in server.requests] == ["GET", "PUT", "PUT", "PUT"]
    assert server.objects[("nodemetrics", NODE)]["status"] == STATUS
    assert "status" not in sink._written  # the answer's copy is not held until the next report
    # someone edits the spec: our next PUT carries a stale version, is refused, and the retry reads it
    server.objects[("nodemetrics", NODE)]["spec"] = {"metricCollectPolicy": {"reportIntervalSeconds": 120}}
    server.objects[("nodemetrics", NODE)]["metadata"]["resourceVersion"] = "999"
    assert await sink.write_status(STATUS_TEXT, NEW_OBJECT) is Outcome.WRITTEN
    assert [(r.method, r.status) for r in server.requests[4:]] == [("PUT", 409), ("GET", 200), ("PUT", 200)]
    assert sink.last_spec == {"metricCollectPolicy": {"reportIntervalSeconds": 120}}
