"""The reporter module as the daemon runs it: built by its agent spec from the hubs, fed by
a real metric store and a StaticStates informer, answering on the HTTP endpoint, writing
the file, and sending to a local API server."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

import jsonschema
import pytest
from prometheus_client import CollectorRegistry

from koordlet.agent import Readiness
from koordlet.apis.qos import KoordQoSClass, PriorityBand
from koordlet.daemon.cli import parse_args
from koordlet.hubs import Hubs
from koordlet.metriccache.store import MetricStore
from koordlet.reporter import module as module_under_test
from koordlet.reporter import standalone
from koordlet.reporter.agent import SPEC as REPORTER
from koordlet.reporter.agent import settings_of
from koordlet.reporter.module import ReportsModule, Round
from koordlet.server.http_endpoint import HttpEndpoint
from koordlet.statesinformer.api import StaticStates
from koordlet.statesinformer.model import NodeInfo
from koordlet.util.host_facts import HostFacts
from koordlet.util.steps import PODS_PER_STEP
from koordlet.util.token_bucket import TokenBucket
from system.host import Host
from tests.koordlet.hubs_helper import built_daemon, config_of, hubs_for
from tests.koordlet.reporter.fixtures import GI, NOW, crd_schema, node_samples, pod, pod_samples, store
from tests.polling import LoopTurns, until

WEB = pod("web", KoordQoSClass.LS, PriorityBand.PROD, cpu_request=2000, memory_request=4 * GI)
SPARK = pod("spark", KoordQoSClass.BE, PriorityBand.BATCH)
NODE = NodeInfo("node-1", allocatable={"cpu": 16_000, "memory": 32 * GI})


def hubs(tmp_path: Path, *flags: str, cache: MetricStore | None = None, states=None,
         host: Host | None = None) -> Hubs:
    config = parse_args(["--node-name", "node-1", "--kubelet-root-dir", str(tmp_path / "kubelet"),
                         "--state-dir", str(tmp_path / "state"), *flags])
    http = HttpEndpoint("127.0.0.1", 0, CollectorRegistry(), lambda: Readiness(()))
    return hubs_for(config, http=http, facts=HostFacts(host) if host is not None else None,
                    states=states if states is not None else StaticStates(NodeInfo("node-1")),
                    metric_cache=cache if cache is not None else store())


def filled_cache() -> MetricStore:
    cache = store()
    cache.append(node_samples([3.0] * 600, [10 * GI] * 600))
    cache.append(pod_samples(WEB, 0.5, GI, seconds=600))
    cache.append(pod_samples(SPARK, 1.0, 2 * GI, seconds=600))
    return cache


def module_of(h: Hubs, clock=lambda: NOW) -> ReportsModule:
    [module] = REPORTER.build(h).modules
    module._clock = clock  # the store's samples are at NOW
    return module


def get(http: HttpEndpoint, path: str):
    """A route's answer, for routes that answer at once."""
    reply, _ = http.route("GET", path, False)
    return reply.status, json.loads(reply.body)


async def fetch(http: HttpEndpoint, path: str):
    """A route's answer as the endpoint gives it (the NodeMetric's is built in steps)."""
    reply, _ = await http.answer("GET", path, False)
    return reply.status, json.loads(reply.body)


async def test_standalone_routes_serve_documents_that_validate(tmp_path):
    h = hubs(tmp_path, cache=filled_cache(), states=StaticStates(NODE, [WEB, SPARK]))
    module = module_of(h)
    await module.prepare()
    try:
        await module.overcommit_once()
        status, node_metric = await fetch(h.http, "/apis/v1/nodemetric")
        assert status == 200
        jsonschema.validate(node_metric, crd_schema("slo.koordinator.sh_nodemetrics.yaml"))
        pods = {e["name"]: (e["priority"], e["qos"]) for e in node_metric["status"]["podsMetric"]}
        assert pods == {"web": ("koord-prod", "LS"), "spark": ("koord-batch", "BE")}
        status, kcnr = await fetch(h.http, "/apis/v1/overcommit")
        assert status == 200
        jsonschema.validate(kcnr, crd_schema("node.katalyst.kubewharf.io_customnoderesources.yaml"))
        annotations = kcnr["metadata"]["annotations"]
        assert float(annotations["katalyst.kubewharf.io/cpu_overcommit_ratio"]) >= 1
        assert float(annotations["katalyst.kubewharf.io/memory_overcommit_ratio"]) >= 1
        assert annotations["katalyst.kubewharf.io/overcommit_cpu_manager"] == "none"  # no kubelet state here
        assert annotations["katalyst.kubewharf.io/overcommit_memory_manager"] == "None"
        status, batch = await fetch(h.http, "/apis/v1/batchresources")
        assert status == 200 and set(batch["resources"]) == {"kubernetes.io/batch-cpu", "kubernetes.io/batch-memory"}
    finally:
        await module.stop()


