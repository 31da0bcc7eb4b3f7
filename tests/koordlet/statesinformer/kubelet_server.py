"""A local server answering GET /pods like kubelet: its read-only port (http), or its
secure port (https with a self-signed certificate, a bearer token it accepts)."""

from __future__ import annotations

import asyncio
import json
import ssl
import subprocess
from pathlib import Path
from typing import Any


def self_signed_cert(directory: Path, name: str = "kubelet") -> tuple[Path, Path]:
    """(certificate, key) for 127.0.0.1, made as kubelet makes its own: self-signed."""
    cert, key = directory / (name + ".crt"), directory / (name + ".key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=" + name,
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    return cert, key


class FakeKubelet:
    def __init__(self, cert: tuple[Path, Path] | None = None) -> None:
        self.pods: list[dict[str, Any]] = []
        self.status = 200
        self.body: bytes | None = None  # overrides the PodList
        self.chunked = False
        self.token: str | None = None  # when set, any other bearer token gets 401
        self.requests: list[bytes] = []
        self._cert = cert
        self._server: asyncio.AbstractServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        port = self._server.sockets[0].getsockname()[1]
        return "%s://127.0.0.1:%d/pods" % ("https" if self._cert else "http", port)

    async def start(self) -> None:
        context = None
        if self._cert is not None:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(*self._cert)
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=context)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (OSError, asyncio.IncompleteReadError):
            return  # the client refused our certificate
        self.requests.append(head)
        status, body = self._answer(head)
        reason = {200: b"OK", 401: b"Unauthorized", 403: b"Forbidden", 404: b"Not Found"}.get(status, b"Error")
        if self.chunked:
            half = len(body) // 2
            payload = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (body[:half], body[half:]) if part)
            writer.write(b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                         % (status, reason) + payload + b"0\r\n\r\n")
        else:
            writer.write(b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                         % (status, reason, len(body)) + body)
        await writer.drain()
        writer.close()

    def _answer(self, head: bytes) -> tuple[int, bytes]:
        if self.token is not None and authorization(head) != "Bearer " + self.token:
            return 401, b"Unauthorized"
        body = self.body if self.body is not None else json.dumps(
            {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": self.pods}).encode()
        return self.status, body


def authorization(head: bytes) -> str | None:
    """The Authorization header of a request head, if any."""
    for line in head.decode("latin-1").split("\r\n")[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "authorization":
            return value.strip()
    return None


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
