"""Golden replay: the frames a real containerd 2.3.4 sent a plugin
(/work/shared/reference/nri-capture-containerd-2.3.4.jsonl) are fed to our stub,
launched the way containerd launches plugins (fd + NRI_PLUGIN_* environment).
The stub must answer each one as a plugin should."""

import asyncio
import json
import os
import socket
from pathlib import Path

import pytest

from nri.mux.frame import MuxDecoder
from nri.stub.stub import Stub, StubConfig
from nri.ttrpc.envelope import decode_request
from nri.ttrpc.frame import FrameDecoder, MessageType
from proto.nri.pkg.api.v1alpha1 import api_pb2 as api
from proto.ttrpc import request_pb2

CAPTURE = Path("/work/shared/reference/nri-capture-containerd-2.3.4.jsonl")
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
        return api.ContainerAdjustment(annotations={"pyprobe.nri.io/seen": "true"})

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
    """The runtime end of the socketpair: writes recorded frames, decodes replies."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.mux = MuxDecoder()
        self.ttrpc = {1: FrameDecoder(), 2: FrameDecoder()}
        self.frames: list[tuple[int, object]] = []

    async def next_frame(self):
        loop = asyncio.get_running_loop()
        while not self.frames:
            data = await loop.sock_recv(self.sock, 65536)
            assert data, "plugin closed the connection"
            for conn_id, payload in self.mux.feed(data):
                for frame in self.ttrpc[conn_id].feed(payload):
                    self.frames.append((conn_id, frame))
        return self.frames.pop(0)

    async def send(self, frame_hex: str):
        await asyncio.get_running_loop().sock_sendall(self.sock, bytes.fromhex(frame_hex))


def _records():
    return [json.loads(line) for line in CAPTURE.read_text().splitlines() if line.strip()]


async def test_stub_answers_every_recorded_containerd_frame_like_a_plugin():
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
    try:
        # 1. Registration comes first, on connection 2, stream 1.
        conn, frame = await asyncio.wait_for(raw.next_frame(), T)
        assert conn == 2 and frame.stream_id == 1 and frame.type == MessageType.REQUEST
        env_req = decode_request(frame.data)
        assert (env_req.service, env_req.method) == ("nri.pkg.api.v1alpha1.Runtime", "RegisterPlugin")
        reg = api.RegisterPluginRequest.FromString(env_req.payload)
        assert (reg.plugin_name, reg.plugin_idx) == ("capture", "40")
        assert env_req.timeout_nano == 5_000_000_000

        answered = 0
        for rec in records[1:]:
            if rec["dir"] == "plugin->runtime":
                continue
            if rec["conn"] == 2:  # the runtime's reply to a plugin request
                if rec["stream"] == 1:
                    await raw.send(rec["frame_hex"])
                    continue
                # the recorded unsolicited UpdateContainers: make the stub issue it now
                update = asyncio.get_running_loop().create_task(
                    stub.update_containers([api.ContainerUpdate(container_id="x")])
                )
                conn, frame = await asyncio.wait_for(raw.next_frame(), T)
                assert conn == 2 and frame.stream_id == rec["stream"]
                assert decode_request(frame.data).method == "UpdateContainers"
                await raw.send(rec["frame_hex"])
                assert await asyncio.wait_for(update, T) == []
                continue
            await raw.send(rec["frame_hex"])
            conn, frame = await asyncio.wait_for(raw.next_frame(), T)
            assert conn == 1 and frame.stream_id == rec["stream"] and frame.type == MessageType.RESPONSE
            response = request_pb2.Response.FromString(frame.data)
            assert response.status.code == 0, (rec["method"], response.status.message)
            if rec["method"] == "Configure":
                assert api.ConfigureResponse.FromString(response.payload).events == 0x6AF
            if rec["method"] == "CreateContainer":
                adjust = api.CreateContainerResponse.FromString(response.payload).adjust
                assert adjust.annotations["pyprobe.nri.io/seen"] == "true"
            answered += 1
            if rec["method"] == "Synchronize":
                await asyncio.wait_for(stub.ready.wait(), T)

        assert answered == 14
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
