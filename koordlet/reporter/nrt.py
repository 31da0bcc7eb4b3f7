"""The node's NodeResourceTopology (topology.node.k8s.io), built from NUMA zones (pure).

The zones are the ORM's (`ports.zones`, the same ones `/api/v1/topology` shows) when it
runs, otherwise the host's NUMA nodes with kubelet's exclusive CPUs taken out
(nrt_source.py). We write v1alpha2, the CRD's storage version: only it has the top-level
`attributes` (topologyManagerPolicy/Scope, kubelet's spelling); the deprecated
`topologyPolicies` is filled too, with the v1alpha1 enum koordlet derives from policy and
scope, so a v1alpha1 reader (koord-scheduler) sees the same policy.
"""

from __future__ import annotations

import copy
import json
from typing import Any, Iterable, Mapping

from system.topology import NumaNode

GROUP = "topology.node.k8s.io"
VERSION = "v1alpha2"
KIND = "NodeResourceTopology"
PLURAL = "noderesourcetopologies"

POLICY_NONE = "none"
SCOPE_CONTAINER = "container"
# the fields we own; everything else on the cluster's object (metadata, others' labels) stays
OWNED = ("topologyPolicies", "attributes", "zones")
_ZONE_FIELDS = ("name", "type", "parent", "costs", "attributes", "resources")
_RESOURCE_FIELDS = ("name", "capacity", "allocatable", "available")


def topology_policy(policy: str, scope: str) -> str:
    """koordlet's getTopologyPolicy: the v1alpha1 TopologyManagerPolicy for kubelet's
    policy and scope; policies the enum lacks (numeric, none) are "None"."""
    if policy == "single-numa-node":
        return "SingleNUMANodePodLevel" if scope == "pod" else "SingleNUMANodeContainerLevel"
    return {"restricted": "Restricted", "best-effort": "BestEffort"}.get(policy, "None")


def zone_costs(nodes: Iterable[NumaNode]) -> dict[str, list[dict[str, Any]]]:
    """Zone name -> its costs: the NUMA distances to every zone, itself included."""
    return {"node-%d" % node.node: [{"name": "node-%d" % other, "value": value} for other, value in node.distances]
            for node in nodes if node.distances}


def nrt_object(node_name: str, zones: Iterable[Mapping[str, Any]], policy: str, scope: str,
               costs: Mapping[str, list[dict[str, Any]]] | None = None) -> dict[str, Any]:
    """The whole object; `zones` may carry more keys than the CRD has (the ORM's cpus lists),
    they are left out; `costs` (zone_costs) are added to the zones they name."""
    policy = policy or POLICY_NONE
    return {
        "apiVersion": "%s/%s" % (GROUP, VERSION), "kind": KIND,
        "metadata": {"name": node_name},
        "topologyPolicies": [topology_policy(policy, scope)],
        "attributes": [{"name": "topologyManagerPolicy", "value": policy},
                       {"name": "topologyManagerScope", "value": scope}],
        "zones": [_with_costs(_crd_zone(zone), costs or {}) for zone in zones],
    }


def _with_costs(zone: dict[str, Any], costs: Mapping[str, list[dict[str, Any]]]) -> dict[str, Any]:
    if zone["name"] in costs:
        zone["costs"] = copy.deepcopy(costs[zone["name"]])
    return zone


def _crd_zone(zone: Mapping[str, Any]) -> dict[str, Any]:
    out = {key: copy.deepcopy(zone[key]) for key in _ZONE_FIELDS if key in zone and key != "resources"}
    out["resources"] = [{key: str(resource[key]) for key in _RESOURCE_FIELDS}
                        for resource in zone.get("resources", ())]
    return out


def canonical(obj: Mapping[str, Any]) -> str:
    """What we own of an object, as text: equal texts mean nothing to write."""
    return json.dumps({key: obj.get(key) for key in OWNED}, sort_keys=True, separators=(",", ":"))


def updated(current: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any]:
    """The cluster's object (its metadata and resourceVersion kept) with our fields from `desired`."""
    body = copy.deepcopy(dict(current))
    for key in OWNED:
        body[key] = copy.deepcopy(desired[key])
    body["apiVersion"], body["kind"] = desired["apiVersion"], desired["kind"]
    return body
