"""How long a GET of a route whose document grows with the pods holds the event loop.

    python -m bench.route_holds [--pods 1000,3000] [--runs 10]

In process, at N pods, one GET at a time answered by HttpEndpoint.answer (the daemon's path
for every request but the socket) while the loop runs a ticker that records the longest gap
between two of its turns: the longest the loop could not run.
- /apis/v1/nodemetric: the reporter's ReportsModule over a metric store filled as
  bench.nodemetric_build fills it (N pods, 300 s of samples), its route as the daemon
  registers it; the module's clock moves 2 s a GET, so every GET builds a new report.
- /api/v1/pods: the hook engine of bench.runtime_hooks knowing N pods; the route's two parts
  (engine.plans_json_steps, then http_endpoint.json_reply_in_worker) as
  RuntimeHooksModule.pods_route composes them (the module itself needs a runtime to start).
Each also answered in one go, in the loop's callback, as both routes did before:
take_snapshot + status_document + json_reply, and plans_json + json_reply.
The daemon's collector policy (koordlet/daemon/gc_policy.py) is applied once both are set up.
Floor, same run: the longest gap while a worker under render_in_worker spins in Python for as
long as the one-go answer's CPU (bench.report_file's floor: what any work beside the loop
costs the loop on this host). Also the loop CPU of a GET both ways (process time of the
whole answer, workers included).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import tempfile
import time
from typing import Any, Awaitable, Callable

from bench.daemon_scale import pct
from bench.nodemetric_build import NOW, fill, make_pods
from bench.report_file import longest_gaps, spin
from bench.runtime_hooks import known, workload
from koordlet.agent import Readiness
from koordlet.daemon.cli import compose
from koordlet.daemon.gc_policy import apply_after_start_up
from koordlet.daemon.logs import configure_logging
from koordlet.metriccache.retention import RetentionPolicy
from koordlet.metriccache.store import MetricStore
from koordlet.metrics.client import CollectorRegistry
from koordlet.reporter.agent import settings_of
from koordlet.reporter.module import Allocatable, ReportsModule
from koordlet.reporter.nodemetric import PodRows, node_metric_object, status_document, take_snapshot
from koordlet.reporter.report_metrics import ReportMetrics
from koordlet.reporter.resource_managers import KubeletStateFiles
from koordlet.reporter.standalone import NODEMETRIC_ROUTE, LatestReports, add_routes
from koordlet.runtimehooks.engine import plans_json, plans_json_steps
from koordlet.runtimehooks.hook_config import HookConfig
from koordlet.server.http_endpoint import HttpEndpoint, Reply, json_reply, json_reply_in_worker
from koordlet.statesinformer.api import StaticStates
from koordlet.statesinformer.model import NodeInfo
from koordlet.util.steps import run_steps_on_loop
from koordlet.util.switch_interval import render_in_worker

NODE = "bench-node"
PODS_ROUTE = "/api/v1/pods"


class Clock:
    """The reporter's clock: moved on by the bench, 2 s a GET (past the route's 1 s refresh)."""

    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


def nodemetric_endpoint(pods: int, tmp_kubelet: str) -> tuple[HttpEndpoint, Clock, Callable[[str], Reply]]:
    """The endpoint with the reporter's routes over N pods, and the one-go answer of main."""
    infos = tuple(make_pods(pods))
    store = MetricStore(RetentionPolicy(), clock=lambda: NOW)
    fill(store, infos)
    config = compose({"node-name": NODE, "kubelet-root-dir": tmp_kubelet})
    settings = settings_of(config)
    registry = CollectorRegistry()
    http = HttpEndpoint("127.0.0.1", 0, registry, lambda: Readiness(()))
    latest = LatestReports(NODE)
    add_routes(http, latest)
    clock = Clock()
    states = StaticStates(NodeInfo(NODE), list(infos))
    ReportsModule(settings, states, store, KubeletStateFiles(), ReportMetrics(registry, NODE), latest,
                  lambda: Allocatable(64_000, 256 << 30), clock=clock, registry=registry)
    rows = PodRows(store.shared_key)

    def one_go(_query: str) -> Reply:
        snapshot = take_snapshot(store, states.pods(), settings.policy, clock(), rows)
        assert snapshot is not None
        return json_reply(node_metric_object(NODE, settings.policy, status_document(snapshot)))

    return http, clock, one_go


