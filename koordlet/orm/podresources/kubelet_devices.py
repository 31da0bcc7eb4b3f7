"""Devices kubelet's own PodResources socket reports (--orm-devices-provider=kubelet), to merge
into our answers. A kubelet that does not answer costs the caller nothing but its devices."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import structlog

from koordlet.orm.podresources.view import KubeletDevices
from proto.k8s.podresources.v1 import api_pb2 as pb
from proto.k8s.podresources.v1 import api_pb2_grpc as pb_grpc

log = structlog.get_logger(__name__)

CALL_TIMEOUT_SECONDS = 2.0
# kubelet's reference client allows 16 MiB answers; Python's default is 4 MiB
MAX_MESSAGE_BYTES = 16 * 1024 * 1024


class KubeletDevicesClient:
    def __init__(self, endpoints: tuple[str, ...]) -> None:
        self._channels = [grpc.aio.insecure_channel(
            endpoint if "://" in endpoint else "unix://" + endpoint,
            options=[("grpc.max_receive_message_length", MAX_MESSAGE_BYTES)]) for endpoint in endpoints]

    async def _answers(self, method: str, request: object) -> AsyncIterator[object]:
        """Each kubelet's answer to `method`; one that does not answer is logged and skipped."""
        for channel in self._channels:
            try:
                yield await getattr(pb_grpc.PodResourcesListerStub(channel), method)(
                    request, timeout=CALL_TIMEOUT_SECONDS)
            except grpc.aio.AioRpcError as exc:
                log.warning("kubelet_pod_resources_unavailable", method=method, code=exc.code().name,
                            details=exc.details())

    async def devices(self) -> KubeletDevices:
        found: dict[tuple[str, str, str], list[pb.ContainerDevices]] = {}
        async for response in self._answers("List", pb.ListPodResourcesRequest()):
            for pod in response.pod_resources:  # type: ignore[attr-defined]
                for container in pod.containers:
                    if container.devices:
                        found.setdefault((pod.namespace, pod.name, container.name), []).extend(container.devices)
        return found

    async def allocatable_devices(self) -> list[pb.ContainerDevices]:
        devices: list[pb.ContainerDevices] = []
        async for response in self._answers("GetAllocatableResources", pb.AllocatableResourcesRequest()):
            devices.extend(response.devices)  # type: ignore[attr-defined]
        return devices

    async def close(self) -> None:
        for channel in self._channels:
            await channel.close()
