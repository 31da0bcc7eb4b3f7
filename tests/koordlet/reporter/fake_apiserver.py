"""A local HTTP server speaking the API server's rules for cluster-scoped custom resources
(any group and plural): GET/POST objects, PUT of the object or of its status subresource
with optimistic concurrency (409 Conflict when metadata.resourceVersion is stale; a status
PUT changes status only, an object PUT all but status), POST ignoring status, JSON merge
PATCH of metadata, and watch streams (chunked JSON lines, ERROR events carrying a Status
such as 410 Gone). It records and answers; it decides nothing for the agent."""

from __future__ import annotations

import asyncio
import copy
import json
import re
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h11
import yaml

_PATH = re.compile(r"^/apis/(?P<group>[^/]+)/(?P<version>[^/]+)/(?P<plural>[^/?]+)(?:/(?P<name>[^/?]+))?"
                   r"(?:/(?P<sub>status))?(?:\?.*)?$")


@dataclass
class Recorded:
    method: str
    path: str
    body: Any
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    query: dict[str, str] = field(default_factory=dict)


@dataclass
class FakeApiServer:
    objects: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)  # (plural, name) -> object
    requests: list[Recorded] = field(default_factory=list)
    # writes by "someone else" to apply just before the next PUTs (one per PUT)
    concurrent_writes: int = 0
    fail_with: int | None = None  # answer every request with this code
    warning: str | None = None  # a Warning header on every answer (as for a dropped unknown field)
    # how an object is written in an answer: None as stored (status last), or its keys in this order
    answer_key_order: tuple[str, ...] | None = None
    put_answer: bytes | None = None  # the body of every successful PUT's answer instead of the object
    # watch requests (?watch=true): each plays the next script of events, then ends its stream;
    # with none left the stream stays open and silent, as the API server's does
    watch_scripts: list[list[dict[str, Any]]] = field(default_factory=list)
    watch_params: list[dict[str, str]] = field(default_factory=list)
    _resource_version: int = 100
    _server: asyncio.base_events.Server | None = None
    _writers: set = field(default_factory=set)

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return "http://127.0.0.1:%d" % self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            for writer in list(self._writers):
                writer.close()
            await self._server.wait_closed()

    def put_object(self, plural: str, obj: dict[str, Any]) -> None:
        obj = copy.deepcopy(obj)
        obj.setdefault("metadata", {})["resourceVersion"] = self._bump()
        self.objects[(plural, obj["metadata"]["name"])] = obj

    def _bump(self) -> str:
        self._resource_version += 1
        return str(self._resource_version)

    def calls(self, method: str) -> list[Recorded]:
        return [r for r in self.requests if r.method == method]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        conn = h11.Connection(h11.SERVER)
        request: h11.Request | None = None
        body = b""
        try:
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    data = await reader.read(65536)
                    conn.receive_data(data)
                    if not data and conn.their_state is not h11.DONE:
                        return
                    continue
                if isinstance(event, h11.Request):
                    request, body = event, b""
                elif isinstance(event, h11.Data):
                    body += event.data
                elif isinstance(event, h11.EndOfMessage) and request is not None and _is_watch(request):
                    await self._stream_watch(conn, writer, request)
                    return
                elif isinstance(event, h11.EndOfMessage) and request is not None:
                    code, reply = self._answer(request.method.decode(), request.target.decode(), body)
                    self.requests[-1].headers = {k.decode().lower(): v.decode() for k, v in request.headers}
                    payload = self._payload(request.method.decode(), code, reply)
                    headers = [("content-type", "application/json"), ("content-length", str(len(payload)))]
                    if self.warning is not None:
                        headers.append(("warning", self.warning))
                    writer.write(conn.send(h11.Response(status_code=code, headers=headers)))
                    writer.write(conn.send(h11.Data(data=payload)))
                    writer.write(conn.send(h11.EndOfMessage()))
                    await writer.drain()
                    if conn.our_state is h11.MUST_CLOSE:
                        return
                    conn.start_next_cycle()
                elif isinstance(event, h11.ConnectionClosed):
                    return
        except (ConnectionError, h11.RemoteProtocolError, asyncio.CancelledError):
            return
        finally:
            self._writers.discard(writer)
            writer.close()

    async def _stream_watch(self, conn: h11.Connection, writer: asyncio.StreamWriter, request: h11.Request) -> None:
        """A watch answer: chunked JSON lines, one event each (an ERROR event carries a Status)."""
        target = request.target.decode()
        params = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(target).query))
        self.watch_params.append(params)
        self.requests.append(Recorded("WATCH", target.split("?")[0], None, 200,
                                      {k.decode().lower(): v.decode() for k, v in request.headers}))
        writer.write(conn.send(h11.Response(status_code=200, headers=[
            ("content-type", "application/json"), ("transfer-encoding", "chunked")])))
        await writer.drain()
        if not self.watch_scripts:
            await asyncio.Event().wait()  # open and silent until the server stops
        for watch_event in self.watch_scripts.pop(0):
            writer.write(conn.send(h11.Data(data=json.dumps(watch_event).encode() + b"\n")))
            await writer.drain()
        writer.write(conn.send(h11.EndOfMessage()))
        await writer.drain()

    def _answer(self, method: str, target: str, raw: bytes) -> tuple[int, dict[str, Any]]:
        body = json.loads(raw) if raw else None
        code, reply = self._route(method, target, body)
        query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(target).query))
        self.requests.append(Recorded(method, target.split("?")[0], body, code, query=query))
        return code, reply

    def _payload(self, method: str, code: int, reply: dict[str, Any]) -> bytes:
        if method == "PUT" and code == 200 and self.put_answer is not None:
            return self.put_answer
        if self.answer_key_order is not None and "metadata" in reply:
            order = self.answer_key_order
            reply = {key: reply[key] for key in sorted(reply, key=lambda k: order.index(k) if k in order else len(order))}
        return json.dumps(reply).encode()

    def _route(self, method: str, target: str, body: Any) -> tuple[int, dict[str, Any]]:
        if self.fail_with is not None:
            return _status(self.fail_with, "InternalError", "injected failure")
        match = _PATH.match(target)
        if match is None:
            return _status(404, "NotFound", "no route " + target)
        plural, name, sub = match["plural"], match["name"], match["sub"]
        key = (plural, name or "")
        if method == "GET" and name:
            return (200, copy.deepcopy(self.objects[key])) if key in self.objects else _not_found(plural, name)
        if method == "POST" and not name:
            name = body["metadata"]["name"]
            if (plural, name) in self.objects:
                return _status(409, "AlreadyExists", "%s %s already exists" % (plural, name))
            created = {k: v for k, v in body.items() if k != "status"}  # status subresource: POST ignores it
            self.put_object(plural, created)
            return 201, copy.deepcopy(self.objects[(plural, name)])
        if method == "PUT" and name:
            if key not in self.objects:
                return _not_found(plural, name)
            stored = self.objects[key]
            if self.concurrent_writes:
                self.concurrent_writes -= 1
                stored["metadata"]["resourceVersion"] = self._bump()
            if body.get("metadata", {}).get("resourceVersion") != stored["metadata"]["resourceVersion"]:
                return _status(409, "Conflict", "Operation cannot be fulfilled on %s \"%s\": the object has been "
                                                "modified; please apply your changes to the latest version" % (plural, name))
            if sub == "status":
                stored["status"] = body.get("status")
            else:
                status = stored.get("status")
                stored = self.objects[key] = {k: v for k, v in copy.deepcopy(body).items() if k != "status"}
                if status is not None:
                    stored["status"] = status
            stored["metadata"]["resourceVersion"] = self._bump()
            return 200, copy.deepcopy(stored)
        if method == "PATCH" and name:
            if key not in self.objects:
                return _not_found(plural, name)
            stored = self.objects[key]
            annotations = body.get("metadata", {}).get("annotations", {})
            stored["metadata"].setdefault("annotations", {}).update(annotations)
            stored["metadata"]["resourceVersion"] = self._bump()
            return 200, copy.deepcopy(stored)
        return _status(405, "MethodNotAllowed", method)


def _is_watch(request: h11.Request) -> bool:
    query = urllib.parse.urlsplit(request.target.decode()).query
    return request.method == b"GET" and dict(urllib.parse.parse_qsl(query)).get("watch") in ("true", "1")


def gone_event(message: str = "too old resource version: 5 (90)") -> dict[str, Any]:
    return {"type": "ERROR", "object": _status(410, "Expired", message)[1]}


def _not_found(plural: str, name: str) -> tuple[int, dict[str, Any]]:
    return _status(404, "NotFound", '%s "%s" not found' % (plural, name))


def _status(code: int, reason: str, message: str) -> tuple[int, dict[str, Any]]:
    return code, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                  "message": message, "reason": reason, "code": code}


def kubeconfig(directory: Path, server: str) -> Path:
    """A kubeconfig (bearer token) pointing the daemon's client at `server`."""
    path = directory / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "test",
        "clusters": [{"name": "local", "cluster": {"server": server}}],
        "users": [{"name": "agent", "user": {"token": "test-token"}}],
        "contexts": [{"name": "test", "context": {"cluster": "local", "user": "agent"}}],
    }))
    return path
