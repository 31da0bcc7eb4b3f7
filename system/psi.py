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


# avg10, avg60, avg300 of one line
PsiAverages = tuple[float, float, float]


def psi_averages(text: str) -> tuple[PsiAverages, PsiAverages | None]:
    """The some and full averages only, from one split of the text (the metrics collectors
    read ~6,000 of these files per round); InvalidValue as parse_psi when malformed."""
    words = text.split()
    try:
        if words[0] == "some" and words[1][:6] == "avg10=" and words[2][:6] == "avg60=" \
                and words[3][:7] == "avg300=":
            some = (float(words[1][6:]), float(words[2][6:]), float(words[3][7:]))
            if len(words) == 5:
                return some, None
            if len(words) == 10 and words[5] == "full" and words[6][:6] == "avg10=" \
                    and words[7][:6] == "avg60=" and words[8][:7] == "avg300=":
                return some, (float(words[6][6:]), float(words[7][6:]), float(words[8][7:]))
    except (IndexError, ValueError):
        pass
    psi = parse_psi(text)  # unusual layout: the full parser decides or says what is wrong
    full = None if psi.full is None else (psi.full.avg10, psi.full.avg60, psi.full.avg300)
    return (psi.some.avg10, psi.some.avg60, psi.some.avg300), full
