"""deploy/grafana/koordlet.json against a real Prometheus scraping the real daemon: every
panel's PromQL evaluates without error over the run, every metric a panel names is one the
daemon exports, and the variables resolve to the scraped node.

With KOORDLET_DASHBOARD_PNG=<path> (see `make dashboard`) the run is also drawn into a PNG.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from tests.deploy.dashboard_run import DASHBOARD, dashboard_run, metric_names, panel_targets, prometheus_binary
from tests.koordlet.metrics.test_koordlet_names import registry_families, text_families
from tests.system.cgroup_sandbox import SandboxUnavailable

pytestmark = pytest.mark.kernel


def load() -> dict:
    return json.loads(DASHBOARD.read_text())


def with_sample_suffixes(families) -> set[str]:
    return {f + suffix for f in families for suffix in ("", "_total", "_bucket", "_sum", "_count")}


def exported_names(run) -> set[str]:
    """What the daemon of the run exports: every family its /metrics declares (with or
    without samples yet), plus the families its metric definitions give when each has a
    sample (evictions, CPI without a PMU, ... have none in a short run)."""
    _, body, _ = run.daemon.get("/metrics")
    declared = {line.split()[2] for line in body.decode().splitlines() if line.startswith("# TYPE ")}
    return with_sample_suffixes(declared | registry_families().keys() | text_families().keys())


def test_the_dashboard_is_grafana_json_with_a_query_in_every_panel():
    dashboard = load()
    assert dashboard["uid"] and dashboard["schemaVersion"] >= 36
    graphs = [p for p in dashboard["panels"] if p["type"] != "row"]
    assert len(graphs) >= 12
    assert all(p.get("targets") for p in graphs), [p["title"] for p in graphs if not p.get("targets")]
    assert len({p["id"] for p in dashboard["panels"]}) == len(dashboard["panels"])
    variables = {v["name"] for v in dashboard["templating"]["list"]}
    assert {"datasource", "instance", "job"} <= variables
    assert all('instance=~"$instance"' in expr for _, expr in
               ((p["title"], t["expr"]) for p in graphs for t in p["targets"])), "every query follows the node picker"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    if prometheus_binary() is None:
        pytest.skip("no prometheus binary (Debian's prometheus package; .ci/run installs it)")
    try:
        with dashboard_run(tmp_path_factory.mktemp("dashboard")) as running:
            yield running
    except SandboxUnavailable as exc:
        pytest.skip(str(exc))


def test_every_panel_query_evaluates_on_prometheus_and_the_variables_resolve(run):
    prometheus = run.prometheus
    # a few scrapes more so that rate() over the run has points to work with
    deadline = time.monotonic() + 60
    while prometheus.scalar('count_over_time(up{job="koordlet"}[1m])') < 8 and time.monotonic() < deadline:
        time.sleep(0.5)
    failed = {}
    for title, expr in panel_targets(load()):
        answer = prometheus.api("query_range", query=expr, start=str(run.started), end=str(time.time()), step="1")
        if answer.get("status") != "success":
            failed[title] = (expr, answer.get("error"))
    assert failed == {}
    instances = prometheus.api("label/instance/values", **{"match[]": "koordlet_build_info"})["data"]
    assert instances == ["127.0.0.1:%d" % run.daemon.port]


def test_the_pods_panels_show_the_spinning_best_effort_pod(run):
    """What the run drew is the node's real state: the BE spinner uses CPU, the idle LS pod
    little; the node's usage covers both."""
    prometheus = run.prometheus
    deadline = time.monotonic() + 60
    while prometheus.scalar('koordlet_pod_used_cpu_cores{pod_name="batch-job"}') < 0.3 and time.monotonic() < deadline:
        time.sleep(0.5)
    be = prometheus.scalar('koordlet_pod_used_cpu_cores{pod_name="batch-job"}')
    ls = prometheus.scalar('koordlet_pod_used_cpu_cores{pod_name="web"}')
    assert be > ls
    assert prometheus.scalar("koordlet_node_used_cpu_cores") >= be * 0.5


def test_the_run_is_drawn_when_asked(run):
    target = os.environ.get("KOORDLET_DASHBOARD_PNG")
    if not target:
        pytest.skip("set KOORDLET_DASHBOARD_PNG=<path> (make dashboard) to draw the run")
    from tests.deploy.dashboard_png import draw

    seconds = float(os.environ.get("KOORDLET_DASHBOARD_SECONDS", "120"))
    deadline = run.started + seconds
    while time.time() < deadline:
        time.sleep(1)
    draw(load(), run.prometheus, run.started, time.time(), Path(target))
    assert Path(target).stat().st_size > 10_000


def test_every_panel_metric_is_one_the_daemon_exports(run):
    exported = exported_names(run)
    named = {name for _, expr in panel_targets(load()) for name in metric_names(expr)}
    assert named and named - exported == set()
