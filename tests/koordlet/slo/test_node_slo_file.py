"""--node-slo-config: loaded at start, reloaded on change, last good kept on a bad file."""

from __future__ import annotations

import asyncio
import json
import os

from koordlet.slo.node_slo import CPUSuppressPolicy, NodeSLO
from koordlet.slo.source import NodeSLOFile
from tests.polling import until


def write(path, text: str, bump: int = 0) -> None:
    path.write_text(text)
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + bump))  # same-size edits still look new


async def test_reload_on_change_and_last_good_kept(tmp_path, capsys):
    path = tmp_path / "nodeslo.yaml"
    write(path, "resourceUsedThresholdWithBE: {enable: true, cpuSuppressThresholdPercent: 65,"
                " cpuSuppressPolicy: cpuset}\n")
    source = NodeSLOFile(path)
    seen: list[NodeSLO] = []
    source.subscribe(seen.append)
    assert await source.reload()
    good = source.current()
    assert good.resource_used_threshold_with_be.enable
    assert await source.poll() is False  # unchanged file: not read again

    write(path, "resourceUsedThresholdWithBE: {enable: true, cpuSuppressPolicy: cfsQuota}\n", 1)
    assert await source.poll()
    assert source.current().resource_used_threshold_with_be.cpu_suppress_policy is CPUSuppressPolicy.CFS_QUOTA
    good = source.current()

    write(path, "resourceQOSStrategy: {beClass: {resctrlQOS: {mbaPercent: 55}}}\n", 2)
    assert await source.poll() is False
    assert source.current() is good
    assert "resourceQOSStrategy.beClass.resctrlQOS.mbaPercent" in (source.last_error or "")
    assert "node_slo_rejected" in capsys.readouterr().out

    write(path, "{not yaml", 3)
    assert await source.poll() is False and source.current() is good
    path.unlink()
    assert await source.poll() is False and source.current() is good
    assert len(seen) == 2  # two accepted changes, nothing for the refused ones


async def test_json_file_and_whole_object(tmp_path):
    path = tmp_path / "nodeslo.json"
    path.write_text(json.dumps({"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeSLO",
                                "spec": {"cpuBurstStrategy": {"policy": "auto"}}}))
    source = NodeSLOFile(path)
    await source.reload()
    assert source.current().cpu_burst_strategy.policy.value == "auto"
    path.write_text("policy: auto\n")  # YAML is not JSON
    await source.reload()
    assert source.last_error and "not valid JSON" in source.last_error


def test_module_watches_the_file(tmp_path):
    path = tmp_path / "nodeslo.yaml"
    path.write_text("resourceUsedThresholdWithBE: {enable: false}\n")

    async def scenario() -> bool:
        source = NodeSLOFile(path, poll_interval=0.01)
        await source.start()
        write(path, "resourceUsedThresholdWithBE: {enable: true}\n", 5)
        await until(lambda: source.current().resource_used_threshold_with_be.enable)
        await source.stop()
        return source.current().resource_used_threshold_with_be.enable

    assert asyncio.run(scenario())


async def test_route_shows_the_nodeslo_in_force_and_the_refusal(tmp_path):
    from prometheus_client import CollectorRegistry

    from koordlet.agent import Readiness
    from koordlet.daemon.cli import parse_args
    from koordlet.server.http_endpoint import HttpEndpoint
    from koordlet.slo.agent import SPEC as NODE_SLO
    from tests.koordlet.hubs_helper import hubs_for

    path = tmp_path / "slo.yaml"
    path.write_text("resourceUsedThresholdWithBE: {enable: true}\n")
    http = HttpEndpoint("127.0.0.1", 0, CollectorRegistry(), lambda: Readiness(()))
    hubs = hubs_for(parse_args(["--node-slo-config", str(path), "--state-dir", str(tmp_path)]), http=http)
    (source,) = NODE_SLO.build(hubs).modules
    await source.reload()
    write(path, "resourceUsedThresholdWithBE: {enable: true, cpuSuppressThresholdPercent: 650}\n", 9)
    await source.poll()
    reply, _ = http.route("GET", "/api/v1/nodeslo", False)
    body = json.loads(reply.body)
    assert body["spec"]["resourceUsedThresholdWithBE"]["enable"] is True
    assert body["spec"]["resourceUsedThresholdWithBE"]["cpuSuppressThresholdPercent"] == 65
    assert "resourceUsedThresholdWithBE.cpuSuppressThresholdPercent" in body["lastError"]


def test_validated_source_takes_cluster_objects_and_keeps_the_last_good():
    from koordlet.slo.source import ValidatedNodeSLO

    source = ValidatedNodeSLO()
    event = {"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeSLO", "metadata": {"name": "node-a"},
             "spec": {"resourceUsedThresholdWithBE": {"enable": True, "cpuSuppressThresholdPercent": 40}}}
    assert source.apply(event, "NodeSLO/node-a")
    good = source.current()
    assert good.resource_used_threshold_with_be.cpu_suppress_threshold_percent == 40
    event["spec"]["resourceUsedThresholdWithBE"]["cpuEvictBESatisfactionLowerPercent"] = 70
    event["spec"]["resourceUsedThresholdWithBE"]["cpuEvictBESatisfactionUpperPercent"] = 60
    assert not source.apply(event, "NodeSLO/node-a")
    assert source.current() is good
    assert "cpuEvictBESatisfactionLowerPercent" in source.last_error



async def test_the_watch_reads_once_per_interval_not_back_to_back(tmp_path):
    path = tmp_path / "nodeslo.yaml"
    write(path, "resourceUsedThresholdWithBE: {enable: true}\n")
    source = NodeSLOFile(path, poll_interval=3600.0)
    await source.start()
    try:
        source.reread()  # one round now; the next one an hour later
        await until(lambda: source._watch.rounds >= 1)
        await asyncio.sleep(0.05)
        assert source._watch.rounds == 1 and source._watch.failures == 0
    finally:
        await source.stop()
