"""Writes the node's NodeResourceTopology to the API server: create it when absent, update
it only when what we own of it differs (from our last write, then from the cluster's copy,
so a restart does not rewrite an unchanged object). A 409 means someone wrote it between
our GET and our write: wait as the NodeMetric sink does (kube_sink.conflict_wait), GET again
and retry, a bounded number of times."""

from __future__ import annotations

import asyncio
from enum import Enum
from typing import TYPE_CHECKING, Any, Callable, Mapping

import structlog

from koordlet.reporter.kube_sink import CONFLICT_RETRIES, SinkError, conflict_wait, status_code
from koordlet.reporter.nrt import canonical, updated

if TYPE_CHECKING:
    from lightkube import AsyncClient

log = structlog.get_logger(__name__)


class NrtOutcome(Enum):
    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"


def _resource():
    from lightkube.generic_resource import create_global_resource

    # literal, like kube_sink's: tests/deploy/test_rbac.py reads the resource from this call
    return create_global_resource("topology.node.k8s.io", "v1alpha2", "NodeResourceTopology", "noderesourcetopologies")


class NrtWriter:
    def __init__(self, client: "AsyncClient", node_name: str, sleep: Callable[[float], Any] = asyncio.sleep) -> None:
        self._client = client
        self._sleep = sleep
        self._node = node_name
        self._resource = _resource()
        self._written: str | None = None  # canonical() of the last object the cluster took

    async def write(self, desired: Mapping[str, Any]) -> NrtOutcome:
        from lightkube import ApiError

        wanted = canonical(desired)
        if wanted == self._written:
            return NrtOutcome.UNCHANGED
        for attempt in range(CONFLICT_RETRIES):
            if attempt:
                await self._sleep(conflict_wait(attempt))
            try:
                current = dict(await self._client.get(self._resource, self._node))
            except ApiError as exc:
                if status_code(exc) != 404:
                    raise SinkError("get noderesourcetopology %s: %s" % (self._node, exc)) from exc
                current = None
            try:
                if current is None:
                    await self._client.create(self._resource(dict(desired)))
                    outcome = NrtOutcome.CREATED
                elif canonical(current) == wanted:
                    outcome = NrtOutcome.UNCHANGED
                else:
                    await self._client.replace(self._resource(updated(current, desired)))
                    outcome = NrtOutcome.UPDATED
            except ApiError as exc:
                # 409: created or changed meanwhile; 404 on PUT: deleted since the GET (on POST
                # it means the CRD is not installed: no retry)
                if status_code(exc) == 409 or (status_code(exc) == 404 and current is not None):
                    log.info("nrt_write_retry", node=self._node, code=status_code(exc), attempt=attempt + 1)
                    continue
                raise SinkError("write noderesourcetopology %s: %s" % (self._node, exc)) from exc
            self._written = wanted
            return outcome
        raise SinkError("write noderesourcetopology %s: still conflicting after %d attempts"
                        % (self._node, CONFLICT_RETRIES))
