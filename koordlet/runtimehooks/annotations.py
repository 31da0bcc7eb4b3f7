"""The pod annotations the hooks read, parsed strictly: a bad value is an
`AnnotationError` with the reason, and the hooks treat it as absent.

- `node.koordinator.sh/extended-resource-spec`: what koordinator's webhook writes
  for agents that cannot see the pod spec,
  `{"containers": {NAME: {"requests": {...}, "limits": {...}}}}` (batch-cpu counted
  in milli-cores: koordinator's `Value()` of the quantity, as v1.1 reads it).
- `scheduling.koordinator.sh/resource-status`: koord-scheduler's CPU binding,
  `{"cpuset": "0-3", "cpuSharedPools": [...]}`.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Mapping

from koordlet.statesinformer.extended_spec import ANNOTATION_EXTENDED_RESOURCE_SPEC, parse_extended_resource_spec
from koordlet.statesinformer.model import Resources
from system.cpuset import parse_cpuset
from system.errors import InvalidValue

EXTENDED_RESOURCE_SPEC = ANNOTATION_EXTENDED_RESOURCE_SPEC
RESOURCE_STATUS = "scheduling.koordinator.sh/resource-status"


class AnnotationError(ValueError):
    """An annotation the hooks read is not valid; the message says why."""


def extended_resource_spec(annotations: Mapping[str, str]) -> Mapping[str, Resources] | None:
    """Per-container requests/limits from the annotation (the states informer's parser,
    so hooks and informer read it alike); None when absent."""
    text = annotations.get(EXTENDED_RESOURCE_SPEC)
    return None if text is None else _parse_extended_resource_spec(text)


# Every CreateContainer and plan reads these annotations again; the parsed values are
# immutable, so a bounded memo keyed by the text is safe (invalid texts are not kept).
@lru_cache(maxsize=4096)
def _parse_extended_resource_spec(text: str) -> Mapping[str, Resources]:
    specs, problems = parse_extended_resource_spec({EXTENDED_RESOURCE_SPEC: text})
    if problems:
        raise AnnotationError("%s: %s" % (EXTENDED_RESOURCE_SPEC, problems[0].reason))
    return specs


def _json_object(text: str, key: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise AnnotationError("%s is not JSON: %s" % (key, exc)) from exc
    if not isinstance(data, dict):
        raise AnnotationError("%s must be a JSON object" % key)
    return data


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


def annotation_problems(annotations: Mapping[str, str], *, include_informer_owned: bool = True) -> tuple[str, ...]:
    """Why the annotations the hooks read are unusable (empty when all are fine).
    The states informer already reports a bad extended-resource-spec once per pod;
    `include_informer_owned=False` leaves that one out."""
    problems = []
    parsers = (extended_resource_spec, resource_status_cpuset) if include_informer_owned else (resource_status_cpuset,)
    for parse in parsers:
        try:
            parse(annotations)
        except AnnotationError as exc:
            problems.append(str(exc))
    return tuple(problems)
