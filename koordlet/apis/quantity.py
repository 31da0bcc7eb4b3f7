"""Kubernetes resource quantities ("100m", "1.5", "2Gi", "1e3") as exact numbers.

Every agent reads requests and limits from pod specs and annotations; this is
the one parser. Canonical units: CPU in milli-cores, everything else in base
units (bytes for memory).
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation

_SUFFIXES: dict[str, Decimal] = {
    "": Decimal(1),
    "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"),
    "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"),
    "T": Decimal("1e12"), "P": Decimal("1e15"), "E": Decimal("1e18"),
    "Ki": Decimal(2) ** 10, "Mi": Decimal(2) ** 20, "Gi": Decimal(2) ** 30,
    "Ti": Decimal(2) ** 40, "Pi": Decimal(2) ** 50, "Ei": Decimal(2) ** 60,
}
_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$")


class QuantityError(ValueError):
    """The text is not a Kubernetes quantity."""


def parse_quantity(text: str | int | float) -> Decimal:
    """The exact value of a quantity: "100m" -> 0.1, "1Gi" -> 1073741824."""
    if isinstance(text, bool):
        raise QuantityError(f"{text!r} is not a quantity")
    if isinstance(text, (int, float)):
        if isinstance(text, float) and not math.isfinite(text):
            raise QuantityError(f"{text!r} is not a finite quantity")
        return Decimal(str(text))
    match = _QUANTITY.match(text.strip())
    if match is None:
        raise QuantityError(f"{text!r} is not a quantity")
    number, exponent, suffix = match.groups()
    try:
        value = Decimal(number + (exponent or ""))
    except InvalidOperation as exc:  # pragma: no cover - the regex admits only valid numbers
        raise QuantityError(f"{text!r} is not a quantity") from exc
    return value * _SUFFIXES[suffix or ""]


def milli_cpu(text: str | int | float) -> int:
    """CPU quantity in milli-cores, rounded up as Kubernetes does ("0.1" -> 100, "1n" -> 1)."""
    return math.ceil(parse_quantity(text) * 1000)


def base_units(text: str | int | float) -> int:
    """Any other quantity in base units, rounded up ("1Gi" -> 1073741824, "1.5k" -> 1500)."""
    return math.ceil(parse_quantity(text))


def canonical(resource_name: str, text: str | int | float) -> int:
    """A quantity in the canonical unit of its resource: milli-cores for "cpu", base
    units for the rest. Extended resources such as the batch CPU of koordlet.apis.keys and
    resource.katalyst.kubewharf.io/reclaimed_millicpu are published already counted
    in milli-cores, so their base unit is the milli-core."""
    if resource_name == "cpu":
        return milli_cpu(text)
    return base_units(text)
