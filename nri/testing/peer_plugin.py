"""One plugin as the test runtime sees it: its trunk, the ttrpc ends, what it
registered and subscribed to, and a record of what went over the wire."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from typing import Any, cast

import structlog

from nri.events import PLUGIN_SERVICE, STATE_CHANGE_RPC, Event
from nri.masks import NriVersion
from nri.mux.trunk import Trunk
from nri.ttrpc.client import TtrpcClient
from nri.ttrpc.server import TtrpcServer
from proto.nri.pkg.api.v1alpha1 import api_pb2 as api

log = structlog.get_logger(__name__)


@dataclass(slots=True)
class WireRecord:
    """Calls the runtime made to the plugin (method, request) and what came back."""

    calls: list[tuple[str, Any]] = field(default_factory=list)
    responses: list[tuple[str, Any]] = field(default_factory=list)
    unsolicited: list[api.UpdateContainersRequest] = field(default_factory=list)

    def methods(self) -> list[str]:
        return [m for m, _ in self.calls]


class PeerPlugin:
    """A connected plugin. Created on accept; `name`/`index` once registered."""

    def __init__(self, trunk: Trunk, raw_fd: int, version: NriVersion, serial: int) -> None:
        self.trunk = trunk
        self.version = version
        self.serial = serial  # accept order, for tie-breaking equal indexes
        self._raw_fd = raw_fd  # a dup of the socket, only for sending garbage on demand
        self.name = ""
        self.index = ""
        self.nri_version = ""
        self.events: frozenset[Event] = frozenset()
        self.mask = 0
        self.registered: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.synchronized = asyncio.Event()
        self.record = WireRecord()
        self.client: TtrpcClient | None = None
        self.server: TtrpcServer | None = None
        self.close_reason: str | None = None

    @property
    def full_name(self) -> str:
        return self.index + "-" + self.name

    @property
    def is_closed(self) -> bool:
        return self.trunk.is_closed

    def sort_key(self) -> tuple[str, int]:
        return (self.index, self.serial)

    async def call(self, method: str, request: Any, response_type: type, timeout: float | None) -> Any:
        assert self.client is not None
        self.record.calls.append((method, request))
        response = await self.client.call(PLUGIN_SERVICE, method, request, response_type, timeout=timeout)
        self.record.responses.append((method, response))
        return response

    async def state_change(self, event: Event, pod: api.PodSandbox, container: api.Container | None, timeout: float) -> None:
        request = api.StateChangeEvent(event=cast(api.Event, int(event)), pod=pod)  # an enum value is its int
        if container is not None:
            request.container.CopyFrom(container)
        await self.call(STATE_CHANGE_RPC, request, api.Empty, timeout)

    def close(self, reason: str) -> None:
        if self.close_reason is None:
            self.close_reason = reason
            log.info("nri_peer_plugin_closed", plugin=self.full_name, reason=reason)
        if self.client is not None:
            self.client.close()
        if self.server is not None:
            self.server.close()
        self.trunk.close(reason)
        if self._raw_fd >= 0:
            os.close(self._raw_fd)
            self._raw_fd = -1

    def send_raw(self, data: bytes) -> None:
        """Write bytes straight onto the trunk socket, bypassing the mux (misbehaviour)."""
        if self._raw_fd < 0:
            raise ConnectionError("plugin connection already closed")
        os.write(self._raw_fd, data)
