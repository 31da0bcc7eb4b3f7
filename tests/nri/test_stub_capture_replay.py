"""Golden replay: the frames a real containerd 2.3.4 sent a plugin
(/work/shared/reference/nri-capture-containerd-2.3.4.jsonl) are fed to our stub,
launched the way containerd launches plugins (fd + NRI_PLUGIN_* environment).
The stub must answer each one exactly as the captured plugin did, byte for byte."""

import asyncio
import json
import os
import socket
import struct

import pytest

from nri.stub.stub import Stub, StubConfig
from nri.ttrpc.frame import FrameDecoder
from proto.nri.pkg.api.v1alpha1 import api_pb2 as api
from tests.shared_reference import NRI_CAPTURE, shared_file

CAPTURE = shared_file(*NRI_CAPTURE)
T = 5.0

pytestmark = pytest.mark.skipif(not CAPTURE.exists(), reason="golden capture not present on this machine")


class CapturedPlugin:
    """Handles the events the captured plugin subscribed to (mask 0x6af)."""

    def __init__(self):
        self.events: list[str] = []

    async def run_pod_sandbox(self, pod):
        self.events.append("RunPodSandbox")

    async def stop_pod_sandbox(self, pod):
        self.events.append("StopPodSandbox")

    async def remove_pod_sandbox(self, pod):
        self.events.append("RemovePodSandbox")

    async def create_container(self, pod, ctr):
        self.events.append("CreateContainer")
        adjust = api.ContainerAdjustment(annotations={"pyprobe.nri.io/seen": "true"})
        adjust.env.add(key="CAPTURE", value="1")
        adjust.linux.resources.cpu.shares.value = 333
        return adjust

    async def start_container(self, pod, ctr):
        self.events.append("StartContainer")

    async def update_container(self, pod, ctr, res):
        self.events.append("UpdateContainer")
        return []

    async def stop_container(self, pod, ctr):
        self.events.append("StopContainer")
        return []

    async def remove_container(self, pod, ctr):
        self.events.append("RemoveContainer")


class RawRuntime:
    """The runtime end of the socketpair: writes recorded frames, reads raw bytes."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.buffer = b""

    async def read_exact(self, n: int) -> bytes:
        loop = asyncio.get_running_loop()
        while len(self.buffer) < n:
            data = await loop.sock_recv(self.sock, 65536)
            assert data, "plugin closed the connection"
            self.buffer += data
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    async def send(self, frame_hex: str):
        await asyncio.get_running_loop().sock_sendall(self.sock, bytes.fromhex(frame_hex))


def _describe(frame: bytes) -> str:
    """Decode one mux+ttrpc frame for a readable assertion message."""
    conn_id, _ = struct.unpack(">II", frame[:8])
    frames = FrameDecoder().feed(frame[8:])
    return "conn %d: %r" % (conn_id, frames)


def _records():
    return [json.loads(line) for line in CAPTURE.read_text().splitlines() if line.strip()]


async def test_stub_answers_every_recorded_containerd_frame_byte_for_byte():
    records = _records()
    runtime_end, plugin_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    runtime_end.setblocking(False)
    plugin_fd = os.dup(plugin_end.fileno())  # the stub owns (and closes) this one, like fd 3
    plugin_end.close()
    env = {"NRI_PLUGIN_SOCKET": str(plugin_fd), "NRI_PLUGIN_NAME": "capture", "NRI_PLUGIN_IDX": "40"}
    plugin = CapturedPlugin()
    stub = Stub(plugin, config=StubConfig(), environ=env)
    run = asyncio.get_running_loop().create_task(stub.run())
    raw = RawRuntime(runtime_end)
    update_task = None
    try:
        compared = 0
        for rec in records:
            expected = bytes.fromhex(rec["frame_hex"])
            if rec["dir"] == "runtime->plugin":
                await raw.send(rec["frame_hex"])
                continue
            if rec.get("method") == "UpdateContainers":  # the capture's unsolicited update, same bytes
                update_task = asyncio.get_running_loop().create_task(stub.update_containers([_captured_update()]))
            got = await asyncio.wait_for(raw.read_exact(len(expected)), T)
            assert got == expected, "%s %s:\n got %s\nwant %s" % (
                rec["dir"], rec.get("method", "response"), _describe(got), _describe(expected)
            )
            compared += 1
            if rec["stream"] == 3 and rec["conn"] == 1:  # the Synchronize reply: now ready
                await asyncio.wait_for(stub.ready.wait(), T)
        assert compared == 16  # registration, 14 responses, one unsolicited update
        assert update_task is not None and await asyncio.wait_for(update_task, T) == []
        assert plugin.events == [
            "RunPodSandbox",
            "CreateContainer",
            "StartContainer",
            "UpdateContainer",
            "StopContainer",
            "RemoveContainer",
            "StopPodSandbox",
            "RemovePodSandbox",
            "StopContainer",
            "RemoveContainer",
            "StopPodSandbox",
            "RemovePodSandbox",
        ]
        # containerd goes away: a launched plugin does not reconnect, run() returns.
        runtime_end.close()
        await asyncio.wait_for(run, T)
        assert not stub.is_ready
    finally:
        runtime_end.close()
        await stub.stop()
        run.cancel()
        await asyncio.gather(run, return_exceptions=True)


def _captured_update() -> api.ContainerUpdate:
    update = api.ContainerUpdate(container_id="d38a456b71723bc55e48cd94fe16dd776ed1b6d3bc0dba691297c95dd762e97a")
    update.linux.resources.cpu.shares.value = 777
    return update
