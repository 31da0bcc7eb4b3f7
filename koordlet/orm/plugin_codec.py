"""Conversions between the ORM's values and resourceplugin.v1alpha1 messages (pure)."""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType
from typing import cast

import structlog

from koordlet.orm.allocation import OCI_CPUSET_MEMS, Allocation, AllocationTable
from koordlet.topology.hint import ProviderHints, TopologyHint, mask_of
from koordlet.topology.request import ContainerRequest, ContainerType
from proto.k8s.resourceplugin.v1alpha1 import api_pb2 as pb
from system.cpuset import parse_cpuset
from system.errors import InvalidValue

log = structlog.get_logger(__name__)

API_VERSION = "v1alpha1"
SUPPORTED_VERSIONS = (API_VERSION,)

CPU = "cpu"


def plugin_quantity(resource: str, value: int) -> float:
    """Our unit to the plugin's: CPU goes as cores (we hold milli-cores), the rest unchanged."""
    return value / 1000.0 if resource == CPU else float(value)


def hint_to_pb(hint: TopologyHint | None) -> pb.TopologyHint | None:
    if hint is None:
        return None
    return pb.TopologyHint(nodes=list(hint.nodes or ()), preferred=hint.preferred)


def resource_request(request: ContainerRequest, resource: str, hint: TopologyHint | None) -> pb.ResourceRequest:
    message = pb.ResourceRequest(
        pod_uid=request.pod_uid, pod_namespace=request.pod_namespace, pod_name=request.pod_name,
        container_name=request.container_name,
        container_type=cast(pb.ContainerType, request.container_type.value),  # an enum value is its int
        container_index=request.container_index, resource_name=resource,
        resource_requests={resource: plugin_quantity(resource, request.requests.get(resource, 0))},
        labels=dict(request.labels), annotations=dict(request.annotations),
        native_qos_class=request.native_qos_class,
    )
    hint_pb = hint_to_pb(hint)
    if hint_pb is not None:
        message.hint.CopyFrom(hint_pb)
    return message


def hints_from_pb(response: pb.ResourceHintsResponse) -> ProviderHints:
    if not response.resource_hints:
        return None
    result: dict[str, list[TopologyHint] | None] = {}
    for name, hint_list in response.resource_hints.items():
        result[name] = [TopologyHint(mask_of(h.nodes) if h.nodes else None, h.preferred)
                        for h in hint_list.hints]
    return result


def allocations_from_pb(request: ContainerRequest, provider: str,
                        allocation: pb.ResourceAllocation,
                        hint: TopologyHint | None) -> tuple[Allocation, ...]:
    """Our rows from a plugin's ResourceAllocation; InvalidValue on a malformed cpu/node list
    (Allocation parses cpuset results when built, so garbage never reaches a cgroup)."""
    rows = []
    for name, info in sorted(allocation.resource_allocation.items()):
        nodes = tuple(sorted(int(n) for n in info.topology_assignments))
        if info.oci_property_name == OCI_CPUSET_MEMS and not nodes:
            nodes = tuple(sorted(parse_cpuset(info.allocation_result)))
        rows.append(Allocation(
            request.pod_uid, request.pod_namespace, request.pod_name, request.container_name, name,
            quantity=info.allocated_quantity, result=info.allocation_result,
            oci_property=info.oci_property_name, provider=provider, numa_nodes=nodes,
            memory_by_node=MappingProxyType({}),
            hint_nodes=None if hint is None else hint.nodes,
            hint_preferred=True if hint is None else hint.preferred,
            is_node_resource=info.is_node_resource, is_scalar_resource=info.is_scalar_resource,
            envs=MappingProxyType(dict(info.envs)), annotations=MappingProxyType(dict(info.annotations)),
        ))
    return tuple(rows)


def rows_from_listing(provider: str, listing: pb.GetResourcesAllocationResponse, table: AllocationTable,
                      admitted: frozenset[str]) -> list[Allocation]:
    """Rows for a plugin's GetResourcesAllocation answer, for pods the ORM admitted; pod names
    come from the rows we hold. Malformed entries are logged and skipped."""
    rows: list[Allocation] = []
    for pod_uid, containers in listing.pod_resources.items():
        if pod_uid not in admitted:
            continue
        known = table.for_pod(pod_uid)
        for container, allocation in containers.container_resources.items():
            request = ContainerRequest(pod_uid, known[0].pod_namespace, known[0].pod_name, container,
                                       ContainerType.MAIN, 0, {})
            previous = {a.resource: a for a in known if a.container_name == container}
            try:
                fresh = allocations_from_pb(request, provider, allocation, None)
            except InvalidValue as exc:
                log.warning("orm_plugin_listing_invalid", plugin=provider, pod=pod_uid, error=str(exc))
                continue
            for row in fresh:
                old = previous.get(row.resource)
                if old is not None:  # keep what admission knew (hint), take the plugin's result
                    row = replace(row, hint_nodes=old.hint_nodes, hint_preferred=old.hint_preferred)
                rows.append(row)
    return rows
