"""The standalone sink: the same documents on the daemon's HTTP API, and optionally in a
file written atomically.

GET /apis/v1/nodemetric       a whole NodeMetric (slo.koordinator.sh/v1alpha1), status as reported
GET /apis/v1/overcommit       a CustomNodeResource (node.katalyst.kubewharf.io/v1alpha1) whose
                              metadata.annotations are the agent's KCNR annotations
GET /apis/v1/batchresources   Koordinator's batch resources (keys.BATCH_CPU, BATCH_MEMORY)
GET /apis/v1/noderesourcetopology
                              the node's NodeResourceTopology (topology.node.k8s.io/v1alpha2)

Until the first figures exist the routes answer 503 with the reason, never a made-up zero.
The NodeMetric is rebuilt for a GET when the last is a second old, in steps that let the loop
run between them (at 1,000 pods a build and its encoding in one go held the loop ~10 ms, ~31
ms at 3,000). Its canonical JSON text is written from the build's snapshot, also in steps,
and kept: the route answers it and the file holds it (kept as the object's dicts, three a
pod, it was ~0.6 MiB at 1,000 pods; the text is ~0.14 MB).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable

from koordlet.reporter.batch import BatchResources
from koordlet.reporter.overcommit import OvercommitResult
from koordlet.server.http_endpoint import Reply, Routes, json_reply
from koordlet.util.durable import write_atomically
from koordlet.util.json_text import canonical_json

NODEMETRIC_ROUTE = "/apis/v1/nodemetric"
OVERCOMMIT_ROUTE = "/apis/v1/overcommit"
BATCH_ROUTE = "/apis/v1/batchresources"
NRT_ROUTE = "/apis/v1/noderesourcetopology"


@dataclass(slots=True)
class LatestReports:
    """What the loops built last; the routes and the file answer from it."""

    node_name: str
    # the last NodeMetric object's canonical JSON (nodemetric.node_metric_text_steps)
    node_metric: bytes | None = None
    overcommit: OvercommitResult | None = None
    batch: BatchResources | None = None
    topology: dict[str, Any] | None = None
    # a fresh NodeMetric's text on demand (None: not enough data); set by the module
    refresh_node_metric: Callable[[], Awaitable[bytes | None]] | None = field(default=None, repr=False)

    def kcnr_document(self) -> dict[str, Any] | None:
        if self.overcommit is None:
            return None
        return {"apiVersion": "node.katalyst.kubewharf.io/v1alpha1", "kind": "CustomNodeResource",
                "metadata": {"name": self.node_name, "annotations": self.overcommit.annotations()}}

    def batch_document(self) -> dict[str, Any] | None:
        if self.batch is None:
            return None
        return {"node": self.node_name, "resources": self.batch.resource_list()}

    def file_text(self) -> bytes:
        """The file's canonical JSON: {"batchResources", "customNodeResource", "nodeMetric"}
        (sorted keys, as the rest), the NodeMetric's kept text in its place."""
        return b"".join((b'{"batchResources":', canonical_json(self.batch_document()).encode(),
                         b',"customNodeResource":', canonical_json(self.kcnr_document()).encode(),
                         b',"nodeMetric":', b"null" if self.node_metric is None else self.node_metric, b"}"))


def add_routes(http: Routes, latest: LatestReports) -> None:
    async def node_metric(_query: str) -> Reply:
        refresh = latest.refresh_node_metric
        text = await refresh() if refresh is not None else latest.node_metric
        if text is None:
            return _or_not_ready(None, _NO_USAGE)
        return Reply(200, (text, b"\n"), "application/json")

    http.add_route(NODEMETRIC_ROUTE, node_metric)
    http.add_route(OVERCOMMIT_ROUTE, lambda _q: _or_not_ready(latest.kcnr_document(),
                                                               "overcommit ratios not computed yet"))
    http.add_route(BATCH_ROUTE, lambda _q: _or_not_ready(latest.batch_document(), _NO_USAGE))
    http.add_route(NRT_ROUTE, lambda _q: _or_not_ready(latest.topology, "node topology not built yet"))


_NO_USAGE = "no node usage collected yet"


def _or_not_ready(document: dict[str, Any] | None, reason: str) -> Reply:
    if document is None:
        return json_reply({"ready": False, "reason": reason}, status=503)
    return json_reply(document)


def write_report_file(path: Path, text: bytes) -> None:
    """The reports' text (LatestReports.file_text) as one file, replaced atomically
    (util.durable). Blocking: call it in a worker thread."""
    write_atomically(path, text + b"\n", mode=0o644)

