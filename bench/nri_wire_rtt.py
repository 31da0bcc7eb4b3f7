"""ttrpc unary round trip over an NRI Trunk on a unix socketpair.

    python -m bench.nri_wire_rtt [--calls 10000] [--payload small|create] [--process]

The client sits on mux conn 1 of one trunk, the server on conn 1 of the other (the
runtime -> plugin direction). By default both trunks share one event loop; --process
puts the server in a forked child with its own loop, as with a real runtime. Every
call is awaited before the next starts; each configuration prints p50/p99 latency,
throughput and CPU time, once on the stdlib loop and once on uvloop.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import signal
import socket
import statistics
import time
from collections.abc import Callable

from google.protobuf.message import Message

from nri.loop import loop_name, new_event_loop, uvloop_available
from nri.mux.trunk import PLUGIN_SERVICE_CONN, Trunk
from nri.ttrpc.client import TtrpcClient
from nri.ttrpc.server import CallContext, TtrpcServer
from proto.nri.pkg.api.v1alpha1 import api_pb2 as api

PLUGIN = "nri.pkg.api.v1alpha1.Plugin"
WARMUP = 500


def _create_container_request() -> api.CreateContainerRequest:
    """About the size containerd 2.3.4 sends (~4 KB)."""
    req = api.CreateContainerRequest()
    req.pod.id = "b5015ccf4e694c64abc2fc177883315d56e7883d765ba3f0536c1d3691cd2c8c"
    req.pod.name = "bench-pod"
    req.pod.namespace = "default"
    req.pod.uid = "b6a55975-c650-4ad0-9e4b-8b3f8d36d27c"
    for i in range(20):
        req.pod.annotations["io.kubernetes.example/key-" + str(i)] = "value-" + "x" * 60
        req.container.annotations["io.kubernetes.container.key-" + str(i)] = "y" * 60
    req.container.id = "c" * 64
    req.container.args.extend(["/bin/sleep", "3600"])
    req.container.env.extend(["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin"] * 8)
    req.container.linux.cgroups_path = "/kubepods/burstable/pod-uid/" + "c" * 64
    req.container.linux.resources.cpu.shares.value = 512
    req.container.linux.resources.memory.limit.value = 256 << 20
    return req


async def _handle_configure(req: Message, ctx: CallContext) -> Message:
    return api.ConfigureResponse(events=0x688)


async def _handle_create(req: Message, ctx: CallContext) -> Message:
    resp = api.CreateContainerResponse()
    resp.adjust.linux.resources.cpu.shares.value = 1024
    return resp


HANDLERS = {
    (PLUGIN, "Configure"): (api.ConfigureRequest, _handle_configure),
    (PLUGIN, "CreateContainer"): (api.CreateContainerRequest, _handle_create),
}


async def _serve(sock: socket.socket) -> None:
    trunk = await Trunk.open(sock)
    server = TtrpcServer(trunk.conn(PLUGIN_SERVICE_CONN), HANDLERS)
    await server.serve()


async def _measure(
    client_sock: socket.socket, calls: int, payload: str, server_sock: socket.socket | None
) -> tuple[list[float], float, float]:
    serve_task = asyncio.create_task(_serve(server_sock)) if server_sock is not None else None
    trunk = await Trunk.open(client_sock)
    client = TtrpcClient(trunk.conn(PLUGIN_SERVICE_CONN))
    if payload == "create":
        method, request, response_type = "CreateContainer", _create_container_request(), api.CreateContainerResponse
    else:
        method, request, response_type = "Configure", api.ConfigureRequest(runtime_name="containerd"), api.ConfigureResponse
    for _ in range(WARMUP):
        await client.call(PLUGIN, method, request, response_type, timeout=2.0)
    samples: list[float] = []
    clock = time.perf_counter
    cpu0 = time.process_time()
    wall0 = clock()
    for _ in range(calls):
        t0 = clock()
        await client.call(PLUGIN, method, request, response_type, timeout=2.0)
        samples.append(clock() - t0)
    wall = clock() - wall0
    cpu = time.process_time() - cpu0
    trunk.close("bench done")
    if serve_task is not None:
        await asyncio.wait_for(serve_task, 5)
    return samples, wall, cpu


def _run_on(make_loop: Callable[[], asyncio.AbstractEventLoop], calls: int, payload: str,
            in_process: bool) -> None:
    client_sock, server_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    child = 0
    if not in_process:
        child = os.fork()
        if child == 0:  # the server side, with its own loop of the same kind
            client_sock.close()
            loop = make_loop()
            try:
                loop.run_until_complete(_serve(server_sock))
            finally:
                os._exit(0)
        server_sock.close()
    loop = make_loop()
    try:
        samples, wall, cpu = loop.run_until_complete(
            _measure(client_sock, calls, payload, server_sock if in_process else None)
        )
        name = loop_name(loop)
    finally:
        loop.close()
    server_cpu = None
    if child:
        _, _, usage = os.wait4(child, 0)
        server_cpu = (usage.ru_utime + usage.ru_stime) / (calls + WARMUP)
    samples.sort()
    us = 1e6
    p50 = samples[len(samples) // 2] * us
    p99 = samples[int(len(samples) * 0.99)] * us
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        "loop=" + name.ljust(7),
        "payload=" + payload.ljust(6),
        "server=" + ("same-loop" if in_process else "child-proc"),
        "calls=" + str(calls),
        "p50_us=%.1f" % p50,
        "p99_us=%.1f" % p99,
        "mean_us=%.1f" % (statistics.fmean(samples) * us),
        "calls_per_s=%.0f" % (calls / wall),
        "client_cpu_us_per_call=%.1f" % (cpu / calls * us),
        "server_cpu_us_per_call=" + ("%.1f" % (server_cpu * us) if server_cpu is not None else "-"),
        "max_rss_mb=%.0f" % rss_mb,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--payload", choices=["small", "create", "both"], default="both")
    parser.add_argument("--process", action="store_true", help="only the child-process server")
    parser.add_argument("--same-loop", action="store_true", help="only the same-loop server")
    options = parser.parse_args()
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    payloads = ["small", "create"] if options.payload == "both" else [options.payload]
    modes = [True, False]
    if options.process:
        modes = [False]
    elif options.same_loop:
        modes = [True]
    loops: list[Callable[[], asyncio.AbstractEventLoop]] = [lambda: new_event_loop(prefer_uvloop=False)]
    if uvloop_available():
        loops.append(lambda: new_event_loop(prefer_uvloop=True))
    for in_process in modes:
        for payload in payloads:
            for make_loop in loops:
                _run_on(make_loop, options.calls, payload, in_process)


if __name__ == "__main__":
    main()