def pods_answers(pods: int) -> tuple[Callable[[], Awaitable[Reply]], Callable[[], Reply]]:
    """/api/v1/pods' answer as the route builds it, and in one go."""
    _, engine = known(workload(pods), HookConfig(node_cpus=frozenset(range(64))))

    async def stepped() -> Reply:
        return await json_reply_in_worker(await run_steps_on_loop(plans_json_steps(engine.plans())))

    return stepped, lambda: json_reply(plans_json(engine.plans()))


def cpu_ms(answer: Callable[[], Awaitable[Any]], runs: int) -> float:
    async def timed() -> list[float]:
        samples = []
        for _ in range(runs):
            start = time.process_time()
            await answer()
            samples.append((time.process_time() - start) * 1e3)
        return samples

    return pct(asyncio.run(timed()), 0.5)


def row(route: str, pods: int, body: bytes, one_go: Callable[[], Awaitable[Any]],
        daemon: Callable[[], Awaitable[Any]], runs: int) -> dict[str, Any]:
    one_go_cpu = cpu_ms(one_go, runs)
    daemon_cpu = cpu_ms(daemon, runs)
    old = asyncio.run(longest_gaps(one_go, runs))
    new = asyncio.run(longest_gaps(daemon, runs))
    floor = asyncio.run(longest_gaps(lambda: render_in_worker(spin, one_go_cpu / 1e3), runs))
    return {"route": route, "pods": pods, "bytes": len(body), "one_go_cpu_ms": one_go_cpu, "daemon_cpu_ms": daemon_cpu,
            "one_go_gap_ms_p50": pct(old, 0.5), "one_go_gap_ms_max": max(old),
            "daemon_gap_ms_p50": pct(new, 0.5), "daemon_gap_ms_max": max(new),
            "floor_gap_ms_p50": pct(floor, 0.5), "floor_gap_ms_max": max(floor),
            "gap_ratio_p50": pct(new, 0.5) / pct(floor, 0.5)}


def measure(pods: int, runs: int, kubelet_dir: str) -> list[dict[str, Any]]:
    http, clock, one_go_nodemetric = nodemetric_endpoint(pods, kubelet_dir)
    ticks = itertools.count(1)

    async def daemon_nodemetric() -> Reply:
        clock.now = NOW + 2 * next(ticks)  # a second and more since the last build: the route builds anew
        reply, _ = await http.answer("GET", NODEMETRIC_ROUTE, False)
        assert reply.status == 200, reply.body
        return reply

    async def one_go_nodemetric_async() -> Reply:
        clock.now = NOW + 2 * next(ticks)
        return one_go_nodemetric("")

    first = asyncio.run(daemon_nodemetric())
    pods_stepped, pods_one_go = pods_answers(pods)
    apply_after_start_up()  # the daemon's collector policy: what set-up built is frozen
    rows = [row(NODEMETRIC_ROUTE, pods, first.body, one_go_nodemetric_async, daemon_nodemetric, runs)]

    async def one_go_pods() -> Reply:
        return pods_one_go()

    rows.append(row(PODS_ROUTE, pods, pods_one_go().body, one_go_pods, pods_stepped, runs))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", default="1000,3000")
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    configure_logging("warning", "json")  # as the daemon does: the engine's debug lines filtered
    print("%-22s %6s %9s | %14s | %15s %15s %15s %6s  (longest gap of a GET, p50 / max over runs, ms)" % (
        "route", "pods", "bytes", "CPU ms one go / daemon", "one-go gap", "daemon gap", "floor gap", "ratio"))
    with tempfile.TemporaryDirectory(prefix="bench-route-holds-") as kubelet_dir:
        for pods in (int(n) for n in args.pods.split(",")):
            for result in measure(pods, args.runs, kubelet_dir):
                print("%-22s %6d %9d | %6.2f / %6.2f | %6.2f / %6.2f %6.2f / %6.2f %6.2f / %6.2f %5.2fx" % (
                    result["route"], pods, result["bytes"], result["one_go_cpu_ms"], result["daemon_cpu_ms"],
                    result["one_go_gap_ms_p50"], result["one_go_gap_ms_max"], result["daemon_gap_ms_p50"],
                    result["daemon_gap_ms_max"], result["floor_gap_ms_p50"], result["floor_gap_ms_max"],
                    result["gap_ratio_p50"]))
                print(json.dumps(result))


if __name__ == "__main__":
    main()
