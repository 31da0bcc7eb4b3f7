"""Kubernetes quantity strings as the Go API machinery writes them, and Go duration strings.

koordlet builds CPU with ``resource.NewMilliQuantity(int64(cores*1000), DecimalSI)`` and
memory with ``resource.NewQuantity(int64(bytes), BinarySI)``; their canonical strings are
what a NodeMetric holds: "1250m", "2" (whole cores), "7852Mi", "1536" (bytes that are not a
whole number of KiB). Values are truncated to integers like ``int64(...)`` in Go.
"""

from __future__ import annotations

import math

_BINARY_SUFFIXES = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")


def milli_value(cores: float) -> int:
    """Go's int64(cores*1000): truncation toward zero. Not finite is a caller bug."""
    if not math.isfinite(cores):
        raise ValueError("cpu value %r is not finite" % (cores,))
    return int(cores * 1000)


def cpu_quantity_from_milli(milli: int) -> str:
    """DecimalSI milli-quantity: whole cores print without a suffix ("2"), the rest in "m"."""
    if milli % 1000 == 0:
        return str(milli // 1000)
    return "%dm" % milli


def cpu_quantity(cores: float) -> str:
    return cpu_quantity_from_milli(milli_value(cores))


def memory_quantity_from_bytes(value: int) -> str:
    """BinarySI: the largest power-of-1024 suffix that divides the value exactly; values
    strictly between -1024 and 1024 print as plain numbers (Go switches them to DecimalSI)."""
    if value % 1024 or -1024 < value < 1024:  # most usage figures: no suffix to look for
        return str(value)
    index = 0
    while index < len(_BINARY_SUFFIXES) - 1 and value % 1024 == 0 and value != 0:
        value //= 1024
        index += 1
    return "%d%s" % (value, _BINARY_SUFFIXES[index])


def memory_quantity(value: float) -> str:
    if not math.isfinite(value):
        raise ValueError("memory value %r is not finite" % (value,))
    return memory_quantity_from_bytes(int(value))


def go_duration(seconds: float) -> str:
    """time.Duration.String() for whole seconds and up: 300 -> "5m0s", 5400 -> "1h30m0s"."""
    total = int(round(seconds))
    if total == 0:
        return "0s"
    sign = "-" if total < 0 else ""
    total = abs(total)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return "%s%dh%dm%ds" % (sign, hours, minutes, secs)
    if minutes:
        return "%s%dm%ds" % (sign, minutes, secs)
    return "%s%ds" % (sign, secs)
