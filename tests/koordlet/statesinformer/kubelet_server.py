"""A local HTTP server answering GET /pods like kubelet's read-only port."""

from __future__ import annotations

import asyncio
import json
from typing import Any


class FakeKubelet:
    def __init__(self) -> None:
        self.pods: list[dict[str, Any]] = []
        self.status = 200
        self.body: bytes | None = None  # overrides the PodList
        self.chunked = False
        self.requests: list[bytes] = []
        self._server: asyncio.AbstractServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        port = self._server.sockets[0].getsockname()[1]
        return "http://127.0.0.1:%d/pods" % port

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        self.requests.append(head)
        body = self.body if self.body is not None else json.dumps(
            {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": self.pods}).encode()
        reason = {200: b"OK", 404: b"Not Found"}.get(self.status, b"Error")
        if self.chunked:
            half = len(body) // 2
            payload = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (body[:half], body[half:]) if part)
            writer.write(b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                         % (self.status, reason) + payload + b"0\r\n\r\n")
        else:
            writer.write(b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                         % (self.status, reason, len(body)) + body)
        await writer.drain()
        writer.close()


def pod_json(uid: str, name: str = "web", priority: int | None = None, qos: str = "Burstable",
             containers: list[dict[str, Any]] | None = None, labels: dict[str, str] | None = None,
             annotations: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": containers if containers is not None else [
        {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "500m", "memory": "64Mi"},
                                                            "limits": {"cpu": "1", "memory": "128Mi"}}}]}
    if priority is not None:
        spec["priority"] = priority
        spec["priorityClassName"] = "koord-prod" if priority >= 9000 else "koord-batch"
    return {"metadata": {"uid": uid, "name": name, "namespace": "default", "labels": labels or {},
                         "annotations": annotations or {}},
            "spec": spec, "status": {"phase": "Running", "qosClass": qos}}
