"""Pressure stall information: the format of /proc/pressure/* and cgroup *.pressure files.

Format (Documentation/accounting/psi.rst)::

    some avg10=0.00 avg60=0.00 avg300=0.00 total=0
    full avg10=0.00 avg60=0.00 avg300=0.00 total=0

``total`` is in microseconds. /proc/pressure/cpu has a "full" line since 5.13 (all zero at
system level); older kernels print only "some".
"""

from __future__ import annotations

from dataclasses import dataclass

from system.errors import InvalidValue

# the resources with a pressure file, in cgroups and in /proc/pressure
PSI_RESOURCES = ("cpu", "memory", "io")

_FIELDS = ("avg10", "avg60", "avg300", "total")


@dataclass(frozen=True, slots=True)
class PsiLine:
    avg10: float
    avg60: float
    avg300: float
    total_us: int


@dataclass(frozen=True, slots=True)
class Psi:
    some: PsiLine
    full: PsiLine | None = None


def parse_psi(text: str) -> Psi:
    """Parse PSI text; InvalidValue when a line is malformed or "some" is missing."""
    some: PsiLine | None = None
    full: PsiLine | None = None
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        kind = words[0]
        if kind not in ("some", "full"):
            raise InvalidValue("unknown PSI line %r" % line)
        values: dict[str, str] = {}
        for word in words[1:]:
            key, eq, val = word.partition("=")
            if not eq:
                raise InvalidValue("bad PSI field %r" % word)
            values[key] = val
        try:
            parsed = PsiLine(
                avg10=float(values["avg10"]),
                avg60=float(values["avg60"]),
                avg300=float(values["avg300"]),
                total_us=int(values["total"]),
            )
        except (KeyError, ValueError):
            raise InvalidValue("incomplete PSI line %r" % line) from None
        if kind == "some":
            some = parsed
        else:
            full = parsed
    if some is None:
        raise InvalidValue("PSI text has no 'some' line")
    return Psi(some=some, full=full)


def format_psi(psi: Psi) -> str:
    """Render PSI as the kernel prints it (for fake trees and round-trip tests)."""
    lines = []
    for kind, line in (("some", psi.some), ("full", psi.full)):
        if line is None:
            continue
        lines.append(
            "%s avg10=%.2f avg60=%.2f avg300=%.2f total=%d"
            % (kind, line.avg10, line.avg60, line.avg300, line.total_us)
        )
    return "\n".join(lines) + "\n"