async def test_routes_say_not_ready_before_any_usage(tmp_path):
    h = hubs(tmp_path, cache=store(), states=StaticStates(NODE))
    module = module_of(h)
    await module.prepare()
    try:
        assert await module.report_once() is Round.NOT_READY
        status, body = await fetch(h.http, "/apis/v1/nodemetric")
        assert status == 503 and body["ready"] is False
        assert (await fetch(h.http, "/apis/v1/overcommit"))[0] == 503
    finally:
        await module.stop()


async def test_routes_answer_over_a_real_socket(tmp_path):
    h = hubs(tmp_path, cache=filled_cache(), states=StaticStates(NODE, [WEB]))
    module = module_of(h)
    await h.http.start()
    await module.prepare()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", h.http.bound_port)
        writer.write(b"GET /apis/v1/nodemetric HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        raw = await reader.read()
        writer.close()
        head, _, body = raw.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200")
        assert json.loads(body)["status"]["podsMetric"][0]["name"] == "web"
    finally:
        await module.stop()
        await h.http.stop()


def many_pods(count: int) -> tuple[list, MetricStore]:
    pods = [pod("p%04d" % i, KoordQoSClass.LS, PriorityBand.PROD, cpu_request=100) for i in range(count)]
    cache = store()
    cache.append(node_samples([3.0] * 60, [10 * GI] * 60))
    for each in pods:
        cache.append(pod_samples(each, 0.1, GI, seconds=60))
    return pods, cache


async def test_a_get_of_the_nodemetric_lets_the_loop_run_while_it_is_built(tmp_path):
    pods, cache = many_pods(10 * PODS_PER_STEP)
    h = hubs(tmp_path, cache=cache, states=StaticStates(NODE, pods))
    module = module_of(h)
    await module.prepare()
    try:
        async with LoopTurns() as turns:
            status, document = await fetch(h.http, "/apis/v1/nodemetric")
    finally:
        await module.stop()
    assert status == 200 and len(document["status"]["podsMetric"]) == len(pods)
    assert turns.count >= 10  # at least a turn for the other task every PODS_PER_STEP pods


async def test_gets_and_a_report_round_at_once_share_one_build(tmp_path, monkeypatch):
    pods, cache = many_pods(4 * PODS_PER_STEP)
    h = hubs(tmp_path, cache=cache, states=StaticStates(NODE, pods))
    module = module_of(h)
    await module.prepare()
    builds = []
    real_steps = module_under_test.snapshot_steps
    monkeypatch.setattr(module_under_test, "snapshot_steps", lambda *a: builds.append(a) or real_steps(*a))
    try:
        *answers, sent = await asyncio.gather(*(fetch(h.http, "/apis/v1/nodemetric") for _ in range(5)),
                                              module.report_once())
        assert sent is Round.SENT and len(builds) == 1
        assert all(answer == answers[0] for answer in answers) and answers[0][0] == 200
        assert (await fetch(h.http, "/apis/v1/nodemetric")) == answers[0]  # within a second: no new build
        assert len(builds) == 1
        module._clock = lambda: NOW + 1  # a second later the next GET builds again
        assert (await fetch(h.http, "/apis/v1/nodemetric"))[0] == 200
        assert len(builds) == 2
    finally:
        await module.stop()


async def test_the_output_file_is_replaced_whole(tmp_path):
    out = tmp_path / "reports.json"
    h = hubs(tmp_path, "--report-output-file", str(out), cache=filled_cache(), states=StaticStates(NODE, [WEB]))
    module = module_of(h)
    await module.prepare()
    try:
        assert await module.report_once() is Round.SENT
        first = json.loads(out.read_text())
        assert first["nodeMetric"]["status"]["nodeMetric"]["nodeUsage"]["resources"] == {"cpu": "3", "memory": "10Gi"}
        assert await module.report_once() is Round.SENT
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".reports.json")] == []  # no temp left
    finally:
        await module.stop()


