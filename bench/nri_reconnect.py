"""Reconnect time after a runtime restart: socket back -> plugin registered and synchronized.

    python -m bench.nri_reconnect [--rounds 20] [--down 0.5]

The test peer (runtime side) stops (its socket disappears), stays away `--down`
seconds, and listens again. Measured per round: from the moment the peer listens
again to the moment the stub reports ready (registered, configured, synchronized
with a 50-pod state). The backoff is set to a minute, so a stub that did not watch
the socket path would show it. Floor, measured in the same run: one raw
unix-socket connect() to a listening socket (what the stub must do at least).
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import tempfile
import time
from pathlib import Path

from nri.loop import loop_factory, loop_name, uvloop_available
from nri.stub.backoff import BackoffPolicy
from nri.stub.stub import Stub, StubConfig
from nri.testing.peer import RuntimePeer
from proto.nri.pkg.api.v1alpha1 import api_pb2 as api

FLOOR_CONNECTS = 2000


class SyncOnlyPlugin:
    async def synchronize(self, pods: list[api.PodSandbox], containers: list[api.Container]) -> list[api.ContainerUpdate]:
        return []

    async def create_container(self, pod: api.PodSandbox, container: api.Container) -> None:
        return None


def _pct(samples: list[float], q: float) -> float:
    return samples[min(len(samples) - 1, int(q * len(samples)))]


def _connect_floor(directory: Path) -> list[float]:
    path = str(directory / "floor.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(FLOOR_CONNECTS + 16)
    samples: list[float] = []
    try:
        for _ in range(FLOOR_CONNECTS):
            client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            t0 = time.perf_counter_ns()
            client.connect(path)
            samples.append((time.perf_counter_ns() - t0) / 1000.0)
            client.close()
            listener.accept()[0].close()
    finally:
        listener.close()
    samples.sort()
    return samples


def _fill(peer: RuntimePeer, pods: int) -> None:
    for n in range(pods):
        pod = api.PodSandbox(id="%064d" % n, name="pod-%d" % n, uid="uid-%d" % n, namespace="default")
        ctr = api.Container(id="c%063d" % n, pod_sandbox_id=pod.id, name="app", state=api.CONTAINER_RUNNING)
        peer.state.pods[pod.id] = pod
        peer.state.containers[ctr.id] = ctr


async def _rounds(path: Path, rounds: int, down: float) -> list[float]:
    loop = asyncio.get_running_loop()
    ready_at: list[float] = []
    samples: list[float] = []
    async with RuntimePeer(path) as peer:
        _fill(peer, 50)
        config = StubConfig(socket_path=str(path), backoff=BackoffPolicy(initial=0.01, factor=6000.0, cap=60.0))
        stub = Stub(SyncOnlyPlugin(), name="bench", index="10", config=config, environ={})
        stub.add_ready_callback(lambda ready: ready and ready_at.append(time.perf_counter()))
        task = await stub.start(timeout=10)
        try:
            for _ in range(rounds):
                await peer.stop()
                await asyncio.sleep(down)
                before = len(ready_at)
                await peer.start()
                back = time.perf_counter()
                deadline = loop.time() + 10
                while len(ready_at) == before and loop.time() < deadline:
                    await asyncio.sleep(0.0005)
                if len(ready_at) == before:
                    raise RuntimeError("stub did not come back within 10 s")
                samples.append((ready_at[-1] - back) * 1000.0)
        finally:
            await stub.stop()
            await asyncio.wait_for(task, 10)
    samples.sort()
    return samples


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--down", type=float, default=0.5, help="seconds the runtime stays away")
    args = parser.parse_args()
    import logging

    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
    directory = Path(tempfile.mkdtemp(prefix="nri-bench-", dir="/tmp"))
    floor = _connect_floor(directory)
    floor_p50 = _pct(floor, 0.5)
    print(
        "nri_reconnect: runtime away %.2f s, %d rounds, 50 pods to resynchronize; backoff 60 s"
        % (args.down, args.rounds)
    )
    print("  floor: raw unix connect()  p50 %7.1f us  p99 %7.1f us  (%d connects)"
          % (floor_p50, _pct(floor, 0.99), FLOOR_CONNECTS))
    flavours = [True, False] if uvloop_available() else [False]
    for uvloop in flavours:
        path = directory / ("nri-%s.sock" % ("uv" if uvloop else "aio"))
        runner = asyncio.Runner(loop_factory=loop_factory(uvloop))
        try:
            name = loop_name(runner.get_loop())
            samples = runner.run(_rounds(path, args.rounds, args.down))
        finally:
            runner.close()
        print(
            "  %-8s socket back -> ready  p50 %7.2f ms  p99 %7.2f ms  max %7.2f ms  mean %7.2f ms"
            "  | p50 = %.0fx the connect floor"
            % (name, _pct(samples, 0.5), _pct(samples, 0.99), samples[-1], statistics.fmean(samples),
               _pct(samples, 0.5) * 1000.0 / floor_p50)
        )


if __name__ == "__main__":
    main()
