"""Kubernetes mode: the node's NodeSLO object (slo.koordinator.sh/v1alpha1, cluster-scoped,
named after the node) followed through a watch (util/kube_watch.py), as koordlet's informer
does: nothing is sent while nothing changes, where a poll every 10 s would be 500 GETs a
second at 5,000 nodes.

Each version is validated once (`ValidatedNodeSLO.apply`); a refused one keeps the last
good NodeSLO, and the same refused version seen again after a relist is not logged again.
A deleted object keeps the last good NodeSLO in force (the slo-controller recreates it).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Mapping
from typing import Any, Callable

import structlog

from koordlet.config import Config
from koordlet.slo.source import ValidatedNodeSLO
from koordlet.util.kube_client import KubeApi
from koordlet.util.kube_watch import ObjectWatch

log = structlog.get_logger(__name__)


def node_slo_resource():
    from lightkube.generic_resource import create_global_resource

    return create_global_resource("slo.koordinator.sh", "v1alpha1", "NodeSLO", "nodeslos")


class NodeSLOWatch(ValidatedNodeSLO):
    name = "nodeslo-cluster"

    def __init__(self, config: Config, api: KubeApi, sleep: Callable[[float], Any] = asyncio.sleep,
                 rand: Callable[[], float] = random.random) -> None:
        super().__init__()
        self.node = config.common.node_name
        self.watch = ObjectWatch("NodeSLO", api, self._stream, self.node, self._on_document, sleep, rand)
        self.resource_version: str | None = None  # of the object whose spec is in force or was refused last
        self._refused_version: str | None = None

    def _stream(self, client: Any, version: str | None, on_error: Callable[[Exception, int], Any]) -> Any:
        return client.watch(node_slo_resource(), fields={"metadata.name": self.node}, resource_version=version,
                            on_error=on_error)

    def source(self) -> str:
        if self.resource_version is None:
            return "defaults (no NodeSLO/%s seen yet)" % self.node
        return "NodeSLO/%s resourceVersion %s" % (self.node, self.resource_version)

    async def start(self) -> None:
        if not await self.watch.start():
            log.warning("node_slo_defaults", reason="no API client: koordlet's defaults stay in force")

    async def stop(self) -> None:
        await self.watch.stop()

    def ready(self) -> bool:
        return self.watch.ready()

    def _on_document(self, kind: str, document: Mapping[str, Any]) -> None:
        version = (document.get("metadata") or {}).get("resourceVersion")
        if kind == "DELETED":
            log.warning("node_slo_deleted", node=self.node, kept="last good NodeSLO")
            return
        if kind not in ("ADDED", "MODIFIED"):
            return
        if version is not None and version == self._refused_version:
            return  # the same refused object again (a relist): already logged and counted
        self.resource_version = version
        refused_before = self.refusals
        self.apply(document, "NodeSLO/%s@%s" % (self.node, version))
        if self.refusals > refused_before:
            self._refused_version = version