async def test_the_output_file_is_canonical_json_written_in_a_worker(tmp_path, monkeypatch):
    # the text: json.dumps' canonical text; the write: off the loop
    writers: list[bool] = []
    write = standalone.write_atomically

    def recording(*args, **kwargs) -> None:
        writers.append(threading.current_thread() is threading.main_thread())
        write(*args, **kwargs)

    monkeypatch.setattr(standalone, "write_atomically", recording)
    out = tmp_path / "reports.json"
    h = hubs(tmp_path, "--report-output-file", str(out), cache=filled_cache(), states=StaticStates(NODE, [WEB]))
    module = module_of(h)
    await module.prepare()
    try:
        assert await module.report_once() is Round.SENT
        text = out.read_text()
        assert text == json.dumps(json.loads(text), sort_keys=True, separators=(",", ":")) + "\n"
        assert writers == [False]
    finally:
        await module.stop()


async def test_an_unwritable_output_file_is_counted_and_retried(tmp_path):
    out = tmp_path / "missing-dir" / "reports.json"
    h = hubs(tmp_path, "--report-output-file", str(out), cache=filled_cache(), states=StaticStates(NODE, [WEB]))
    module = module_of(h)
    await module.prepare()
    try:
        assert await module.report_once() is Round.FAILED
        assert h.registry.get_sample_value("koordlet_reports_total", {
            "node": "node-1", "report": "nodemetric", "sink": "file", "result": "failed"}) == 1
        # the failed sink did not stop the standalone document from being built
        assert (await fetch(h.http, "/apis/v1/nodemetric"))[0] == 200
    finally:
        await module.stop()


async def test_without_pods_the_node_figures_are_still_reported(tmp_path):
    h = hubs(tmp_path, cache=filled_cache())
    module = module_of(h)
    await module.prepare()
    try:
        status, document = await fetch(h.http, "/apis/v1/nodemetric")
        assert status == 200 and document["status"]["podsMetric"] == []
    finally:
        await module.stop()


def test_katalyst_plugin_list_turns_the_advisor_off(tmp_path):
    assert settings_of(hubs(tmp_path).config).overcommit
    assert not settings_of(hubs(tmp_path, "--sysadvisor-plugins", "*,-overcommit_aware").config).overcommit
    assert not settings_of(hubs(tmp_path, "--feature-gates", "OvercommitReport=false").config).overcommit


def test_all_reports_off_builds_nothing(tmp_path):
    h = hubs(tmp_path, "--feature-gates", "OvercommitReport=false,NodeMetricReport=false,NodeTopologyReport=false",
             cache=store())
    assert not REPORTER.enabled(h.config) and REPORTER.enabled(hubs(tmp_path).config)


async def test_cluster_mode_sends_status_and_annotations_and_follows_the_spec(tmp_path):
    pytest.importorskip("lightkube")
    from tests.koordlet.reporter.fake_apiserver import FakeApiServer, kubeconfig

    server = FakeApiServer()
    url = await server.start()
    h = hubs(tmp_path, "--kubeconfig", str(kubeconfig(tmp_path, url)), cache=filled_cache(),
             states=StaticStates(NODE, [WEB]))
    server.put_object("customnoderesources", {"metadata": {"name": "node-1"}})
    module = module_of(h)
    await module.prepare()
    module._kube._limiter = TokenBucket(1000, 1000)  # koordlet's 0.1 QPS would skip the later rounds
    try:
        assert await module.report_once() is Round.SENT
        stored = server.objects[("nodemetrics", "node-1")]
        jsonschema.validate(stored, crd_schema("slo.koordinator.sh_nodemetrics.yaml"))
        assert stored["status"]["podsMetric"][0]["name"] == "web"
        # the API server is sent the status the route and the file keep, as that text
        assert stored["status"] == json.loads(module._latest.node_metric)["status"]
        await module.overcommit_once()
        await module.overcommit_once()  # unchanged ratios are not patched again
        assert len(server.calls("PATCH")) == 1
        annotations = server.objects[("customnoderesources", "node-1")]["metadata"]["annotations"]
        assert "katalyst.kubewharf.io/guaranteed_cpus" in annotations
        # the slo-controller narrows the windows: the next report follows
        stored["spec"] = {"metricCollectPolicy": {"nodeAggregatePolicy": {"durations": ["1m0s"]}}}
        assert await module.report_once() is Round.SENT  # sees the spec
        assert await module.report_once() is Round.SENT
        durations = [a["duration"] for a in
                     server.objects[("nodemetrics", "node-1")]["status"]["nodeMetric"]["aggregatedNodeUsages"]]
        assert durations == ["1m0s"]
        server.fail_with = 500
        assert await module.report_once() is Round.FAILED
        assert h.registry.get_sample_value("koordlet_reports_total", {
            "node": "node-1", "report": "nodemetric", "sink": "kubernetes", "result": "failed"}) == 1
    finally:
        await module.stop()
        await server.stop()


