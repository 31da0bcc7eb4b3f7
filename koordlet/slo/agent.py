"""The daemon's NodeSLO hub, chosen from the config, and its read-only HTTP route.

The hub is the NodeSLO in force (`ValidatedNodeSLO`: current(), subscribe(), the last
refusal). Which document feeds it is the config's choice: the --node-slo-config file,
else in Kubernetes mode the node's NodeSLO object, else koordlet's defaults. The file
and cluster sources are themselves the hub and run as the `nodeslo` agent's module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import structlog

from koordlet.agent import NOTHING, AgentSpec, Built
from koordlet.config import Config, defaults
from koordlet.server.http_endpoint import Reply, json_reply
from koordlet.slo.options import NodeSLOOptions
from koordlet.slo.source import NodeSLOFile, ValidatedNodeSLO
from koordlet.slo.spec import node_slo_document
from koordlet.util.kube_client import KubeApi

if TYPE_CHECKING:
    from koordlet.hubs import Hubs

log = structlog.get_logger(__name__)


def node_slo_for(config: Config, kube: KubeApi) -> ValidatedNodeSLO:
    """The NodeSLO hub: the file source, the cluster object's watch, or the defaults."""
    path = config[NodeSLOOptions].node_slo_config
    if path is not None:
        return NodeSLOFile(path, poll_interval=defaults.NODE_SLO_POLL_SECONDS)
    if not config.common.standalone:
        from koordlet.slo.cluster_watch import NodeSLOWatch  # cluster mode only

        return NodeSLOWatch(config, kube)
    log.info("node_slo_defaults", reason="standalone without --node-slo-config")
    return ValidatedNodeSLO()


def build(hubs: Hubs) -> Built:
    """GET /api/v1/nodeslo shows the NodeSLO in force and why the last document was refused;
    the file or cluster source runs as a module."""
    source = hubs.node_slo

    def route(query: str) -> Reply:
        return json_reply({"source": source.source(),
                           "lastError": source.last_error,
                           "spec": node_slo_document(source.current())})

    hubs.http.add_route("/api/v1/nodeslo", route)
    if isinstance(source, NodeSLOFile):
        return Built((source,))
    if not hubs.config.common.standalone:
        from koordlet.slo.cluster_watch import NodeSLOWatch  # loaded already by node_slo_for

        if isinstance(source, NodeSLOWatch):
            return Built((source,))
    return NOTHING


SPEC = AgentSpec("nodeslo", enabled=lambda config: True, build=build,
                 options=NodeSLOOptions)
