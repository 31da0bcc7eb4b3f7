"""Kubernetes mode: the node's own Node object, followed through a watch (util/kube_watch.py)
as koordlet's node informer does, so that what the agent reports honours kubelet's
allocatable (system and kube reservations subtracted) and the node's labels and annotations
(Katalyst's overcommit annotations among them), instead of the host's raw figures.

`node_from_object` is the pure conversion; a Node whose resource lists do not parse keeps
the host's figures for them and says so once per version.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Callable

import structlog

from koordlet.statesinformer.model import NodeInfo
from koordlet.statesinformer.resource_list import ResourceListError, parse_resource_list
from koordlet.util.kube_client import KubeApi
from koordlet.util.kube_watch import ObjectWatch

log = structlog.get_logger(__name__)


def _strings(value: Any) -> Mapping[str, str]:
    if not isinstance(value, Mapping):
        return MappingProxyType({})
    return MappingProxyType({str(k): str(v) for k, v in value.items()})


def node_from_object(document: Mapping[str, Any], host: NodeInfo) -> tuple[NodeInfo, str | None]:
    """The node from its Node object, host figures where the object has none; the problem
    with the object's resource lists, if any."""
    metadata = document.get("metadata") or {}
    status = document.get("status") or {}
    problem = None
    try:
        capacity = parse_resource_list(status.get("capacity"), "status.capacity")
        allocatable = parse_resource_list(status.get("allocatable"), "status.allocatable")
    except ResourceListError as exc:
        problem, capacity, allocatable = str(exc), MappingProxyType({}), MappingProxyType({})
    return NodeInfo(
        name=host.name,
        labels=_strings(metadata.get("labels")),
        annotations=_strings(metadata.get("annotations")),
        capacity=MappingProxyType({**host.capacity, **capacity}),
        allocatable=MappingProxyType({**host.allocatable, **allocatable}),
    ), problem


class NodeWatch:
    name = "node-watch"

    def __init__(self, api: KubeApi, host: NodeInfo, set_node: Callable[[NodeInfo], None], **timing: Any) -> None:
        self._host = host
        self._set_node = set_node
        self.watch = ObjectWatch("Node", api, self._stream, host.name, self._on_document, **timing)
        self._logged_problem: str | None = None

    def _stream(self, client: Any, version: str | None, on_error: Callable[[Exception, int], Any]) -> Any:
        from lightkube.resources.core_v1 import Node

        return client.watch(Node, fields={"metadata.name": self._host.name}, resource_version=version,
                            on_error=on_error)

    async def start(self) -> None:
        await self.watch.start()

    async def stop(self) -> None:
        await self.watch.stop()

    def ready(self) -> bool:
        return self.watch.ready()

    def _on_document(self, kind: str, document: Mapping[str, Any]) -> None:
        if kind not in ("ADDED", "MODIFIED"):
            return  # a deleted Node: the agent is about to go with it; keep what it knew
        node, problem = node_from_object(document, self._host)
        if problem is not None and problem != self._logged_problem:
            self._logged_problem = problem
            log.warning("node_object_invalid", node=self._host.name, error=problem, kept="host figures")
        self._set_node(node)
