"""The PodResources v1 gRPC server (service v1.PodResourcesLister) on a unix socket.

List, GetAllocatableResources and Get, answered from the ORM's allocations (the truth
about exclusive CPUs and memory nodes, which kubelet's own would not know) and the
informer's pods. Like kubelet: a token bucket of 100 requests/s with a burst of 10
(RESOURCE_EXHAUSTED beyond it); Get of an unknown pod is NOT_FOUND.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import grpc

from koordlet.orm.allocation import OrmAllocations
from koordlet.orm.podresources.kubelet_devices import KubeletDevicesClient
from koordlet.orm.podresources.view import PodResourcesCache, allocatable, fill_pod, list_pods
from koordlet.server.grpc_unix import serve_unix, socket_mode
from koordlet.statesinformer.api import StatesInformer
from koordlet.util.token_bucket import TokenBucket
from proto.k8s.podresources.v1 import api_pb2 as pb
from proto.k8s.podresources.v1 import api_pb2_grpc as pb_grpc

RATE_QPS = 100.0
RATE_BURST = 10


class PodResourcesServicer(pb_grpc.PodResourcesListerServicer):
    def __init__(self, allocations: OrmAllocations, node_memory: Mapping[int, int],
                 states: StatesInformer | None = None, kubelet: KubeletDevicesClient | None = None,
                 limiter: TokenBucket | None = None) -> None:
        self._allocations = allocations
        self._node_memory = node_memory
        self._states = states
        self._kubelet = kubelet
        self._limiter = limiter
        self._cache = PodResourcesCache()

    async def _admit(self, context: grpc.aio.ServicerContext) -> None:
        if self._limiter is not None and not self._limiter.allow():
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "rejected by rate limit")

    async def _kubelet_devices(self) -> Mapping:
        return {} if self._kubelet is None else await self._kubelet.devices()

    async def List(self, request: pb.ListPodResourcesRequest, context) -> pb.ListPodResourcesResponse:
        await self._admit(context)
        pods = self._states.pods() if self._states is not None else ()
        return list_pods(pods, self._allocations.entries(), await self._kubelet_devices(), self._cache)

    async def GetAllocatableResources(self, request: pb.AllocatableResourcesRequest,
                                      context) -> pb.AllocatableResourcesResponse:
        await self._admit(context)
        devices = [] if self._kubelet is None else await self._kubelet.allocatable_devices()
        cpus = self._allocations.online_cpus - self._allocations.reserved_cpus
        return allocatable(cpus, self._node_memory, devices)

    async def Get(self, request: pb.GetPodResourcesRequest, context) -> pb.GetPodResourcesResponse:
        await self._admit(context)
        found = self._find(request.pod_namespace, request.pod_name)
        if found is None:
            await context.abort(grpc.StatusCode.NOT_FOUND, "pod %s in namespace %s not found"
                                % (request.pod_name, request.pod_namespace))
            raise AssertionError("abort raises")  # grpc.aio's abort never returns
        uid, containers = found
        rows = [a for a in self._allocations.entries() if a.pod_uid == uid]
        response = pb.GetPodResourcesResponse()
        fill_pod(response.pod_resources, request.pod_namespace, request.pod_name, containers, rows,
                 await self._kubelet_devices())
        return response

    def _find(self, namespace: str, name: str) -> tuple[str, list[str]] | None:
        if self._states is not None:
            for pod in self._states.pods():
                if pod.namespace == namespace and pod.name == name:
                    return pod.uid, [c.name for c in pod.containers]
        for allocation in self._allocations.entries():
            if allocation.pod_namespace == namespace and allocation.pod_name == name:
                return allocation.pod_uid, []
        return None


async def start_pod_resources_server(socket: Path, servicer: PodResourcesServicer,
                                     group: int | None = None) -> grpc.aio.Server:
    """Serve on `socket`: mode 0600, or 0660 owned by `group` when one is given."""
    server = grpc.aio.server()
    pb_grpc.add_PodResourcesListerServicer_to_server(servicer, server)
    await serve_unix(server, socket, socket_mode(group), group)
    return server
