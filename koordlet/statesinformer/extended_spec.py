"""The pod annotation node.koordinator.sh/extended-resource-spec: per-container
requests/limits of extended resources (batch-cpu, batch-memory ...) that
Koordinator's webhook writes for agents which cannot see the pod spec.

    {"containers": {"main": {"requests": {<keys.BATCH_CPU>: "500"},
                             "limits":   {<keys.BATCH_MEMORY>: "1Gi"}}}}

Pure. Quantities are converted with koordlet.apis.quantity.canonical (batch-cpu is
already counted in milli-cores).
"""

from __future__ import annotations

import json
from functools import lru_cache
from types import MappingProxyType
from typing import Any, Mapping

from koordlet.apis import keys
from koordlet.statesinformer.model import Resources
from koordlet.statesinformer.problems import InputProblem
from koordlet.statesinformer.resource_list import ResourceListError, parse_resource_list

ANNOTATION_EXTENDED_RESOURCE_SPEC = keys.EXTENDED_RESOURCE_SPEC

_NONE: Mapping[str, Resources] = MappingProxyType({})


class _Invalid(ResourceListError):
    pass


def _containers(decoded: Any) -> Mapping[str, Resources]:
    if not isinstance(decoded, dict):
        raise _Invalid("not a JSON object")
    containers = decoded.get("containers")
    if containers is None:
        return _NONE
    if not isinstance(containers, dict):
        raise _Invalid("containers is not an object")
    out: dict[str, Resources] = {}
    for name, spec in containers.items():
        if not isinstance(spec, dict):
            raise _Invalid("containers.%s is not an object" % name)
        out[name] = Resources(
            requests=parse_resource_list(spec.get("requests"), "containers.%s.requests" % name),
            limits=parse_resource_list(spec.get("limits"), "containers.%s.limits" % name),
        )
    return MappingProxyType(out)


# Pods of one workload carry the same text, and the informer keeps each pod's parse (~1.7 KB
# a pod of two containers): equal texts get one result, which is immutable (an invalid text
# raises and is not kept).
@lru_cache(maxsize=4096)
def _parsed(text: str) -> Mapping[str, Resources]:
    return _containers(json.loads(text))


def parse_extended_resource_spec(
    annotations: Mapping[str, str],
) -> tuple[Mapping[str, Resources], tuple[InputProblem, ...]]:
    """Container name -> Resources from the annotation; empty (with a problem) when invalid."""
    text = annotations.get(ANNOTATION_EXTENDED_RESOURCE_SPEC)
    if text is None:
        return _NONE, ()
    try:
        return _parsed(text), ()
    except (ValueError, RecursionError) as exc:
        return _NONE, (InputProblem(ANNOTATION_EXTENDED_RESOURCE_SPEC, text, str(exc)),)
