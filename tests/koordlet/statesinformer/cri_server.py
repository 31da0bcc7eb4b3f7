"""A CRI runtime service on a unix socket, served by real gRPC from our proto, with a
small model of containerd's state (including its verbose info documents)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import grpc.aio

from proto.cri import api_pb2, api_pb2_grpc


@dataclass
class FakeSandbox:
    id: str
    uid: str
    name: str
    cgroup_parent: str  # as containerd's config holds it ("/kubepods/..." or a slice)
    state: int = api_pb2.SANDBOX_READY
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    created_at: int = 1


@dataclass
class FakeContainer:
    id: str
    sandbox_id: str
    name: str
    cgroups_path: str
    state: int = api_pb2.CONTAINER_RUNNING
    pid: int = 4242
    cpu_shares: int = 512
    memory_limit: int = 0


class FakeRuntime(api_pb2_grpc.RuntimeServiceServicer):
    def __init__(self) -> None:
        self.sandboxes: dict[str, FakeSandbox] = {}
        self.containers: dict[str, FakeContainer] = {}
        self.calls: list[str] = []
        self.old_containerd = False  # no config in sandbox info (containerd 1.x)

    async def Version(self, request, context):
        self.calls.append("Version")
        return api_pb2.VersionResponse(version="0.1.0", runtime_name="containerd",
                                       runtime_version="v2.3.4", runtime_api_version="v1")

    async def ListPodSandbox(self, request, context):
        self.calls.append("ListPodSandbox")
        return api_pb2.ListPodSandboxResponse(items=[
            api_pb2.PodSandbox(id=s.id, state=s.state, created_at=s.created_at, labels=s.labels,
                               annotations=s.annotations,
                               metadata=api_pb2.PodSandboxMetadata(name=s.name, uid=s.uid, namespace="default"))
            for s in self.sandboxes.values()])

    async def PodSandboxStatus(self, request, context):
        self.calls.append("PodSandboxStatus")
        s = self.sandboxes.get(request.pod_sandbox_id)
        if s is None:
            await context.abort(grpc.StatusCode.NOT_FOUND, "an error occurred when try to find sandbox")
        own = s.cgroup_parent + (":cri-containerd:" if s.cgroup_parent.endswith(".slice") else "/") + s.id
        info = {"pid": 600, "runtimeSpec": {"linux": {"cgroupsPath": own}}}
        if not self.old_containerd:
            info["config"] = {"metadata": {"name": s.name}, "linux": {"cgroup_parent": s.cgroup_parent}}
        return api_pb2.PodSandboxStatusResponse(
            status=api_pb2.PodSandboxStatus(id=s.id, state=s.state),
            info={"info": json.dumps(info)} if request.verbose else {})

    async def ListContainers(self, request, context):
        self.calls.append("ListContainers")
        return api_pb2.ListContainersResponse(containers=[
            api_pb2.Container(id=c.id, pod_sandbox_id=c.sandbox_id, state=c.state,
                              metadata=api_pb2.ContainerMetadata(name=c.name))
            for c in self.containers.values()])

    async def ContainerStatus(self, request, context):
        self.calls.append("ContainerStatus")
        c = self.containers.get(request.container_id)
        if c is None:
            await context.abort(grpc.StatusCode.NOT_FOUND, "an error occurred when try to find container")
        status = api_pb2.ContainerStatus(id=c.id, state=c.state, metadata=api_pb2.ContainerMetadata(name=c.name))
        status.resources.linux.cpu_shares = c.cpu_shares
        status.resources.linux.cpu_period = 100000
        status.resources.linux.memory_limit_in_bytes = c.memory_limit
        info = {"sandboxID": c.sandbox_id, "pid": c.pid, "runtimeSpec": {"linux": {"cgroupsPath": c.cgroups_path}}}
        return api_pb2.ContainerStatusResponse(status=status, info={"info": json.dumps(info)} if request.verbose else {})

    async def StopContainer(self, request, context):
        self.calls.append("StopContainer")
        c = self.containers.get(request.container_id)
        if c is None:
            await context.abort(grpc.StatusCode.NOT_FOUND, "not found")
        c.state = api_pb2.CONTAINER_EXITED
        return api_pb2.StopContainerResponse()


async def serve(runtime: FakeRuntime, socket: Path) -> grpc.aio.Server:
    server = grpc.aio.server()
    api_pb2_grpc.add_RuntimeServiceServicer_to_server(runtime, server)
    server.add_insecure_port("unix:" + str(socket))
    await server.start()
    return server
