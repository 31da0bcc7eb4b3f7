"""Value parsers for options: text in, a typed value out, ValueError with a message fit for
the user otherwise. One parser per kind of value."""

from __future__ import annotations

import grp
import math
import re
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Mapping

from system.cpuset import parse_cpuset
from system.errors import InvalidValue

_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off"})


def parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ValueError(f"{text!r} is not a boolean (use true or false)")


def parse_duration(text: str) -> float:
    """A duration in seconds from "10s", "500ms", "1m30s", "2h" or a bare number of seconds."""
    stripped = text.strip()
    try:
        seconds = float(stripped)
    except ValueError:
        seconds = _sum_of_parts(text, stripped)
    if not 0 <= seconds < math.inf:
        raise ValueError(f"duration {text!r} must be finite and not negative")
    return seconds


def _sum_of_parts(text: str, rest: str) -> float:
    total = 0.0
    if not rest:
        raise ValueError("an empty duration (use e.g. 10s, 500ms, 1m30s)")
    while rest:
        match = _DURATION_PART.match(rest)
        if match is None:
            raise ValueError(f"{text!r} is not a duration (use e.g. 10s, 500ms, 1m30s)")
        total += float(match.group(1)) * _DURATION_UNITS[match.group(2)]
        rest = rest[match.end():]
    return total


def parse_positive_duration(text: str) -> float:
    """parse_duration, and more than zero (an interval to sleep between polls)."""
    seconds = parse_duration(text)
    if seconds <= 0:
        raise ValueError(f"duration {text!r} must be more than zero")
    return seconds


def parse_duration_list(text: str) -> tuple[float, ...]:
    """Comma-separated durations ("5m,10m,30m"), each positive."""
    values = tuple(parse_duration(item) for item in text.split(",") if item.strip())
    if not values or any(v <= 0 for v in values):
        raise ValueError(f"{text!r} must list positive durations (e.g. 5m,10m,30m)")
    return values


def _positive_float(text: str, what: str) -> float:
    try:
        value = float(text.strip())
    except ValueError:
        raise ValueError(f"{text!r} is not {what}") from None
    if not 0 < value < math.inf:
        raise ValueError(f"{text!r} must be a positive {what.removeprefix('a ')}")
    return value


def parse_positive_seconds(text: str) -> float:
    """A number of seconds > 0 (koordlet's *-seconds flags are plain numbers)."""
    return _positive_float(text, "a number of seconds")


def parse_positive_number(text: str) -> float:
    """A finite number > 0 (a rate such as --kube-api-qps)."""
    return _positive_float(text, "a number")


def parse_positive_int(text: str) -> int:
    return _checked(_convert(text, int, "a whole number"), lambda v: v > 0, "positive")


def parse_percent(text: str) -> int:
    return _checked(_convert(text, int, "a whole number"), lambda v: 0 <= v <= 100, "within 0..100")


def parse_load(text: str) -> float:
    """A load fraction in (0, 1]."""
    return _checked(_convert(text, float, "a number"), lambda v: 0 < v <= 1, "above 0 and at most 1")


def at_least(minimum: float, parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """`parse`, refusing values below a documented minimum."""
    def parse_at_least(text: str) -> Any:
        return _checked(parse(text), lambda v: v >= minimum, f"at least {minimum:g}")

    return parse_at_least


def _convert(text: str, kind: Callable[[str], Any], what: str) -> Any:
    try:
        return kind(text.strip())
    except ValueError:
        raise ValueError(f"{text!r} is not {what}") from None


def _checked(value: Any, ok: Callable[[Any], bool], rule: str) -> Any:
    if not ok(value):
        raise ValueError(f"{value!r} must be {rule}")
    return value


def parse_list(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def parse_paths(text: str) -> tuple[Path, ...]:
    return tuple(Path(part) for part in parse_list(text))


def parse_optional_path(text: str) -> Path | None:
    """A path; the empty text means none."""
    return Path(text) if text.strip() else None


def parse_cpu_list(text: str) -> frozenset[int]:
    try:
        return parse_cpuset(text)
    except InvalidValue as exc:
        raise ValueError(str(exc)) from None


def parse_group(text: str) -> int:
    """A group id from a number or a group name known to this host."""
    stripped = text.strip()
    if stripped.isdigit():
        return int(stripped)
    try:
        return grp.getgrnam(stripped).gr_gid
    except KeyError:
        raise ValueError(f"no group named {stripped!r}") from None


def parse_optional_group(text: str) -> int | None:
    """parse_group; the empty text means none."""
    return parse_group(text) if text.strip() else None


def parse_unix_endpoint(text: str) -> Path:
    """"unix:/path", "unix:///path" or "/path" -> Path; other schemes are an error."""
    body = text.strip()
    for prefix in ("unix://", "unix:"):
        if body.startswith(prefix):
            body = body[len(prefix):]
            break
    if not body.startswith("/"):
        raise ValueError(f"{text!r} is not a unix socket endpoint (use unix:/absolute/path)")
    return Path(body)


def parse_plugin_index(text: str) -> str:
    """An NRI plugin index: exactly two digits ("00"-"99")."""
    if len(text) != 2 or not text.isdigit() or not text.isascii():
        raise ValueError(f"{text!r} is not a two-digit plugin index (00-99)")
    return text


def parse_pairs(text: str) -> Mapping[str, str]:
    """"A=B,C=D" -> {A: B, C: D}; an item without "=" or with an empty side is an error."""
    pairs: dict[str, str] = {}
    for item in parse_list(text):
        name, sep, value = item.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise ValueError(f"{item!r} is not a NAME=NAME pair")
        pairs[name.strip()] = value.strip()
    return MappingProxyType(pairs)


_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
