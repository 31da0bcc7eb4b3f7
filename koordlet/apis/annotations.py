"""Typed parsers of the well-known annotations (keys in koordlet.apis.keys), one each, with
one strictness: a value that is present but not valid is an `AnnotationError` with the
reason; callers decide what that means (the hooks and QoS strategies treat it as absent)."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Mapping

from koordlet.apis.keys import RESOURCE_STATUS
from system.cpuset import parse_cpuset
from system.errors import InvalidValue


class AnnotationError(ValueError):
    """A well-known annotation is not valid; the message says why."""


def json_object(text: str, key: str) -> dict[str, Any]:
    """An annotation's JSON object, or AnnotationError."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise AnnotationError("%s is not JSON: %s" % (key, exc)) from exc
    if not isinstance(data, dict):
        raise AnnotationError("%s must be a JSON object" % key)
    return data


def resource_status_cpuset(annotations: Mapping[str, str]) -> frozenset[int] | None:
    """The CPUs koord-scheduler bound the pod to (`cpuset` of the resource-status
    annotation); None when absent or empty."""
    text = annotations.get(RESOURCE_STATUS)
    return None if text is None else _parse_resource_status(text)


# Every CreateContainer and QoS round reads it again; the parsed value is immutable, so a
# bounded memo keyed by the text is safe (an invalid text raises and is not kept).
@lru_cache(maxsize=4096)
def _parse_resource_status(text: str) -> frozenset[int] | None:
    data = json_object(text, RESOURCE_STATUS)
    cpuset = data.get("cpuset", "")
    if not isinstance(cpuset, str):
        raise AnnotationError("%s: cpuset must be a cpu list string" % RESOURCE_STATUS)
    try:
        cpus = parse_cpuset(cpuset)
    except InvalidValue as exc:
        raise AnnotationError("%s: %s" % (RESOURCE_STATUS, exc)) from exc
    return cpus or None