async def test_the_loops_run_report_and_stop_cleanly(tmp_path):
    out = tmp_path / "missing-dir" / "reports.json"
    h = hubs(tmp_path, "--report-output-file", str(out), cache=filled_cache(), states=StaticStates(NODE, [WEB]))
    [module] = REPORTER.build(h).modules
    module._clock = lambda: NOW
    await module.start()
    try:
        def value(name: str, labels: dict[str, str]) -> float:
            return h.registry.get_sample_value(name, {"node": "node-1", **labels}) or 0.0

        # both loops have run once (a 2 s poll of one of them failed on a busy host)
        await until(lambda: value("koordlet_realtime_overcommit_ratio", {"resource": "cpu"}) >= 1
                    and value("koordlet_reports_total", {"report": "nodemetric", "sink": "file", "result": "failed"}))
        assert module.ready()  # a failing sink does not end the loop
    finally:
        await module.stop()
    assert not module.ready()


async def test_a_host_without_proc_and_sys_still_reports_with_the_node_allocatable(tmp_path):
    h = hubs(tmp_path, cache=filled_cache(), states=StaticStates(NODE, [WEB]), host=Host.under(tmp_path / "empty-root"))
    module = module_of(h)
    await module.prepare()
    try:
        result = await module.overcommit_once()
        assert result.cpu_ratio > 1  # allocatable from the Node object (none at all would give exactly 1)
        assert await module.report_once() is Round.SENT
    finally:
        await module.stop()


def test_the_daemon_starts_the_reporter_after_the_metric_cache_and_before_http(tmp_path):
    from koordlet.agents import AGENTS

    assert REPORTER in AGENTS
    with built_daemon(config_of(state_dir=tmp_path, addr="127.0.0.1:0", node_name="node-1")) as daemon:
        names = [m.name for m in daemon._modules]
    assert names.index("metriccache") < names.index("reports") < names.index("http")


async def test_the_last_nodemetric_is_kept_as_its_text_which_the_route_and_the_file_give(tmp_path, monkeypatch):
    """A report keeps the NodeMetric as its canonical JSON text, not as dicts (three a pod):
    the route answers those bytes without writing them again within the second, and the
    file holds the same object beside the other reports."""
    encodings = []
    write = module_under_test.status_text_steps
    monkeypatch.setattr(module_under_test, "status_text_steps", lambda *a: encodings.append(a) or write(*a))
    out = tmp_path / "reports.json"
    h = hubs(tmp_path, "--report-output-file", str(out), cache=filled_cache(), states=StaticStates(NODE, [WEB, SPARK]))
    module = module_of(h)
    await module.prepare()
    try:
        assert await module.report_once() is Round.SENT
        kept = module._latest.node_metric
        assert type(kept) is bytes
        document = json.loads(kept)
        assert kept == json.dumps(document, sort_keys=True, separators=(",", ":")).encode()
        assert [e["name"] for e in document["status"]["podsMetric"]] == ["spark", "web"]
        reply, _ = await h.http.answer("GET", "/apis/v1/nodemetric", False)
        assert (reply.status, reply.body) == (200, kept + b"\n")
        assert len(encodings) == 1  # within the second: the kept text, not a new build nor text
        text = out.read_text()
        assert text == json.dumps(json.loads(text), sort_keys=True, separators=(",", ":")) + "\n"
        assert json.loads(text)["nodeMetric"] == document
        assert json.loads(text)["batchResources"]["node"] == "node-1"
    finally:
        await module.stop()
