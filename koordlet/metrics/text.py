"""The Prometheus text format (and OpenMetrics) written by hand, for exporters whose series
are many (prometheus_client's per-sample formatting dominates a scrape there) and for
counters under Go's names. Pure."""

from __future__ import annotations

import math


def escape(value: str) -> str:
    """A label value in the text format: backslash, double quote and newline escaped."""
    if "\\" in value or '"' in value or "\n" in value:
        return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return value


def number(value: float) -> str:
    """A sample value as the text format spells it (Go's ParseFloat reads Python's repr)."""
    text = repr(float(value))
    if text[-1] not in "nf":  # not "nan", "inf" or "-inf"
        return text
    return "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")


def family_header(name: str, help_text: str, kind: str, openmetrics: bool) -> str:
    """HELP and TYPE of a family whose samples are named `name`. OpenMetrics names a counter
    family without its `_total`; a counter sample without `_total` (koordlet's Go names) is
    "unknown" there."""
    if openmetrics and kind == "counter":
        if name.endswith("_total"):
            name = name[:-len("_total")]
        else:
            kind = "unknown"
    return "# HELP %s %s\n# TYPE %s %s\n" % (name, help_text, name, kind)


class Family:
    """One family being rendered: its samples as text lines, then as encoded blocks of lines
    (what an exporter keeps between scrapes: encoded once, not at every scrape)."""

    __slots__ = ("name", "help_text", "kind", "lines", "blocks")

    def __init__(self, name: str, help_text: str, kind: str = "gauge") -> None:
        self.name = name
        self.help_text = help_text
        self.kind = kind
        self.lines: list[str] = []
        self.blocks: list[bytes] = []

    def add(self, labels: str, value: float, suffix: str = "") -> None:
        self.lines.append("%s{%s%s} %s\n" % (self.name, labels, suffix, number(value)))


def render_families(families: "list[Family]", openmetrics: bool) -> bytes:
    """One bytes join over every family: a body of megabytes is made once. (Joining it as
    text and encoding that made two at once, and the allocator gave the pages of both back
    to the kernel after each scrape: 2-5 ms of page faults the next time at 1,000 pods.)
    A family's text lines are encoded together, a few hundred KiB at most."""
    parts: list[bytes] = []
    for family in families:
        if family.lines or family.blocks:
            header = family_header(family.name, family.help_text, family.kind, openmetrics)
            parts.append((header + "".join(family.lines)).encode())
            parts += family.blocks
    return b"".join(parts)

