"""The daemon's NodeSLO source, chosen from the config, and its read-only HTTP route."""

from __future__ import annotations

from typing import TYPE_CHECKING

import structlog

from koordlet.config import defaults
from koordlet.server.http_endpoint import json_reply
from koordlet.slo.node_slo import node_slo_document
from koordlet.slo.source import NodeSLOFile, StaticNodeSLO
from koordlet.slo.cluster_watch import NodeSLOWatch

if TYPE_CHECKING:
    from koordlet.daemon.wiring import Hubs
    from koordlet.daemon.lifecycle import Module

log = structlog.get_logger(__name__)


def build_node_slo(hubs: Hubs) -> list[Module]:
    """The NodeSLO source: the --node-slo-config file, else in Kubernetes mode the node's
    NodeSLO object, else koordlet's defaults.
    GET /api/v1/nodeslo shows the NodeSLO in force and why the last document was refused."""
    path = hubs.config.node_slo_config
    source: StaticNodeSLO
    if path is not None:
        source = NodeSLOFile(path, poll_interval=defaults.NODE_SLO_POLL_SECONDS)
    elif not hubs.config.standalone:
        source = NodeSLOWatch(hubs.config)
    else:
        source = StaticNodeSLO()
        log.info("node_slo_defaults", reason="standalone without --node-slo-config")
    hubs.node_slo = source
    if hubs.http is not None:
        hubs.http.add_route("/api/v1/nodeslo", lambda query: json_reply({
            "source": str(path) if path is not None else "defaults",
            "lastError": getattr(source, "last_error", None),
            "spec": node_slo_document(source.current())}))
    return [source] if isinstance(source, (NodeSLOFile, NodeSLOWatch)) else []
