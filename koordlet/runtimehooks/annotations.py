"""The pod annotations the hooks read, parsed strictly (koordlet.apis.annotations): a bad
value is an `AnnotationError` with the reason, and the hooks treat it as absent.

- the extended-resource-spec: what koordinator's webhook writes for agents that cannot see
  the pod spec, `{"containers": {NAME: {"requests": {...}, "limits": {...}}}}` (batch-cpu
  counted in milli-cores: koordinator's `Value()` of the quantity, as v1.1 reads it);
- the resource-status: koord-scheduler's CPU binding, `{"cpuset": "0-3", ...}`.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Mapping

from koordlet.apis.annotations import AnnotationError, resource_status_cpuset
from koordlet.apis.keys import EXTENDED_RESOURCE_SPEC
from koordlet.statesinformer.extended_spec import parse_extended_resource_spec
from koordlet.statesinformer.model import Resources


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
