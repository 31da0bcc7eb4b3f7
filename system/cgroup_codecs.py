"""Value validators and text codecs used by the cgroup resource table.

A validator checks a canonical Python value (v1 semantics: -1 = unlimited, shares not
weight). A codec turns a canonical value into the text one kernel file takes (``format``)
and that file's text back into the canonical value (``parse``). Codecs are small frozen
values so the registry can be a table of declarations.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Protocol

from system.cpuset import format_cpuset, parse_cpuset
from system.errors import InvalidValue
from system.psi import format_psi, parse_psi

MAX_INT64 = (1 << 63) - 1
UNLIMITED = -1
# v1 memory counters print PAGE_COUNTER_MAX * PAGE_SIZE when unlimited; anything at or above
# this (4 KiB pages: 0x7FFFFFFFFFFFF000) reads back as unlimited.
V1_MEMORY_UNLIMITED_FLOOR = 0x7FFFFFFFFFFFF000 - (1 << 32)

CPU_SHARES_MIN = 2
CPU_SHARES_MAX = 262144
CPU_WEIGHT_MIN = 1
CPU_WEIGHT_MAX = 10000
BLKIO_WEIGHT_MIN = 10
BLKIO_WEIGHT_MAX = 1000


# ---------------------------------------------------------------- conversions (pure)

def shares_to_weight(shares: int) -> int:
    """cgroup v1 cpu.shares -> v2 cpu.weight, the kubelet/runc formula, clamped."""
    shares = min(max(shares, CPU_SHARES_MIN), CPU_SHARES_MAX)
    return 1 + ((shares - 2) * 9999) // 262142


def weight_to_shares(weight: int) -> int:
    """v2 cpu.weight -> v1 cpu.shares: the smallest shares that shares_to_weight maps to
    ``weight`` (a ceiling division), so weight -> shares -> weight is exact."""
    weight = min(max(weight, CPU_WEIGHT_MIN), CPU_WEIGHT_MAX)
    return 2 + -(-((weight - 1) * 262142) // 9999)


def blkio_weight_to_io_weight(weight: int) -> int:
    """v1 blkio.weight [10,1000] -> v2 io.weight [1,10000] (runc's conversion)."""
    weight = min(max(weight, BLKIO_WEIGHT_MIN), BLKIO_WEIGHT_MAX)
    return 1 + ((weight - 10) * 9999) // 990


def io_weight_to_blkio_weight(weight: int) -> int:
    """v2 io.weight -> v1 blkio.weight (ceiling: blkio -> io -> blkio is exact)."""
    weight = min(max(weight, CPU_WEIGHT_MIN), CPU_WEIGHT_MAX)
    return 10 + -(-((weight - 1) * 990) // 9999)


# ---------------------------------------------------------------- validators

class Validator(Protocol):
    def validate(self, value: Any) -> None: ...


def _as_int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, str):
            try:
                return int(value.strip())
            except ValueError:
                raise InvalidValue("not an integer: %r" % (value,)) from None
        raise InvalidValue("not an integer: %r" % (value,))
    return value


@dataclass(frozen=True, slots=True)
class IntRange:
    """An integer in [lo, hi]; -1 also accepted when ``unlimited``."""

    lo: int
    hi: int = MAX_INT64
    unlimited: bool = False

    def validate(self, value: Any) -> None:
        number = _as_int(value)
        if self.unlimited and number == UNLIMITED:
            return
        if not self.lo <= number <= self.hi:
            raise InvalidValue("value %d outside [%d, %d]" % (number, self.lo, self.hi))


@dataclass(frozen=True, slots=True)
class CpusetValue:
    """A set of non-negative ids, or a string in the kernel's list syntax."""

    def validate(self, value: Any) -> None:
        if isinstance(value, str):
            parse_cpuset(value)
            return
        if isinstance(value, (set, frozenset, list, tuple)):
            format_cpuset(value)
            return
        raise InvalidValue("not a cpu list: %r" % (value,))


@dataclass(frozen=True, slots=True)
class DeviceLimit:
    """One "MAJOR:MINOR VALUE" line of a per-device file (blkio throttle)."""

    major: int
    minor: int
    value: int


@dataclass(frozen=True, slots=True)
class DeviceValue:
    def validate(self, value: Any) -> None:
        if not isinstance(value, DeviceLimit):
            raise InvalidValue("expected DeviceLimit, got %r" % (value,))
        for part in (value.major, value.minor, value.value):
            if isinstance(part, bool) or not isinstance(part, int) or not 0 <= part <= MAX_INT64:
                raise InvalidValue("bad device limit %r" % (value,))


@dataclass(frozen=True, slots=True)
class ReadOnly:
    def validate(self, value: Any) -> None:
        raise InvalidValue("resource is read-only")


# ---------------------------------------------------------------- codecs

class Codec(Protocol):
    def format(self, value: Any, current: str | None = None) -> str: ...

    def parse(self, text: str) -> Any: ...


def _parse_int(text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise InvalidValue("not an integer: %r" % text) from None


@dataclass(frozen=True, slots=True)
class IntCodec:
    """Integer text. ``unlimited_token`` is what -1 becomes ("max" on v2, "-1" on v1);
    ``unlimited_floor`` maps huge v1 counters (memory "unlimited") back to -1."""

    unlimited_token: str | None = None
    unlimited_floor: int | None = None

    def format(self, value: Any, current: str | None = None) -> str:
        number = _as_int(value)
        if number == UNLIMITED and self.unlimited_token is not None:
            return self.unlimited_token
        return str(number)

    def parse(self, text: str) -> int:
        body = text.strip()
        if body == "max":
            return UNLIMITED
        number = _parse_int(body)
        if self.unlimited_floor is not None and number >= self.unlimited_floor:
            return UNLIMITED
        return number


@dataclass(frozen=True, slots=True)
class SharesAsWeight:
    """v2 cpu.weight carrying canonical cpu.shares."""

    def format(self, value: Any, current: str | None = None) -> str:
        return str(shares_to_weight(_as_int(value)))

    def parse(self, text: str) -> int:
        return weight_to_shares(_parse_int(text))


@dataclass(frozen=True, slots=True)
class BlkioAsIoWeight:
    """v2 io.weight ("default N" plus per-device lines) carrying canonical blkio.weight."""

    def format(self, value: Any, current: str | None = None) -> str:
        return "default %d" % blkio_weight_to_io_weight(_as_int(value))

    def parse(self, text: str) -> int:
        for line in text.splitlines():
            words = line.split()
            if len(words) == 2 and words[0] == "default":
                return io_weight_to_blkio_weight(_parse_int(words[1]))
        raise InvalidValue("io.weight has no default line: %r" % text)


@dataclass(frozen=True, slots=True)
class CpuMaxField:
    """One field of v2 cpu.max ("$MAX $PERIOD"). Field 0 is the quota ("max" = -1),
    field 1 the period. Writing the quota alone keeps the period; writing the period
    needs the current quota (``current`` = present text of cpu.max)."""

    index: int

    def format(self, value: Any, current: str | None = None) -> str:
        number = _as_int(value)
        if self.index == 0:
            return "max" if number == UNLIMITED else str(number)
        quota = "max"
        if current:
            quota = current.split()[0]
        return "%s %d" % (quota, number)

    def parse(self, text: str) -> int:
        words = text.split()
        if not (len(words) == 2 or (len(words) == 1 and self.index == 0)):
            raise InvalidValue("cpu.max wants '$MAX $PERIOD': %r" % text)
        word = words[self.index]
        return UNLIMITED if word == "max" else _parse_int(word)


@dataclass(frozen=True, slots=True)
class CpusetCodec:
    def format(self, value: Any, current: str | None = None) -> str:
        if isinstance(value, str):
            return format_cpuset(parse_cpuset(value))
        return format_cpuset(value)

    def parse(self, text: str) -> frozenset[int]:
        return parse_cpuset(text)


def parse_key_values(text: str) -> Mapping[str, int]:
    """Parse "key value" lines (memory.stat, cpu.stat, cpuacct.stat) into a read-only map."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        if len(words) != 2:
            raise InvalidValue("bad key/value line %r" % line)
        try:
            out[words[0]] = int(words[1])
        except ValueError:
            raise InvalidValue("bad value in line %r" % line) from None
    return MappingProxyType(out)


def key_value_of(text: str, key: str) -> int:
    """The value of one "key value" line without parsing the others (memory.stat has ~40
    lines and the collectors need one of them per container per second)."""
    needle = key + " "
    start = 0 if text.startswith(needle) else text.find("\n" + needle) + 1
    if start == 0 and not text.startswith(needle):
        raise InvalidValue("no %r in key/value text" % key)
    end = text.find("\n", start)
    line = text[start:] if end < 0 else text[start:end]
    try:
        return int(line[len(needle):])
    except ValueError:
        raise InvalidValue("bad value in line %r" % line) from None


def format_key_values(values: Mapping[str, int]) -> str:
    return "".join("%s %d\n" % (key, val) for key, val in values.items())


@dataclass(frozen=True, slots=True)
class KeyValuesCodec:
    def format(self, value: Any, current: str | None = None) -> str:
        return format_key_values(value)

    def parse(self, text: str) -> Mapping[str, int]:
        return parse_key_values(text)


@dataclass(frozen=True, slots=True)
class KeyFieldCodec:
    """One key of a key/value file, times ``scale`` (cpu.stat usage_usec -> ns)."""

    key: str
    scale: int = 1

    def format(self, value: Any, current: str | None = None) -> str:
        return "%s %d\n" % (self.key, _as_int(value) // self.scale)

    def parse(self, text: str) -> int:
        return key_value_of(text, self.key) * self.scale


@dataclass(frozen=True, slots=True)
class PsiCodec:
    def format(self, value: Any, current: str | None = None) -> str:
        return format_psi(value)

    def parse(self, text: str) -> Any:
        return parse_psi(text)


@dataclass(frozen=True, slots=True)
class PidListCodec:
    """cgroup.procs / tasks: reads a pid list, writes one pid per write."""

    def format(self, value: Any, current: str | None = None) -> str:
        return str(_as_int(value))

    def parse(self, text: str) -> tuple[int, ...]:
        return tuple(_parse_int(word) for word in text.split())


@dataclass(frozen=True, slots=True)
class DeviceLimitCodec:
    """blkio.throttle.*_device: reads every "MAJ:MIN VALUE" line, writes one."""

    def format(self, value: Any, current: str | None = None) -> str:
        if not isinstance(value, DeviceLimit):
            raise InvalidValue("expected DeviceLimit, got %r" % (value,))
        return "%d:%d %d" % (value.major, value.minor, value.value)

    def parse(self, text: str) -> tuple[DeviceLimit, ...]:
        limits = []
        for line in text.splitlines():
            words = line.split()
            if not words:
                continue
            dev, _, val = line.strip().partition(" ")
            major, colon, minor = dev.partition(":")
            if not colon:
                raise InvalidValue("bad device line %r" % line)
            limits.append(DeviceLimit(_parse_int(major), _parse_int(minor), _parse_int(val)))
        return tuple(limits)


@dataclass(frozen=True, slots=True)
class RawCodec:
    """Text passed through unchanged (files we only show, e.g. memory.numa_stat)."""

    def format(self, value: Any, current: str | None = None) -> str:
        return str(value)

    def parse(self, text: str) -> str:
        return text


def ids_of(value: str | Iterable[int]) -> frozenset[int]:
    """Canonical cpuset value: a list string or an iterable of ids -> frozenset."""
    if isinstance(value, str):
        return parse_cpuset(value)
    return frozenset(value)
