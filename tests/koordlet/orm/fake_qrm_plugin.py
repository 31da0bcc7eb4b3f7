"""A small QRM resource plugin on the generated resourceplugin.v1alpha1 stubs, as Katalyst's
own plugins behave: it serves ResourcePlugin on <socket dir>/<endpoint> and registers at
<socket dir>/kubelet.sock. It answers fixed hints and hands out CPUs from a list."""

from __future__ import annotations

from pathlib import Path

import grpc

from proto.k8s.resourceplugin.v1alpha1 import api_pb2 as pb
from proto.k8s.resourceplugin.v1alpha1 import api_pb2_grpc as pb_grpc


class FakeQrmPlugin(pb_grpc.ResourcePluginServicer):
    def __init__(self, resource: str, hint_nodes: list[list[int]], cpus_to_give: list[int]) -> None:
        self.resource = resource
        self.hint_nodes = hint_nodes
        self.free = list(cpus_to_give)
        self.calls: list[tuple[str, object]] = []
        self.listing = pb.GetResourcesAllocationResponse()  # what GetResourcesAllocation answers
        self.server: grpc.aio.Server | None = None

    async def GetResourcePluginOptions(self, request, context):
        self.calls.append(("GetResourcePluginOptions", request))
        return pb.ResourcePluginOptions(with_topology_alignment=True, need_reconcile=True)

    async def GetTopologyHints(self, request, context):
        self.calls.append(("GetTopologyHints", request))
        hints = [pb.TopologyHint(nodes=n, preferred=len(n) == 1) for n in self.hint_nodes]
        return pb.ResourceHintsResponse(
            pod_uid=request.pod_uid, pod_namespace=request.pod_namespace, pod_name=request.pod_name,
            container_name=request.container_name, resource_name=self.resource,
            resource_hints={self.resource: pb.ListOfTopologyHints(hints=hints)})

    async def Allocate(self, request, context):
        self.calls.append(("Allocate", request))
        count = int(request.resource_requests[self.resource])
        given, self.free = self.free[:count], self.free[count:]  # ids, or whatever text a test planted
        info = pb.ResourceAllocationInfo(
            oci_property_name="CpusetCpus", is_node_resource=True, is_scalar_resource=True,
            allocated_quantity=float(count), allocation_result=",".join(map(str, given)),
            topology_assignments={n: 1 for n in request.hint.nodes})
        return pb.ResourceAllocationResponse(
            pod_uid=request.pod_uid, container_name=request.container_name, resource_name=self.resource,
            allocation_result=pb.ResourceAllocation(resource_allocation={self.resource: info}))

    async def GetResourcesAllocation(self, request, context):
        self.calls.append(("GetResourcesAllocation", request))
        return self.listing

    async def RemovePod(self, request, context):
        self.calls.append(("RemovePod", request))
        return pb.RemovePodResponse()

    async def serve(self, socket: Path) -> None:
        self.server = grpc.aio.server()
        pb_grpc.add_ResourcePluginServicer_to_server(self, self.server)
        self.server.add_insecure_port("unix://" + str(socket))
        await self.server.start()

    async def register(self, registration_socket: Path, endpoint: str, version: str = "v1alpha1") -> None:
        async with grpc.aio.insecure_channel("unix://" + str(registration_socket)) as channel:
            await pb_grpc.RegistrationStub(channel).Register(pb.RegisterRequest(
                version=version, endpoint=endpoint, resource_name=self.resource,
                options=pb.ResourcePluginOptions(with_topology_alignment=True, need_reconcile=True)),
                timeout=5)

    async def stop(self) -> None:
        if self.server is not None:
            await self.server.stop(grace=None)
            self.server = None

    def called(self, method: str) -> list:
        return [message for name, message in self.calls if name == method]
