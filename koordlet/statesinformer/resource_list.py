"""A Kubernetes ResourceList as JSON ({"cpu": "500m", "memory": "1Gi"}) -> canonical integers. Pure."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Mapping

from koordlet.apis.quantity import QuantityError, canonical


class ResourceListError(ValueError):
    """Not a ResourceList; the message says where."""


def parse_resource_list(value: Any, where: str) -> Mapping[str, int]:
    """Resource name -> quantity in its canonical unit (koordlet.apis.quantity.canonical).
    None reads as empty; `where` names the place in the document for the error."""
    if value is None:
        return MappingProxyType({})
    if not isinstance(value, dict):
        raise ResourceListError("%s is not an object" % where)
    out: dict[str, int] = {}
    for name, quantity in value.items():
        if isinstance(quantity, bool) or not isinstance(quantity, (str, int, float)):
            raise ResourceListError("%s.%s is not a quantity" % (where, name))
        try:
            out[name] = canonical(name, quantity)
        except QuantityError as exc:
            raise ResourceListError("%s.%s: %s" % (where, name, exc)) from None
    return MappingProxyType(out)
