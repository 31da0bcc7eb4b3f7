"""An asyncio client of the CRI runtime service (runtime.v1.RuntimeService) over gRPC.

Only the calls the informer and the QoS manager need: Version, ListPodSandbox,
PodSandboxStatus, ListContainers, ContainerStatus, StopContainer. Every call has a
deadline; failures surface as `CriError` (with `unavailable` set when the runtime
cannot be reached, and `not_found` when the object went away in between).
"""

from __future__ import annotations

import grpc
import grpc.aio

from proto.cri import api_pb2, api_pb2_grpc

DEFAULT_TIMEOUT_S = 2.0
# kubelet's limit for CRI replies: a node with many containers lists more than gRPC's 4 MiB default
MAX_MESSAGE_BYTES = 16 * 1024 * 1024

_UNAVAILABLE = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED})


class CriError(Exception):
    def __init__(self, method: str, code: grpc.StatusCode, details: str) -> None:
        super().__init__("%s: %s %s" % (method, code.name, details))
        self.method = method
        self.code = code
        self.details = details

    @property
    def unavailable(self) -> bool:
        return self.code in _UNAVAILABLE

    @property
    def not_found(self) -> bool:
        return self.code is grpc.StatusCode.NOT_FOUND


def grpc_target(endpoint: str) -> str:
    """kubelet-style endpoint ("unix:///run/x.sock", "/run/x.sock") -> a gRPC target."""
    if endpoint.startswith("unix://"):
        return "unix:" + endpoint[len("unix://"):]
    if endpoint.startswith("/"):
        return "unix:" + endpoint
    return endpoint


class CriClient:
    def __init__(self, endpoint: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.endpoint = endpoint
        self._timeout = timeout_s
        self._channel = grpc.aio.insecure_channel(
            grpc_target(endpoint),
            options=[
                ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
                # a unix socket has no authority; gRPC would otherwise send the path
                ("grpc.default_authority", "localhost"),
                # gRPC's reconnect backoff grows to 120 s; a runtime restart must be seen at
                # the next poll, so keep it short (a poll every few seconds costs nothing)
                ("grpc.initial_reconnect_backoff_ms", 100),
                ("grpc.min_reconnect_backoff_ms", 100),
                ("grpc.max_reconnect_backoff_ms", 1000),
            ],
        )
        self._stub = api_pb2_grpc.RuntimeServiceStub(self._channel)

    async def close(self) -> None:
        await self._channel.close()

    async def _call(self, method: str, request, extra_s: float = 0.0):
        try:
            return await getattr(self._stub, method)(request, timeout=self._timeout + extra_s)
        except grpc.aio.AioRpcError as exc:
            raise CriError(method, exc.code(), exc.details() or "") from None

    async def version(self) -> api_pb2.VersionResponse:
        return await self._call("Version", api_pb2.VersionRequest(version="v1"))

    async def list_pod_sandboxes(self) -> list[api_pb2.PodSandbox]:
        reply = await self._call("ListPodSandbox", api_pb2.ListPodSandboxRequest())
        return list(reply.items)

    async def pod_sandbox_status(self, sandbox_id: str, verbose: bool = True) -> api_pb2.PodSandboxStatusResponse:
        request = api_pb2.PodSandboxStatusRequest(pod_sandbox_id=sandbox_id, verbose=verbose)
        return await self._call("PodSandboxStatus", request)

    async def list_containers(self) -> list[api_pb2.Container]:
        reply = await self._call("ListContainers", api_pb2.ListContainersRequest())
        return list(reply.containers)

    async def container_status(self, container_id: str, verbose: bool = True) -> api_pb2.ContainerStatusResponse:
        request = api_pb2.ContainerStatusRequest(container_id=container_id, verbose=verbose)
        return await self._call("ContainerStatus", request)

    async def stop_container(self, container_id: str, grace_period_s: int = 0) -> None:
        """Stop the container, killing it after `grace_period_s` (the CRI timeout)."""
        request = api_pb2.StopContainerRequest(container_id=container_id, timeout=grace_period_s)
        await self._call("StopContainer", request, extra_s=grace_period_s)
