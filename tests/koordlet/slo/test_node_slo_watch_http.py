"""The NodeSLO watch through the daemon's real lightkube client against a local server that
streams watch events as the API server does: the field selector and resourceVersion it
sends, resuming after an ended stream, a 410 ERROR event restarting without a version."""

from __future__ import annotations

import pytest

pytest.importorskip("lightkube")

from koordlet.slo.cluster_watch import NodeSLOWatch  # noqa: E402
from koordlet.util.kube_client import KubeApi  # noqa: E402
from tests.koordlet.hubs_helper import config_of  # noqa: E402
from tests.koordlet.reporter.fake_apiserver import (  # noqa: E402
    FakeApiServer,
    gone_event,
    kubeconfig,  # noqa: E402
)
from tests.polling import until  # noqa: E402

NODE = "node-1"


def nodeslo(spec: dict, version: str) -> dict:
    return {"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeSLO",
            "metadata": {"name": NODE, "resourceVersion": version}, "spec": spec}


async def test_the_watch_resumes_relists_on_410_and_keeps_the_last_good(tmp_path):
    server = FakeApiServer()
    server.watch_scripts = [
        [{"type": "ADDED", "object": nodeslo({"resourceUsedThresholdWithBE": {"enable": True}}, "10")}],
        [gone_event()],
        [{"type": "ADDED", "object": nodeslo({"resourceUsedThresholdWithBE": {"enable": True}}, "10")},
         {"type": "MODIFIED", "object": nodeslo({"resourceUsedThresholdWithBE": {"cpuSuppressThresholdPercent": 101}},
                                                "12")}],
    ]
    url = await server.start()
    config = config_of(kubeconfig=kubeconfig(tmp_path, url), node_name=NODE)
    watch = NodeSLOWatch(config, KubeApi(config))
    try:
        await watch.start()
        await until(lambda: len(server.watch_params) >= 4 and watch.refusals == 1, timeout=30)
    finally:
        await watch.stop()
        await server.stop()
    params = server.watch_params
    assert all(p["fieldSelector"] == "metadata.name=" + NODE and p["watch"] == "true" for p in params)
    assert [p.get("resourceVersion") for p in params[:4]] == [None, "10", None, "12"]
    assert watch.watch.relists == 1
    assert watch.current().resource_used_threshold_with_be.enable  # version 12 refused: 10's spec stays
    assert watch.source() == "NodeSLO/node-1 resourceVersion 12" and "cpuSuppressThresholdPercent" in watch.last_error
    watches = [r for r in server.requests if r.method == "WATCH"]
    assert watches[0].path == "/apis/slo.koordinator.sh/v1alpha1/nodeslos"
    assert watches[0].headers["user-agent"].startswith("koordlet-py/")
