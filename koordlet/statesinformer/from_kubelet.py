"""kubelet's /pods (a v1 PodList as JSON) -> what kubelet adds to the runtime's view. Pure.

The runtime (NRI, CRI) says what runs; kubelet adds what only the API object has:
spec.priority, spec.priorityClassName, status.qosClass, the current labels and
annotations, each container's requests/limits and its role (init, main, sidecar).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

from koordlet.apis.keys import MAIN_CONTAINER_NAME
from koordlet.apis.qos import kube_tier_of
from koordlet.statesinformer.model import ContainerKind, ContainerRole, Resources
from koordlet.statesinformer.resource_list import ResourceListError, parse_resource_list
from system.cgroup_layout import QoSTier


def _empty_str() -> Mapping[str, str]:
    return MappingProxyType({})


def _empty_specs() -> Mapping[str, Resources]:
    return MappingProxyType({})


def _empty_roles() -> Mapping[str, ContainerRole]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class KubeletPod:
    uid: str
    name: str
    namespace: str
    labels: Mapping[str, str] = field(default_factory=_empty_str)
    annotations: Mapping[str, str] = field(default_factory=_empty_str)
    priority: int | None = None
    priority_class_name: str = ""
    k8s_qos: QoSTier | None = None
    container_specs: Mapping[str, Resources] = field(default_factory=_empty_specs)
    container_roles: Mapping[str, ContainerRole] = field(default_factory=_empty_roles)


class PodListError(ValueError):
    """The document is not a PodList kubelet would serve."""


def _str_map(value: Any, where: str) -> Mapping[str, str]:
    if value is None:
        return MappingProxyType({})
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise PodListError("%s is not a string map" % where)
    return MappingProxyType(dict(value))


def _container_specs(spec: dict[str, Any], where: str) -> Mapping[str, Resources]:
    out: dict[str, Resources] = {}
    for key in ("initContainers", "containers"):
        containers = spec.get(key) or []
        if not isinstance(containers, list):
            raise PodListError("%s.%s is not a list" % (where, key))
        for index, container in enumerate(containers):
            here = "%s.%s[%d]" % (where, key, index)
            if not isinstance(container, dict) or not isinstance(container.get("name"), str):
                raise PodListError("%s has no name" % here)
            resources = container.get("resources") or {}
            if not isinstance(resources, dict):
                raise PodListError("%s.resources is not an object" % here)
            try:
                out[container["name"]] = Resources(
                    requests=parse_resource_list(resources.get("requests"), here + ".resources.requests"),
                    limits=parse_resource_list(resources.get("limits"), here + ".resources.limits"),
                )
            except ResourceListError as exc:
                raise PodListError(str(exc)) from None
    return MappingProxyType(out)


def _container_roles(spec: dict[str, Any], annotations: Mapping[str, str]) -> Mapping[str, ContainerRole]:
    """Name -> role, after _container_specs has checked the lists' shape."""
    roles: dict[str, ContainerRole] = {}
    for index, container in enumerate(spec.get("initContainers") or []):
        restartable = container.get("restartPolicy") == "Always"  # a native sidecar keeps running
        roles[container["name"]] = ContainerRole(ContainerKind.SIDECAR if restartable else ContainerKind.INIT,
                                                 index, in_init_list=True)
    apps = spec.get("containers") or []
    main = annotations.get(MAIN_CONTAINER_NAME) or (apps[0]["name"] if apps else "")
    for index, container in enumerate(apps):
        kind = ContainerKind.MAIN if container["name"] == main else ContainerKind.SIDECAR
        roles[container["name"]] = ContainerRole(kind, index)
    return MappingProxyType(roles)


def _k8s_qos(value: Any) -> QoSTier | None:
    return kube_tier_of(value) if isinstance(value, str) else None


def kubelet_pod(item: Any, where: str = "pod") -> KubeletPod:
    if not isinstance(item, dict):
        raise PodListError("%s is not an object" % where)
    meta, spec, status = (item.get(k) or {} for k in ("metadata", "spec", "status"))
    if not all(isinstance(part, dict) for part in (meta, spec, status)):
        raise PodListError("%s: metadata/spec/status must be objects" % where)
    uid = meta.get("uid")
    if not isinstance(uid, str) or not uid:
        raise PodListError("%s has no metadata.uid" % where)
    priority = spec.get("priority")
    if priority is not None and (isinstance(priority, bool) or not isinstance(priority, int)):
        raise PodListError("%s spec.priority is not an integer" % where)
    annotations = _str_map(meta.get("annotations"), where + ".metadata.annotations")
    specs = _container_specs(spec, where + ".spec")
    return KubeletPod(
        uid=uid,
        name=str(meta.get("name") or ""),
        namespace=str(meta.get("namespace") or ""),
        labels=_str_map(meta.get("labels"), where + ".metadata.labels"),
        annotations=annotations,
        priority=priority,
        priority_class_name=str(spec.get("priorityClassName") or ""),
        k8s_qos=_k8s_qos(status.get("qosClass")),
        container_specs=specs,
        container_roles=_container_roles(spec, annotations),
    )


def parse_pod_list(body: bytes | str) -> tuple[KubeletPod, ...]:
    """A PodList document -> its pods. PodListError when the document is malformed;
    one malformed pod fails the whole list (a partial list would read as deletions)."""
    try:
        decoded = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise PodListError("not JSON: %s" % exc) from None
    if not isinstance(decoded, dict) or not isinstance(decoded.get("items", []), list):
        raise PodListError("not a PodList")
    return tuple(kubelet_pod(item, "items[%d]" % i) for i, item in enumerate(decoded.get("items") or []))
