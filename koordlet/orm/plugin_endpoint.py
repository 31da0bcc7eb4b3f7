"""One registered QRM plugin: a gRPC client of its ResourcePlugin service on its socket.

It serves the ORM as a ResourceProvider. A plugin that stops answering is marked
stopped; its allocations stay in force (they are in the table and the checkpoint)
until it registers again. Timeouts are kubelet's for these calls (10 s).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import structlog

from koordlet.orm.allocation import Allocation
from koordlet.orm.plugin_codec import allocations_from_pb, hints_from_pb, resource_request
from koordlet.orm.provider import AllocationError
from koordlet.topology.hint import ProviderHints, TopologyHint
from koordlet.topology.request import ContainerRequest
from proto.k8s.resourceplugin.v1alpha1 import api_pb2 as pb
from proto.k8s.resourceplugin.v1alpha1 import api_pb2_grpc as pb_grpc
from system.errors import InvalidValue

log = structlog.get_logger(__name__)

CALL_TIMEOUT_SECONDS = 10.0
DIAL_TIMEOUT_SECONDS = 10.0


class PluginUnavailable(AllocationError):
    """The plugin serving a resource is not reachable (stopped or not re-registered)."""


@dataclass(slots=True)
class PluginEndpoint:
    name: str  # the resource name it registered
    socket: Path
    options: pb.ResourcePluginOptions
    channel: grpc.aio.Channel | None = None
    stopped: bool = False
    _stub: pb_grpc.ResourcePluginStub | None = field(default=None, repr=False)

    @classmethod
    async def dial(cls, name: str, socket: Path, options: pb.ResourcePluginOptions,
                   timeout: float = DIAL_TIMEOUT_SECONDS) -> "PluginEndpoint":
        channel = grpc.aio.insecure_channel("unix://" + str(socket))
        try:
            await asyncio.wait_for(channel.channel_ready(), timeout)
        except Exception:
            await channel.close()
            raise
        endpoint = cls(name, socket, options, channel)
        endpoint._stub = pb_grpc.ResourcePluginStub(channel)
        return endpoint

    def serves(self, resource: str) -> bool:
        return resource == self.name

    def _client(self) -> pb_grpc.ResourcePluginStub:
        if self.stopped or self._stub is None:
            raise PluginUnavailable("resource plugin %s is not registered (stopped)" % self.name)
        return self._stub

    async def _call(self, method: str, message: object) -> object:
        stub = self._client()
        try:
            return await getattr(stub, method)(message, timeout=CALL_TIMEOUT_SECONDS)
        except grpc.aio.AioRpcError as exc:
            if exc.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                log.warning("orm_plugin_unreachable", plugin=self.name, method=method, code=exc.code().name)
                await self.stop()
                raise PluginUnavailable("resource plugin %s unreachable: %s" % (self.name, exc.details())) from None
            raise AllocationError("resource plugin %s %s failed: %s %s"
                                  % (self.name, method, exc.code().name, exc.details())) from None

    async def topology_hints(self, request: ContainerRequest, resource: str) -> ProviderHints:
        if not self.options.with_topology_alignment:
            return None
        response = await self._call("GetTopologyHints", resource_request(request, resource, None))
        return hints_from_pb(response)  # type: ignore[arg-type]

    async def allocate(self, request: ContainerRequest, resource: str,
                       hint: TopologyHint | None) -> tuple[Allocation, ...]:
        response = await self._call("Allocate", resource_request(request, resource, hint))
        try:
            return allocations_from_pb(request, self.name, response.allocation_result, hint)  # type: ignore[attr-defined]
        except (ValueError, InvalidValue) as exc:
            raise AllocationError("resource plugin %s returned a bad allocation: %s" % (self.name, exc)) from None

    async def remove_pod(self, pod_uid: str) -> None:
        await self._call("RemovePod", pb.RemovePodRequest(pod_uid=pod_uid))

    async def resources_allocation(self) -> pb.GetResourcesAllocationResponse:
        return await self._call("GetResourcesAllocation", pb.GetResourcesAllocationRequest())  # type: ignore[return-value]

    async def stop(self) -> None:
        self.stopped = True
        if self.channel is not None:
            channel, self.channel = self.channel, None
            await channel.close()
