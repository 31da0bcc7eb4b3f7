"""What the API server sees from a fleet of agents: N nodes' reporters (NodeMetric status,
Katalyst CNR annotations, NodeResourceTopology) through the real sinks and the daemon's real
lightkube client, against a local server with the API server's rules (the tests' fake).

Prints, per node: requests a minute by kind at the default intervals, bytes sent and received
per write, and what that makes at 5,000 nodes; the NodeMetric write's latency against a raw
PUT of the same body on the same server (the floor), with the ratio.

    .venv/bin/python -m bench.fleet_reports --nodes 1000 --minutes 5
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

import structlog

from koordlet.config import defaults
from koordlet.daemon.cli import parse_args
from koordlet.reporter.kube_sink import KubeSink
from koordlet.reporter.nodemetric import node_metric_object
from koordlet.reporter.nrt import nrt_object
from koordlet.reporter.nrt_sink import NrtWriter
from koordlet.reporter.policy import MetricCollectPolicy
from koordlet.util.json_text import canonical_json
from koordlet.util.kube_client import open_kube_client
from koordlet.util.token_bucket import TokenBucket
from tests.koordlet.reporter.fake_apiserver import FakeApiServer, kubeconfig

FLEET = 5000
# the API server ends a watch after --min-request-timeout (1800 s) x [1, 2): one re-watch every ~45 min
WATCH_REQUESTS_PER_MINUTE = 1 / 45


def status_of(node: int, minute: int) -> str:
    """A NodeMetric status' text, the size of a real node's (node, system and 8 pods' usage, 4 windows)."""
    usage = {"cpu": "%dm" % (1500 + node % 100 + minute), "memory": "%dKi" % (8_000_000 + minute)}
    return canonical_json({"updateTime": "2026-12-04T08:%02d:00Z" % (minute % 60),
            "nodeMetric": {"nodeUsage": {"resources": usage}, "systemUsage": {"resources": usage},
                           "aggregatedNodeUsages": [{"duration": "%ds" % d, "usage": {
                               p: {"resources": usage} for p in ("p50", "p90", "p95", "p99")}}
                               for d in (300, 600, 1800)]},
            "podsMetric": [{"namespace": "default", "name": "pod-%d" % i, "priority": "koord-prod",
                            "podUsage": {"resources": usage}} for i in range(8)]})


def annotations_of(minute: int) -> dict[str, str]:
    return {"katalyst.kubewharf.io/cpu_overcommit_ratio": "%.2f" % (1.2 + minute % 5 / 100),
            "katalyst.kubewharf.io/memory_overcommit_ratio": "1.00",
            "katalyst.kubewharf.io/guaranteed_cpus": "4"}


def topology_of(name: str) -> dict:
    zones = [{"name": "node-%d" % z, "type": "Node", "resources": [
        {"name": "cpu", "capacity": 16, "allocatable": 16, "available": 12},
        {"name": "memory", "capacity": 68719476736, "allocatable": 68719476736, "available": 60129542144}]}
        for z in range(2)]
    return nrt_object(name, zones, "none", "container")


def kind_of(method: str, path: str) -> str:
    plural = path.split("/")[4] if path.startswith("/apis/") else path
    return "%s %s%s" % (method, plural, "/status" if path.endswith("/status") else "")


async def floor_put(url: str, path: str, body: dict, rounds: int) -> list[float]:
    """A raw PUT of the same body with httpx2 on a kept connection: the cost under the sinks."""
    import httpx2

    took = []
    async with httpx2.AsyncClient(base_url=url) as raw:
        for _ in range(rounds):
            current = (await raw.get(path.removesuffix("/status"))).json()
            started = time.perf_counter()
            await raw.put(path, content=json.dumps(dict(current, status=body)),
                          headers={"content-type": "application/json"})
            took.append(time.perf_counter() - started)
    return took


async def run(nodes: int, minutes: int, kcnr_changes_per_minute: float) -> dict:
    server = FakeApiServer()
    url = await server.start()
    directory = Path(tempfile.mkdtemp(prefix="fleet-"))
    # one client stands for N nodes' clients here: its own limiter (20 QPS a node) would
    # throttle the whole simulated fleet, so it is lifted
    config = parse_args(["--kubeconfig", str(kubeconfig(directory, url)), "--node-name", "bench",
                         "--kube-api-qps", "1000000", "--kube-api-burst", "1000000"])
    client = open_kube_client(config)
    names = ["node-%04d" % i for i in range(nodes)]
    for name in names:  # the Katalyst agent creates each node's CNR; we only annotate it
        server.put_object("customnoderesources", {"apiVersion": "node.katalyst.kubewharf.io/v1alpha1",
                                                  "kind": "CustomNodeResource", "metadata": {"name": name}})
    sinks = [KubeSink(client, name, TokenBucket(1000, 1000)) for name in names]
    topology = [NrtWriter(client, name) for name in names]
    new_object = node_metric_object("x", MetricCollectPolicy(), None)
    try:
        # each node's first minute: objects created
        for i, name in enumerate(names):
            await sinks[i].write_status(status_of(i, 0), dict(new_object, metadata={"name": name}))
            await sinks[i].patch_annotations(annotations_of(0))
            await topology[i].write(topology_of(name))
        first = len(server.requests)
        server.requests.clear()
        # steady minutes at the default intervals: one NodeMetric report a minute, the CNR
        # patched when its ratio changes, the topology rewritten only when it changes (never here)
        latencies = []
        patches_due = 0.0
        for minute in range(1, minutes + 1):
            patches_due += kcnr_changes_per_minute
            patch_now = int(patches_due)
            patches_due -= patch_now
            for i, name in enumerate(names):
                started = time.perf_counter()
                await sinks[i].write_status(status_of(i, minute), new_object)
                latencies.append(time.perf_counter() - started)
                for change in range(patch_now):
                    await sinks[i].patch_annotations(annotations_of(minute * 10 + change + 1))
                await topology[i].write(topology_of(name))
        steady = list(server.requests)
        floor = await floor_put(url, "/apis/slo.koordinator.sh/v1alpha1/nodemetrics/%s/status" % names[0],
                                status_of(0, 1), min(len(latencies), 2000))
    finally:
        await client.close()
        await server.stop()
    by_kind = Counter(kind_of(r.method, r.path) for r in steady)
    sent = Counter()
    for r in steady:
        sent[kind_of(r.method, r.path)] += len(json.dumps(r.body)) if r.body is not None else 0
    per_node_minute = {kind: count / nodes / minutes for kind, count in sorted(by_kind.items())}
    total = sum(per_node_minute.values()) + WATCH_REQUESTS_PER_MINUTE
    return {
        "nodes": nodes, "minutes": minutes, "kcnr_changes_per_minute": kcnr_changes_per_minute,
        "first_minute_requests_per_node": first / nodes,
        "requests_per_node_per_minute": {**per_node_minute, "WATCH nodeslos (re-watch)": WATCH_REQUESTS_PER_MINUTE},
        "total_requests_per_node_per_minute": total,
        "bytes_sent_per_request": {kind: sent[kind] / by_kind[kind] for kind in sorted(by_kind)},
        "fleet_requests_per_second_at_%d" % FLEET: total * FLEET / 60,
        "nodemetric_write_ms": {"p50": statistics.median(latencies) * 1e3,
                                "p99": sorted(latencies)[int(len(latencies) * 0.99) - 1] * 1e3},
        "floor_raw_put_ms": {"p50": statistics.median(floor) * 1e3,
                             "p99": sorted(floor)[int(len(floor) * 0.99) - 1] * 1e3},
        "nodemetric_write_over_floor_p50": statistics.median(latencies) / statistics.median(floor),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--minutes", type=int, default=5)
    parser.add_argument("--kcnr-changes-per-minute", type=float, default=1.0,
                        help="how often a node's overcommit ratio string changes (it is patched only then; "
                             "at most every %g s)" % defaults.REALTIME_OVERCOMMIT_SYNC_PERIOD_SECONDS)
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    result = asyncio.run(run(args.nodes, args.minutes, args.kcnr_changes_per_minute))
    print(json.dumps(result))
    print("\nper node per minute (steady, default intervals):")
    for kind, rate in result["requests_per_node_per_minute"].items():
        sent = result["bytes_sent_per_request"].get(kind)
        print("  %-40s %6.3f req/min   %s" % (kind, rate, "%6.0f B sent/request" % sent if sent else ""))
    print("  %-40s %6.3f req/min" % ("total", result["total_requests_per_node_per_minute"]))
    print("first minute (objects created): %.1f requests per node" % result["first_minute_requests_per_node"])
    print("at %d nodes: %.0f requests/s" % (FLEET, result["fleet_requests_per_second_at_%d" % FLEET]))
    print("NodeMetric write p50 %.2f ms p99 %.2f ms; raw PUT floor p50 %.2f ms p99 %.2f ms; ratio p50 %.1fx" % (
        result["nodemetric_write_ms"]["p50"], result["nodemetric_write_ms"]["p99"],
        result["floor_raw_put_ms"]["p50"], result["floor_raw_put_ms"]["p99"],
        result["nodemetric_write_over_floor_p50"]))


if __name__ == "__main__":
    main()
