"""The pod annotations the hooks read, parsed strictly: a bad value is an
`AnnotationError` with the reason, and the hooks treat it as absent.

- `node.koordinator.sh/extended-resource-spec`: what koordinator's webhook writes
  for agents that cannot see the pod spec,
  `{"containers": {NAME: {"requests": {...}, "limits": {...}}}}`.
- `scheduling.koordinator.sh/resource-status`: koord-scheduler's CPU binding,
  `{"cpuset": "0-3", "cpuSharedPools": [...]}`.
"""

from __future__ import annotations

import json
from functools import lru_cache
from types import MappingProxyType
from typing import Any, Mapping

from koordlet.quantity import QuantityError, base_units, milli_cpu, parse_quantity
from koordlet.statesinformer.model import Resources
from system.cpuset import parse_cpuset
from system.errors import InvalidValue

EXTENDED_RESOURCE_SPEC = "node.koordinator.sh/extended-resource-spec"
RESOURCE_STATUS = "scheduling.koordinator.sh/resource-status"

# Extended resources published as integer milli-cores ("500" = half a core).
_MILLI_NAMED = frozenset({
    "kubernetes.io/batch-cpu", "kubernetes.io/mid-cpu", "resource.katalyst.kubewharf.io/reclaimed_millicpu",
})


class AnnotationError(ValueError):
    """An annotation the hooks read is not valid; the message says why."""


def resource_value(name: str, raw: Any) -> int:
    """A quantity in the canonical unit of resource `name`.

    Milli-core extended resources are integers of milli-cores; a fractional
    quantity ("500m") is read as cores and converted, as koordinator does
    rather than truncating it."""
    try:
        if name == "cpu":
            return milli_cpu(raw)
        if name in _MILLI_NAMED:
            exact = parse_quantity(raw)
            whole = base_units(raw)
            return whole if whole == exact else milli_cpu(raw)
        return base_units(raw)
    except (QuantityError, TypeError) as exc:
        raise AnnotationError("%s: %r is not a quantity" % (name, raw)) from exc


def _resource_list(value: Any, where: str) -> Mapping[str, int]:
    if value is None:
        return MappingProxyType({})
    if not isinstance(value, dict):
        raise AnnotationError("%s: %s must be an object of resource quantities" % (EXTENDED_RESOURCE_SPEC, where))
    try:
        return MappingProxyType({str(name): resource_value(str(name), raw) for name, raw in value.items()})
    except AnnotationError as exc:
        raise AnnotationError("%s: %s: %s" % (EXTENDED_RESOURCE_SPEC, where, exc)) from None


def _json_object(text: str, key: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise AnnotationError("%s is not JSON: %s" % (key, exc)) from exc
    if not isinstance(data, dict):
        raise AnnotationError("%s must be a JSON object" % key)
    return data


def extended_resource_spec(annotations: Mapping[str, str]) -> Mapping[str, Resources] | None:
    """Per-container requests/limits from the annotation; None when absent."""
    text = annotations.get(EXTENDED_RESOURCE_SPEC)
    return None if text is None else _parse_extended_resource_spec(text)


# Every CreateContainer and plan reads these annotations again; the parsed values are
# immutable, so a bounded memo keyed by the text is safe (invalid texts are not kept).
@lru_cache(maxsize=4096)
def _parse_extended_resource_spec(text: str) -> Mapping[str, Resources]:
    data = _json_object(text, EXTENDED_RESOURCE_SPEC)
    containers = data.get("containers") or {}
    if not isinstance(containers, dict):
        raise AnnotationError("%s: containers must be an object keyed by container name" % EXTENDED_RESOURCE_SPEC)
    result: dict[str, Resources] = {}
    for name, entry in containers.items():
        if not isinstance(entry, dict):
            raise AnnotationError("%s: container %r must be an object" % (EXTENDED_RESOURCE_SPEC, name))
        result[str(name)] = Resources(
            requests=_resource_list(entry.get("requests"), "containers.%s.requests" % name),
            limits=_resource_list(entry.get("limits"), "containers.%s.limits" % name),
        )
    return MappingProxyType(result)


def resource_status_cpuset(annotations: Mapping[str, str]) -> frozenset[int] | None:
    """The CPUs koord-scheduler bound the pod to; None when absent or empty."""
    text = annotations.get(RESOURCE_STATUS)
    return None if text is None else _parse_resource_status(text)


@lru_cache(maxsize=4096)
def _parse_resource_status(text: str) -> frozenset[int] | None:
    data = _json_object(text, RESOURCE_STATUS)
    cpuset = data.get("cpuset", "")
    if not isinstance(cpuset, str):
        raise AnnotationError("%s: cpuset must be a cpu list string" % RESOURCE_STATUS)
    try:
        cpus = parse_cpuset(cpuset)
    except InvalidValue as exc:
        raise AnnotationError("%s: %s" % (RESOURCE_STATUS, exc)) from exc
    return cpus or None


def annotation_problems(annotations: Mapping[str, str]) -> tuple[str, ...]:
    """Why the annotations the hooks read are unusable (empty when all are fine)."""
    problems = []
    for parse in (extended_resource_spec, resource_status_cpuset):
        try:
            parse(annotations)
        except AnnotationError as exc:
            problems.append(str(exc))
    return tuple(problems)
