"""The kernel's cpu/node list syntax ("0-3,8,10-11")."""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

from system.errors import InvalidValue

# Upper bound on an id in a list: beyond anything a real machine has, keeps parsing bounded.
MAX_CPU_ID = 1 << 16


# A node has few distinct lists (the pools, the bound CPUs) read and written again and again
# (CPU suppress re-reads every BE cpuset every 10 s): parse and format each once. Invalid
# input raises and is not kept; a 96-CPU set is ~4 KiB, so the memo stays within ~1 MiB.
_MEMO_SIZE = 256


@lru_cache(maxsize=_MEMO_SIZE)
def parse_cpuset(text: str) -> frozenset[int]:
    """Parse a kernel list ("0-3,8", "" for empty) into a set of ids; InvalidValue on bad syntax."""
    body = text.strip()
    if not body:
        return frozenset()
    ids: set[int] = set()
    for part in body.split(","):
        part = part.strip()
        if not part:
            raise InvalidValue("empty element in cpu list %r" % text)
        lo_text, dash, hi_text = part.partition("-")
        lo = _parse_id(lo_text, text)
        hi = _parse_id(hi_text, text) if dash else lo
        if hi < lo:
            raise InvalidValue("descending range %r in cpu list" % part)
        ids.update(range(lo, hi + 1))
    return frozenset(ids)


def _parse_id(token: str, whole: str) -> int:
    token = token.strip()
    if not token.isdigit() or not token.isascii():
        raise InvalidValue("bad id %r in cpu list %r" % (token, whole))
    value = int(token)
    if value > MAX_CPU_ID:
        raise InvalidValue("id %d out of range in cpu list" % value)
    return value


def format_cpuset(ids: Iterable[int]) -> str:
    """Format ids as the kernel's compact list: sorted, runs folded into ranges, as the kernel prints ("0-3,8")."""
    return _format_frozen(ids) if type(ids) is frozenset else _format(ids)


@lru_cache(maxsize=_MEMO_SIZE)
def _format_frozen(ids: frozenset[int]) -> str:
    return _format(ids)


def _format(ids: Iterable[int]) -> str:
    ordered = sorted(set(ids))
    for cpu in ordered:
        if not isinstance(cpu, int) or isinstance(cpu, bool) or cpu < 0 or cpu > MAX_CPU_ID:
            raise InvalidValue("bad cpu id %r" % (cpu,))
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        if j == i:
            parts.append(str(ordered[i]))
        else:
            parts.append("%d-%d" % (ordered[i], ordered[j]))
        i = j + 1
    return ",".join(parts)
