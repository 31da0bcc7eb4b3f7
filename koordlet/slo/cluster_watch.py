"""Kubernetes mode NodeSLO: the cluster-scoped object named after the node
(slo.koordinator.sh/v1alpha1 `nodeslos`), read with the daemon's lightkube client.

The object changes rarely, so it is read every `poll_interval` seconds rather than
watched; each answer goes through `ValidatedNodeSLO.apply`, so an invalid object is
refused naming the field and the last good NodeSLO stays in force. No object yet (404)
or an unreachable API server keeps what is in force (koordlet's defaults at first).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable

import structlog

from koordlet.config import Config
from koordlet.slo.source import ValidatedNodeSLO
from koordlet.util.kube_client import KubeClientError, open_kube_client
from koordlet.util.periodic import Periodic

log = structlog.get_logger(__name__)

POLL_SECONDS = 10.0


def node_slo_resource():
    from lightkube.generic_resource import create_global_resource

    return create_global_resource("slo.koordinator.sh", "v1alpha1", "NodeSLO", "nodeslos")


class NodeSLOWatch(ValidatedNodeSLO):
    """A daemon module: the node's NodeSLO object from the API server."""

    name = "nodeslo-cluster"

    def __init__(self, config: Config, poll_interval: float = POLL_SECONDS,
                 client_factory: Callable[[Config], Any] = open_kube_client) -> None:
        super().__init__()
        self.config = config
        self.node = config.common.node_name
        self.poll_interval = poll_interval
        self._client_factory = client_factory
        self._client: Any = None
        self._resource: Any = None
        self._poll = Periodic("nodeslo-cluster", self._read_round, poll_interval, event="node_slo_poll_failed")
        self._unreachable_logged = False

    async def read_once(self) -> bool:
        """GET the object and apply it; True when it changed the NodeSLO in force."""
        from lightkube import ApiError

        origin = f"NodeSLO/{self.node}"
        try:
            obj = await self._client.get(self._resource, self.node)
        except ApiError as exc:
            if getattr(exc.status, "code", None) == 404:
                return False  # not created yet: the NodeSLO in force stays
            log.warning("node_slo_read_failed", origin=origin, error=str(exc))
            return False
        except Exception as exc:  # httpx transport errors: the API server is unreachable
            if not exc.__class__.__module__.startswith(("httpx", "httpcore", "anyio")) \
                    and not isinstance(exc, OSError):
                raise
            if not self._unreachable_logged:
                log.warning("node_slo_unreachable", origin=origin, error=str(exc))
                self._unreachable_logged = True
            return False
        self._unreachable_logged = False
        document = obj.to_dict() if hasattr(obj, "to_dict") else obj
        if not isinstance(document, Mapping):
            document = dict(document)
        return self.apply(document, origin)

    async def _read_round(self) -> None:
        await self.read_once()

    async def start(self) -> None:
        try:
            self._client = self._client_factory(self.config)
        except KubeClientError as exc:
            log.warning("node_slo_defaults", reason=str(exc))
            return
        self._resource = node_slo_resource()
        self._poll.start()

    async def stop(self) -> None:
        await self._poll.stop()
        if self._client is not None:
            await self._client.close()
            self._client = None

    def ready(self) -> bool:
        """Without a client the defaults are in force and nothing is polled; otherwise the
        poll must be alive."""
        return self._client is None or self._poll.alive()
