"""Kubernetes resource quantities ("100m", "1.5", "2Gi", "1e3") as exact integers.

Every agent reads requests and limits from pod specs and annotations; this is
the one parser. Canonical units: CPU in milli-cores, everything else in base
units (bytes for memory), rounded up as Kubernetes rounds them, within int64 as
Go's Value() and MilliValue() give them: a quantity outside that range is an
error, not a number nobody downstream can hold.

Integer arithmetic on the digits, not decimal.Decimal: exact whatever the
number of digits (a Decimal product is rounded to its context's 28 digits), a
hostile exponent ("1e1000000") is refused before it costs anything, and the
daemon does not load the decimal module (~0.4 MiB) for this alone.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache

INT64_MAX = (1 << 63) - 1
MAX_DIGITS = 64  # of a quantity's number: int64 needs 19; more is a typo or an attack
_EXPONENT_BOUND = 100  # |powers of ten| beyond which the value is out of range or rounds to 0 or 1
_HUGE_EXPONENT = 10**7  # an exponent written with more than 6 digits, as it is counted

# suffix -> (power of ten, power of two)
_SUFFIXES: dict[str, tuple[int, int]] = {
    "": (0, 0),
    "n": (-9, 0), "u": (-6, 0), "m": (-3, 0),
    "k": (3, 0), "M": (6, 0), "G": (9, 0), "T": (12, 0), "P": (15, 0), "E": (18, 0),
    "Ki": (0, 10), "Mi": (0, 20), "Gi": (0, 30), "Ti": (0, 40), "Pi": (0, 50), "Ei": (0, 60),
}
_QUANTITY = re.compile(r"^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]))?$")


class QuantityError(ValueError):
    """The text is not a Kubernetes quantity, or one outside int64 in its canonical unit."""


def _scaled(text: str | int | float) -> tuple[int, int, int]:
    """(signed digits, power of ten, power of two) whose product is the quantity's exact value."""
    if isinstance(text, bool):
        raise QuantityError(f"{text!r} is not a quantity")
    if isinstance(text, float) and not math.isfinite(text):
        raise QuantityError(f"{text!r} is not a finite quantity")
    if isinstance(text, int) and abs(text).bit_length() > 4 * MAX_DIGITS:  # (str() of a huge int is refused too)
        raise QuantityError("%d-bit integer is out of range" % abs(text).bit_length())
    written = str(text) if isinstance(text, (int, float)) else text.strip()
    match = _QUANTITY.match(written)
    if match is None or not (match.group(2) or match.group(3)):
        raise QuantityError(f"{text!r} is not a quantity")
    sign, whole, fraction, exponent, suffix = match.groups()
    fraction = (fraction or "").rstrip("0")  # "1.000…" is 1, whatever the number of zeros
    digits = (whole + fraction).lstrip("0")
    if len(digits) > MAX_DIGITS:
        raise QuantityError(f"{text!r} has more than {MAX_DIGITS} digits")
    tens, twos = _SUFFIXES[suffix or ""]
    if exponent is not None and len(exponent.lstrip("+-").lstrip("0")) > 6:  # not converted: past any bound
        tens += -_HUGE_EXPONENT if exponent.startswith("-") else _HUGE_EXPONENT
    else:
        tens += int(exponent or 0) - len(fraction)
    value = int(digits or "0")
    return (-value if sign == "-" else value), tens, twos


@lru_cache(maxsize=512, typed=True)  # pods ask for the same few quantities again and again
def _ceil(text: str | int | float, tens_more: int) -> int:
    """The quantity times 10**tens_more, rounded up (math.ceil), within int64."""
    value, tens, twos = _scaled(text)
    tens += tens_more
    if value == 0:
        return 0
    if tens > _EXPONENT_BOUND:
        raise QuantityError(f"{text!r} is out of range")
    if tens < -_EXPONENT_BOUND - MAX_DIGITS:  # below 10**-100 of a unit: rounds up to 1, or 0 below zero
        return 1 if value > 0 else 0
    value <<= twos
    result = value * 10 ** tens if tens >= 0 else -(-value // 10 ** -tens)
    if not -INT64_MAX - 1 <= result <= INT64_MAX:
        raise QuantityError(f"{text!r} is out of range")
    return result


def milli_cpu(text: str | int | float) -> int:
    """CPU quantity in milli-cores, rounded up as Kubernetes does ("0.1" -> 100, "1n" -> 1)."""
    return _ceil(text, 3)


def base_units(text: str | int | float) -> int:
    """Any other quantity in base units, rounded up ("1Gi" -> 1073741824, "1.5k" -> 1500)."""
    return _ceil(text, 0)


def canonical(resource_name: str, text: str | int | float) -> int:
    """A quantity in the canonical unit of its resource: milli-cores for "cpu", base
    units for the rest. Extended resources such as the batch CPU of koordlet.apis.keys and
    resource.katalyst.kubewharf.io/reclaimed_millicpu are published already counted
    in milli-cores, so their base unit is the milli-core."""
    if resource_name == "cpu":
        return milli_cpu(text)
    return base_units(text)
