"""What the states informer's CRI poll costs the daemon at N pods x 2 containers (default 1,000).

The runtime is a fake CRI service (tests/koordlet/statesinformer/cri_server.py, real gRPC on a
unix socket) in a separate process, so the CPU counted is the daemon side's alone:

- poll CPU: one steady-state poll (ListPodSandbox + ListContainers, conversion, store merge;
  nothing new, so no status call), process CPU of the polling process, median over rounds,
  and what that makes per 10 s (the default --states-cri-sync-interval);
- floor: decoding the same two replies' bytes with protobuf alone (FromString), same run;
- skipped: one round of the states informer's CRI loop while NRI is connected and
  synchronized (the loop's round with nothing to do), per 10 s;
- RSS (VmRSS, fresh interpreters): the states informer imported without grpc, then with
  koordlet.statesinformer.cri_client (grpc.aio) imported, then after a channel made and one
  poll of the N pods (grpc's core threads, buffers, the poller's caches and CRI's index).

    .venv/bin/python -m bench.cri_poll_cost [--pods 1000] [--rounds 20]

The whole daemon with the poll (root): serve daemon_scale's pods over CRI, then point it there:

    .venv/bin/python -m bench.cri_poll_cost --serve-workload /tmp/cri.sock --pods 1000 &
    .venv/bin/python -m bench.daemon_scale --pods 1000 --daemon-arg=--cri-endpoint=unix:///tmp/cri.sock
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

INTERVAL_S = 10.0


def _rss_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def _fill(runtime, pods: int) -> None:
    from tests.koordlet.statesinformer.cri_server import FakeContainer, FakeSandbox

    for n in range(pods):
        uid = "00000000-0000-4000-8000-%012d" % n
        parent = "/kubepods/burstable/pod" + uid
        labels = {"app": "a%d" % n, "io.kubernetes.pod.namespace": "default", "pod-template-hash": "7d9f8c6b5"}
        annotations = {"kubernetes.io/config.seen": "2026-01-01T00:00:00Z", "kubernetes.io/config.source": "api"}
        runtime.sandboxes["sb%d" % n] = FakeSandbox("sb%d" % n, uid, "pod-%d" % n, parent,
                                                    labels=labels, annotations=annotations)
        for k in range(2):
            cid = "c%d-%d" % (n, k)
            runtime.containers[cid] = FakeContainer(cid, "sb%d" % n, "n%d" % k, "%s/%s" % (parent, cid))


async def _serve(socket: str, pods: int) -> None:
    from tests.koordlet.statesinformer.cri_server import FakeRuntime, serve

    runtime = FakeRuntime()
    _fill(runtime, pods)
    server = await serve(runtime, Path(socket))
    print("serving", flush=True)
    await server.wait_for_termination()


async def _serve_workload(socket: str, pods: int) -> None:
    """bench.daemon_scale's N pods as CRI lists them: run beside `daemon_scale --daemon-arg=--cri-endpoint=unix://<socket>`
    to count the CRI poll in the whole daemon."""
    from bench.daemon_scale import workload
    from tests.koordlet.statesinformer.cri_server import FakeContainer, FakeRuntime, FakeSandbox, serve

    runtime = FakeRuntime()
    for sandbox, containers in workload(pods, cpu=0):
        runtime.sandboxes[sandbox.id] = FakeSandbox(sandbox.id, sandbox.uid, sandbox.name, sandbox.linux.cgroup_parent,
                                                    labels=dict(sandbox.labels), annotations=dict(sandbox.annotations))
        for container in containers:
            runtime.containers[container.id] = FakeContainer(container.id, sandbox.id, container.name,
                                                             container.linux.cgroups_path)
    server = await serve(runtime, Path(socket))
    print("serving %d pods on %s" % (pods, socket), flush=True)
    await server.wait_for_termination()


def _server(socket: str, pods: int) -> subprocess.Popen[str]:
    process = subprocess.Popen([sys.executable, "-m", "bench.cri_poll_cost", "--serve", socket, "--pods", str(pods)],
                               stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    if process.stdout.readline().strip() != "serving":
        raise SystemExit("fake CRI runtime did not start")
    return process


async def _poll_cost(socket: str, pods: int, rounds: int) -> dict[str, float]:
    from koordlet.statesinformer.cri_client import CriClient
    from koordlet.statesinformer.cri_poll import CriPoller
    from koordlet.statesinformer.model import NodeInfo
    from koordlet.statesinformer.store import PodStore
    from proto.cri import api_pb2

    client = CriClient(socket, timeout_s=60)
    store = PodStore(NodeInfo("bench"))
    poller = CriPoller(client, store)
    try:
        await poller.poll_once()
        assert len(store.pods()) == pods, len(store.pods())
        sandboxes = api_pb2.ListPodSandboxResponse(items=await client.list_pod_sandboxes()).SerializeToString()
        containers = api_pb2.ListContainersResponse(containers=await client.list_containers()).SerializeToString()
        polls, decodes = [], []
        for _ in range(rounds):
            started = time.process_time()
            await poller.poll_once()
            polls.append(time.process_time() - started)
            started = time.process_time()
            list(api_pb2.ListPodSandboxResponse.FromString(sandboxes).items)
            list(api_pb2.ListContainersResponse.FromString(containers).containers)
            decodes.append(time.process_time() - started)
    finally:
        await client.close()
    return {"poll_ms": statistics.median(polls) * 1000, "decode_ms": statistics.median(decodes) * 1000,
            "reply_kib": (len(sandboxes) + len(containers)) / 1024}


async def _skipped_round_us(rounds: int = 2000) -> float:
    """The CRI loop's round while NRI is connected and synchronized: nothing is called."""
    from koordlet.statesinformer.model import NodeInfo, Source
    from koordlet.statesinformer.module import StatesInformerModule
    from koordlet.statesinformer.store import PodStore
    from tests.koordlet.hubs_helper import config_of

    store = PodStore(NodeInfo("bench"), expected={Source.NRI})
    store.nri_listed((), ())
    store.nri_link(True)
    module = StatesInformerModule(store, config_of(cri_endpoint="unix:///nonexistent/cri.sock"))
    started = time.process_time()
    for _ in range(rounds):
        await module.cri_round()
    return (time.process_time() - started) / rounds * 1e6


