"""The Prometheus text format (and OpenMetrics) written by hand, for exporters whose series
are many (prometheus_client's per-sample formatting dominates a scrape there) and for
counters under Go's names. Pure."""

from __future__ import annotations

import math
import re
from typing import Protocol

from koordlet.metrics.client import Collector, Metric, Sample, floatToGoString


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
    return b"".join(family_parts(families, openmetrics))


def family_parts(families: "list[Family]", openmetrics: bool) -> list[bytes]:
    """The families as encoded pieces, for the HTTP endpoint to write one after the other:
    a body of megabytes in one buffer costs ~1,000 page faults at each scrape (glibc hands a
    freed block that size back to the kernel). A family's text lines are encoded together,
    a few hundred KiB at most; its blocks are passed on as they are."""
    parts: list[bytes] = []
    for family in families:
        if family.lines or family.blocks:
            header = family_header(family.name, family.help_text, family.kind, openmetrics)
            parts.append((header + "".join(family.lines)).encode())
            parts += family.blocks
    return parts


# what prometheus_client's text format writes for each family type, and the suffix it adds
_TEXT_TYPE = {"info": "gauge", "stateset": "gauge", "gaugehistogram": "histogram", "unknown": "untyped"}
_TEXT_SUFFIX = {"counter": "_total", "info": "_info"}
_PLAIN_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
_PLAIN_LABEL = re.compile(r"(?!__)[a-zA-Z_][a-zA-Z0-9_]*\Z")
_OM_EOF = "# EOF\n"
_OM_ONLY_SUFFIXES = ("_created", "_gsum", "_gcount")  # prometheus_client moves these to families of their own

_SeriesId = tuple[str, tuple[tuple[str, str], ...]]


def is_plain_name(name: str) -> bool:
    """A metric name both formats write as it is (OpenMetrics writes a ':' as '_')."""
    return _PLAIN_NAME.match(name) is not None


def is_plain_label(label: str) -> bool:
    return _PLAIN_LABEL.match(label) is not None


def sample_text(value: float) -> str:
    """A sample's value as prometheus_client's writers spell it (floatToGoString): repr for a
    finite float below 1e6, the only case that needs no work (Go's exponent comes later)."""
    if type(value) is float and value - value == 0.0 and value < 1e6:
        return repr(value)
    return floatToGoString(value)


class KeptLines(Protocol):
    """A collector that keeps its family's sample lines as text (metrics/histogram.py)."""

    def lines(self) -> str: ...

    def samples(self) -> list[Sample]: ...


class KeptFamily(Metric):
    """A family whose sample lines its collector keeps: RegistryText writes `lines()` as they
    are, in both formats; `samples` (prometheus_client's readers) are made when asked for."""

    def __init__(self, name: str, documentation: str, typ: str, source: KeptLines) -> None:
        # not Metric.__init__: it would set the samples this class makes on demand
        self.name, self.documentation, self.unit, self.type = name, documentation, "", typ
        self.source = source

    @property
    def samples(self) -> list[Sample]:
        return self.source.samples()

    @samples.setter
    def samples(self, value: list[Sample]) -> None:
        raise AttributeError("a kept family's samples are its collector's")


class _OneMetric:
    def __init__(self, metric: Metric) -> None:
        self._metric = metric

    def collect(self) -> list[Metric]:
        return [self._metric]


class RegistryText:
    """A registry in the text format or OpenMetrics, as prometheus_client's generate_latest
    functions write them, with each series' "name{labels} " made once instead of at every
    scrape (label names checked and sorted, values escaped: most of those functions' time
    with a few hundred series; the OpenMetrics one also checks every character of every
    label name in Python). A family this does not spell itself (names outside the legacy
    character set, timestamps, exemplars, samples a format moves or drops) is written by
    prometheus_client."""

    def __init__(self, registry: Collector) -> None:
        self._registry = registry
        self._prefixes: dict[_SeriesId, str] = {}

    def render(self, openmetrics: bool = False) -> bytes:
        """The families, without OpenMetrics' closing `# EOF` (the caller adds it after
        the other exporters' families)."""
        out: list[str] = []
        known, used = self._prefixes, dict[_SeriesId, str]()
        for metric in self._registry.collect():
            if isinstance(metric, KeptFamily):  # its name checked when its collector was made
                header = _om_header(metric) if openmetrics else _text_header(metric)
                out += [header or "", metric.source.lines()]
                continue
            lines = self._lines(metric, known, used, openmetrics)
            out += lines if lines is not None else [_generated(metric, openmetrics)]
        self._prefixes = used  # series gone since the last scrape drop out here
        return "".join(out).encode()

    @staticmethod
    def _lines(metric: Metric, known: dict[_SeriesId, str], used: dict[_SeriesId, str],
               openmetrics: bool) -> list[str] | None:
        header = _om_header(metric) if openmetrics else _text_header(metric)
        if header is None:
            return None
        special = tuple(metric.name + suffix for suffix in _OM_ONLY_SUFFIXES)
        lines = [header]
        for sample in metric.samples:
            # (native_histogram: not a Sample field in every prometheus_client release)
            if sample.timestamp is not None or (openmetrics and (
                    sample.exemplar or getattr(sample, "native_histogram", None))):
                return None
            series = (sample.name, tuple(sample.labels.items()))
            prefix = known.get(series)
            if prefix is None:
                if sample.name in special or _PLAIN_NAME.match(sample.name) is None or not all(
                        _PLAIN_LABEL.match(label) for label in sample.labels):
                    return None
                labels = ",".join('%s="%s"' % (k, escape(v)) for k, v in sorted(sample.labels.items()))
                prefix = "%s{%s} " % (sample.name, labels) if labels else sample.name + " "
            if openmetrics and ":" in sample.name:  # written with a '_' there: the prefix is both formats'
                return None
            used[series] = prefix
            lines.append(prefix + sample_text(sample.value) + "\n")
        return lines


def _text_header(metric: Metric) -> str | None:
    name = metric.name + _TEXT_SUFFIX.get(metric.type, "")
    if _PLAIN_NAME.match(name) is None:
        return None
    doc = metric.documentation.replace("\\", "\\\\").replace("\n", "\\n")
    return "# HELP %s %s\n# TYPE %s %s\n" % (name, doc, name, _TEXT_TYPE.get(metric.type, metric.type))


def _om_header(metric: Metric) -> str | None:
    name = metric.name
    if _PLAIN_NAME.match(name) is None:
        return None
    doc = escape(metric.documentation)  # OpenMetrics escapes a HELP text as a label value
    header = "# HELP %s %s\n# TYPE %s %s\n" % (name, doc, name, metric.type)
    return header + ("# UNIT %s %s\n" % (name, metric.unit) if metric.unit else "")


def _generated(metric: Metric, openmetrics: bool) -> str:
    """One family as prometheus_client writes it (OpenMetrics: without its `# EOF`). Its
    exposition modules are imported at the first such family (see koordlet.metrics)."""
    from prometheus_client.exposition import generate_latest
    from prometheus_client.openmetrics.exposition import generate_latest as om_generate_latest

    if not openmetrics:
        return generate_latest(_OneMetric(metric)).decode()
    text = om_generate_latest(_OneMetric(metric)).decode()
    return text[:-len(_OM_EOF)] if text.endswith(_OM_EOF) else text
