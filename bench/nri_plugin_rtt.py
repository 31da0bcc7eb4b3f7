"""Round trip runtime -> plugin -> runtime for CreateContainer with a trivial handler.

    python -m bench.nri_plugin_rtt [--calls 10000] [--mode inproc|subprocess|both] [--pin | --cross] [--pods N]

The test peer (runtime side) calls CreateContainer on a plugin run by nri.stub,
over a real unix socket with the NRI mux and ttrpc, sequentially, and prints
p50/p90/p99 per event loop flavour (uvloop and stdlib asyncio).
- inproc: peer and plugin share one event loop (one CPU; shows pure software cost);
- subprocess: the plugin runs in its own process, like a real deployment
  (--pin: both processes on CPU 0; --cross: runtime on CPU 0, plugin on CPU 1;
  neither: the scheduler places them).
Each line also prints its floor from the same run and placement: a bare asyncio unix
socket echo of a frame of the same size (no mux, no ttrpc, no protobuf), and the ratio.
--pods N: the plugin is koordlet's (every runtime hook, N pods known to its states
informer, the mix of bench.runtime_hooks), each call re-creates one pod's `main`, and
calls are 1 ms apart (containerd's own work between CRI creates) so the informer feed
the plugin defers runs between them.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from nri.events import PLUGIN_SERVICE
from nri.loop import loop_factory, loop_name, uvloop_available
from nri.stub.stub import Stub, StubConfig
from nri.testing.peer import RuntimePeer
from proto.nri.pkg.api.v1alpha1 import api_pb2 as api

WARMUP = 500
GAP_S = 0.001  # between calls with --pods


class TrivialPlugin:
    def __init__(self) -> None:
        self.adjust = api.ContainerAdjustment(annotations={"bench": "1"})

    async def create_container(self, pod: api.PodSandbox, container: api.Container) -> api.ContainerAdjustment:
        return self.adjust


def _plugin(pods: int) -> object:
    if not pods:
        return TrivialPlugin()
    from bench.runtime_hooks import known, workload
    from koordlet.runtimehooks.hook_config import HookConfig
    from koordlet.runtimehooks.nri_plugin import KoordletNriPlugin
    from resourceexecutor import executor_without_cgroups

    feed, engine = known(workload(pods), HookConfig(node_cpus=frozenset(range(64))))
    return KoordletNriPlugin(engine, feed, executor_without_cgroups())


def _requests(pods: int) -> list[api.CreateContainerRequest]:
    if not pods:
        return [_request()]
    from bench.runtime_hooks import create_requests, workload

    return create_requests(workload(pods), 0, False)


def _peer(path: Path, pods: int) -> RuntimePeer:
    """With pods, a peer that lists them at Synchronize (as containerd does), so the plugin
    keeps the pods it was started with."""
    if not pods:
        return RuntimePeer(path)
    from bench.runtime_hooks import knowing, workload

    return knowing(path, workload(pods))


def _request() -> api.CreateContainerRequest:
    pod = api.PodSandbox(
        id="a" * 64, name="bench-pod", uid="b" * 36, namespace="default", annotations={"k%d" % i: "v" * 20 for i in range(10)}
    )
    pod.linux.cgroup_parent = "/kubepods/burstable/pod" + "b" * 36
    ctr = api.Container(id="c" * 64, pod_sandbox_id=pod.id, name="app", env=["PATH=/usr/bin", "HOME=/root"])
    ctr.linux.cgroups_path = pod.linux.cgroup_parent + "/" + ctr.id
    ctr.linux.resources.cpu.shares.value = 1024
    ctr.linux.resources.memory.limit.value = 256 << 20
    return api.CreateContainerRequest(pod=pod, container=ctr)


def _pct(samples: list[float], q: float) -> float:
    return samples[min(len(samples) - 1, int(q * len(samples)))]


async def _measure(peer: RuntimePeer, calls: int, pods: int) -> list[float]:
    (plugin,) = await peer.wait_plugins(1, timeout=60)
    client = plugin.client
    assert client is not None
    requests = _requests(pods)
    gap = GAP_S if pods else 0.0
    call = client.call
    perf = time.perf_counter_ns
    samples: list[float] = []
    for i in range(WARMUP + calls):
        request = requests[i % len(requests)]
        t0 = perf()
        await call(PLUGIN_SERVICE, "CreateContainer", request, api.CreateContainerResponse, 2.0)
        if i >= WARMUP:
            samples.append((perf() - t0) / 1000.0)
        if gap:
            await asyncio.sleep(gap)
    samples.sort()
    return samples


async def _inproc(path: Path, calls: int, pods: int) -> list[float]:
    async with _peer(path, pods) as peer:
        stub = Stub(_plugin(pods), name="bench", index="10", config=StubConfig(socket_path=str(path)), environ={})
        task = await stub.start(timeout=10)
        try:
            return await _measure(peer, calls, pods)
        finally:
            await stub.stop()
            await asyncio.wait_for(task, 10)


async def _subprocess(path: Path, calls: int, uvloop: bool, plugin_cpu: int | None, pods: int) -> list[float]:
    async with _peer(path, pods) as peer:
        args = [sys.executable, "-m", "bench.nri_plugin_rtt", "--serve-plugin", str(path), "--pods", str(pods)]
        if not uvloop:
            args.append("--no-uvloop")
        pin = (lambda: os.sched_setaffinity(0, {plugin_cpu})) if plugin_cpu is not None else None
        proc = await asyncio.create_subprocess_exec(*args, preexec_fn=pin)
        try:
            return await _measure(peer, calls, pods)
        finally:
            proc.terminate()
            await proc.wait()


async def _echo_serve(path: Path) -> asyncio.AbstractServer:
    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                size = int.from_bytes(await reader.readexactly(4), "big")
                writer.write(size.to_bytes(4, "big") + await reader.readexactly(size))
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    return await asyncio.start_unix_server(echo, str(path))


async def _echo_measure(path: Path, calls: int, size: int, gap: float) -> list[float]:
    for _ in range(200):  # the server may still be starting (subprocess placement)
        try:
            reader, writer = await asyncio.open_unix_connection(str(path))
            break
        except (FileNotFoundError, ConnectionRefusedError):
            await asyncio.sleep(0.01)
    frame = size.to_bytes(4, "big") + b"x" * size
    perf = time.perf_counter_ns
    samples: list[float] = []
    for i in range(WARMUP + calls):
        t0 = perf()
        writer.write(frame)
        await reader.readexactly(4 + size)
        if i >= WARMUP:
            samples.append((perf() - t0) / 1000.0)
        if gap:
            await asyncio.sleep(gap)  # paced like the calls it is the floor of
    writer.close()
    await writer.wait_closed()
    samples.sort()
    return samples


async def _echo_floor(path: Path, calls: int, size: int, subprocess: bool, uvloop: bool,
                      plugin_cpu: int | None, gap: float) -> list[float]:
    if not subprocess:
        server = await _echo_serve(path)
        try:
            return await _echo_measure(path, calls, size, gap)
        finally:
            server.close()
            await asyncio.sleep(0.01)  # let the echo handler see EOF and finish
            await server.wait_closed()
    args = [sys.executable, "-m", "bench.nri_plugin_rtt", "--serve-echo", str(path)]
    if not uvloop:
        args.append("--no-uvloop")
    pin = (lambda: os.sched_setaffinity(0, {plugin_cpu})) if plugin_cpu is not None else None
    proc = await asyncio.create_subprocess_exec(*args, preexec_fn=pin)
    try:
        return await _echo_measure(path, calls, size, gap)
    finally:
        proc.terminate()
        await proc.wait()


def _serve_echo(path: str, uvloop: bool) -> None:
    async def serve() -> None:
        server = await _echo_serve(Path(path))
        await server.serve_forever()

    asyncio.Runner(loop_factory=loop_factory(uvloop)).run(serve())


def _serve_plugin(path: str, uvloop: bool, pods: int) -> None:
    import logging

    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    stub = Stub(_plugin(pods), name="bench", index="10", config=StubConfig(socket_path=path), environ={})
    asyncio.Runner(loop_factory=loop_factory(uvloop)).run(stub.run())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--mode", choices=["inproc", "subprocess", "both"], default="both")
    placement = parser.add_mutually_exclusive_group()
    placement.add_argument("--pin", action="store_true", help="pin runtime and plugin to CPU 0")
    placement.add_argument("--cross", action="store_true", help="runtime on CPU 0, plugin on CPU 1")
    parser.add_argument("--pods", type=int, default=0,
                        help="koordlet's plugin with this many pods known (0: a trivial plugin)")
    parser.add_argument("--serve-plugin", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--serve-echo", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--no-uvloop", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    import logging

    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    if args.serve_plugin:
        _serve_plugin(args.serve_plugin, not args.no_uvloop, args.pods)
        return
    if args.serve_echo:
        _serve_echo(args.serve_echo, not args.no_uvloop)
        return
    plugin_cpu = None
    if args.pin or args.cross:
        os.sched_setaffinity(0, {0})
        plugin_cpu = 1 if args.cross else 0
    placement_note = ", pinned to CPU 0" if args.pin else ", runtime CPU 0 / plugin CPU 1" if args.cross else ""
    modes = ["inproc", "subprocess"] if args.mode == "both" else [args.mode]
    flavours = [True, False] if uvloop_available() else [False]
    size = _requests(args.pods)[0].ByteSize()
    plugin_note = (", koordlet's plugin with %d pods known, calls %.0f ms apart" % (args.pods, GAP_S * 1000)
                   if args.pods else "")
    print("nri_plugin_rtt: CreateContainer round trip, %d calls after %d warm-up, request %d bytes%s%s"
          % (args.calls, WARMUP, size, placement_note, plugin_note))
    for mode in modes:
        for uvloop in flavours:
            path = Path(tempfile.mkdtemp(prefix="nri-bench-", dir="/tmp")) / "nri.sock"
            runner = asyncio.Runner(loop_factory=loop_factory(uvloop))
            try:
                name = loop_name(runner.get_loop())
                if mode == "inproc":
                    samples = runner.run(_inproc(path, args.calls, args.pods))
                else:
                    samples = runner.run(_subprocess(path, args.calls, uvloop, plugin_cpu, args.pods))
                floor = runner.run(_echo_floor(path.with_name("echo.sock"), args.calls, size,
                                               mode == "subprocess", uvloop, plugin_cpu,
                                               GAP_S if args.pods else 0.0))
            except Exception as exc:  # report, do not hide, a flavour that does not work
                print("  %-10s %-8s FAILED: %r" % (mode, "uvloop" if uvloop else "asyncio", exc))
                continue
            finally:
                runner.close()
            print(
                "  %-10s %-8s p50 %7.1f us  p90 %7.1f us  p99 %7.1f us  mean %7.1f us  max %8.1f us"
                "  | floor (socket echo) p50 %6.1f us  p99 %6.1f us  ratio p50 %.2fx"
                % (mode, name, _pct(samples, 0.5), _pct(samples, 0.9), _pct(samples, 0.99),
                   statistics.fmean(samples), samples[-1], _pct(floor, 0.5), _pct(floor, 0.99),
                   _pct(samples, 0.5) / _pct(floor, 0.5))
            )


if __name__ == "__main__":
    main()