def _rss_child(stage: str, socket: str, pods: int) -> None:
    """Print VmRSS (KiB) after `stage` in this fresh interpreter."""
    import koordlet.statesinformer.module  # noqa: F401  (the informer as the daemon has it)
    import koordlet.statesinformer.store  # noqa: F401
    if stage in ("grpc", "polled"):
        import koordlet.statesinformer.cri_client  # noqa: F401
        import koordlet.statesinformer.cri_poll  # noqa: F401
    if stage == "polled":
        asyncio.run(_poll_cost(socket, pods, 1))
    print(json.dumps({"grpc_loaded": "grpc" in sys.modules, "rss_kib": _rss_kib()}))


def _rss(stage: str, socket: str, pods: int) -> tuple[bool, int]:
    out = subprocess.run([sys.executable, "-m", "bench.cri_poll_cost", "--rss-stage", stage, "--serve-socket", socket,
                          "--pods", str(pods)], check=True, capture_output=True, text=True).stdout
    figures = json.loads(out.strip().splitlines()[-1])
    return figures["grpc_loaded"], figures["rss_kib"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--serve")
    parser.add_argument("--serve-workload", help="serve bench.daemon_scale's pods on this socket until killed")
    parser.add_argument("--rss-stage")
    parser.add_argument("--serve-socket", default="")
    args = parser.parse_args()
    if args.serve_workload:
        asyncio.run(_serve_workload(args.serve_workload, args.pods))
        return
    if args.serve:
        asyncio.run(_serve(args.serve, args.pods))
        return
    if args.rss_stage:
        _rss_child(args.rss_stage, args.serve_socket, args.pods)
        return
    with tempfile.TemporaryDirectory() as tmp:
        socket = os.path.join(tmp, "cri.sock")
        server = _server(socket, args.pods)
        try:
            cost = asyncio.run(_poll_cost(socket, args.pods, args.rounds))
            rss = {stage: _rss(stage, socket, args.pods) for stage in ("informer", "grpc", "polled")}
        finally:
            server.terminate()
            server.wait()
    skipped = asyncio.run(_skipped_round_us())
    pods = args.pods
    print("cri_poll_cost: N = %d pods x 2 containers, replies %.0f KiB, fake runtime in its own process" %
          (pods, cost["reply_kib"]))
    print("cri_poll_cost: steady poll CPU median %.1f ms (= %.2f %% of a core at one poll per %.0f s); "
          "floor (protobuf decode of the same two replies) %.1f ms; x%.1f"
          % (cost["poll_ms"], cost["poll_ms"] / (INTERVAL_S * 10), INTERVAL_S, cost["decode_ms"],
             cost["poll_ms"] / cost["decode_ms"]))
    print("cri_poll_cost: CRI loop round while NRI is synchronized: %.1f us CPU (per %.0f s)" % (skipped, INTERVAL_S))
    base = rss["informer"][1]
    for stage, (loaded, kib) in rss.items():
        print("cri_poll_cost: RSS %-8s %6.1f MiB (+%5.1f MiB over the informer alone) grpc imported: %s"
              % (stage, kib / 1024, (kib - base) / 1024, loaded))


if __name__ == "__main__":
    main()
