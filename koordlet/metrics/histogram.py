"""A histogram whose sample lines are kept as text between scrapes.

prometheus_client makes every bucket of every series again at each scrape (a Sample with its
own label dict, the bound spelled again): at 1,000 pods the daemon's ~380 bucket, count and
sum lines of its hook, reconcile and executor histograms were a quarter of a scrape's CPU,
though most of those series see no observation between two scrapes. Here a series keeps its
lines, made once per label set, and writes them again only after an observation; the
registry's writer (text.RegistryText) takes them as they are. The samples prometheus_client's
own readers ask for (registry.get_sample_value, its generate_latest) are made on demand,
equal to what its Histogram gives for the same observations."""

from __future__ import annotations

from bisect import bisect_left
from typing import Iterable, Sequence

from koordlet.metrics.client import CollectorRegistry, Sample, floatToGoString
from koordlet.metrics.text import KeptFamily, escape, is_plain_label, is_plain_name, sample_text

_INF = float("inf")


class HistogramSeries:
    """One label set's buckets (counts per bound, not yet cumulative), sum and lines."""

    __slots__ = ("_bounds", "_counts", "_sum", "_observed", "_prefixes", "_kept")

    def __init__(self, bounds: tuple[float, ...], prefixes: tuple[str, ...]) -> None:
        self._bounds = bounds
        self._counts = [0] * len(bounds)
        self._sum = 0.0
        self._observed = 0  # observations so far: the kept lines are valid while it stays
        self._prefixes = prefixes  # "name_bucket{labels,le=...} " per bound, then _count's and _sum's
        self._kept: tuple[int, str] | None = None

    def observe(self, amount: float) -> None:
        if amount == amount:  # NaN falls in no bucket (prometheus_client's rule), only in the sum
            self._counts[bisect_left(self._bounds, amount)] += 1
        self._sum += amount
        self._observed += 1

    def lines(self) -> str:
        """The bucket, count and sum lines; made again only when observed since the last call.
        Runs in the scrape's worker thread while the loop observes: an observation after
        `observed` is read makes the next call write the lines again."""
        observed, kept = self._observed, self._kept
        if kept is not None and kept[0] == observed:
            return kept[1]
        values = self._values()
        text = "".join([prefix + sample_text(value) + "\n" for prefix, value in zip(self._prefixes, values)])
        self._kept = (observed, text)
        return text

    def _values(self) -> list[float]:
        """Cumulative bucket counts, the count and the sum, as prometheus_client's floats."""
        out, total = [], 0
        for count in self._counts[:]:  # one copy: the loop may observe meanwhile
            total += count
            out.append(float(total))
        out += [float(total), self._sum]
        return out


class Histogram:
    """prometheus_client's Histogram as the daemon uses it: `labels(*values)` (positional), `observe`
    (unlabelled), registered on a registry; the same names, labels, buckets and values on
    /metrics, with the lines kept (see the module's doc)."""

    DEFAULT_BUCKETS = (.005, .01, .025, .05, .075, .1, .25, .5, .75, 1.0, 2.5, 5.0, 7.5, 10.0, _INF)

    def __init__(self, name: str, documentation: str, labelnames: Iterable[str] = (),
                 registry: CollectorRegistry | None = None, buckets: Sequence[float] = DEFAULT_BUCKETS) -> None:
        bounds = [float(bound) for bound in buckets]
        if bounds != sorted(bounds) or (bounds and bounds[0] < 0):
            raise ValueError("%s: buckets must be ascending and not negative" % name)
        if not bounds or bounds[-1] != _INF:
            bounds.append(_INF)
        if len(bounds) < 2:
            raise ValueError("%s: a histogram needs at least one bound below +Inf" % name)
        self.labelnames = tuple(labelnames)
        if not is_plain_name(name) or ":" in name or not all(
                is_plain_label(label) and label != "le" for label in self.labelnames):
            raise ValueError("%s: not a name and labels written as they are in both formats" % name)
        self.name = name
        self.documentation = documentation
        self._bounds = tuple(bounds)
        self._les = tuple(floatToGoString(bound) for bound in bounds)
        self._series: dict[tuple[str, ...], HistogramSeries] = {}
        if not self.labelnames:
            self.labels()
        if registry is not None:
            registry.register(self)

    def labels(self, *values: str) -> HistogramSeries:
        series = self._series.get(values)
        if series is None:
            if len(values) != len(self.labelnames):
                raise ValueError("%s takes labels %s" % (self.name, self.labelnames))
            values = tuple(str(value) for value in values)
            series = self._series[values] = HistogramSeries(self._bounds, self._prefixes(values))
        return series

    def observe(self, amount: float) -> None:
        if self.labelnames:
            raise ValueError("%s has labels: observe one series (labels(...).observe)" % self.name)
        self._series[()].observe(amount)

    def describe(self) -> list[KeptFamily]:
        return [KeptFamily(self.name, self.documentation, "histogram", self)]

    def collect(self) -> list[KeptFamily]:
        return [KeptFamily(self.name, self.documentation, "histogram", self)]

    def lines(self) -> str:
        """Every series' lines, in the order the series were first used (prometheus_client's)."""
        return "".join([series.lines() for series in list(self._series.values())])

    def samples(self) -> list[Sample]:
        out = []
        for values, series in list(self._series.items()):
            labels = dict(zip(self.labelnames, values))
            numbers = series._values()
            out += [Sample(self.name + "_bucket", {**labels, "le": le}, value, None, None)
                    for le, value in zip(self._les, numbers)]
            out += [Sample(self.name + "_count", labels, numbers[-2], None, None),
                    Sample(self.name + "_sum", labels, numbers[-1], None, None)]
        return out

    def _prefixes(self, values: tuple[str, ...]) -> tuple[str, ...]:
        """Each line's "name{labels} " (labels sorted, as prometheus_client writes them)."""
        labels = list(zip(self.labelnames, values))

        def prefix(suffix: str, pairs: list[tuple[str, str]]) -> str:
            text = ",".join('%s="%s"' % (k, escape(v)) for k, v in sorted(pairs))
            return "%s%s{%s} " % (self.name, suffix, text) if text else "%s%s " % (self.name, suffix)

        return (*(prefix("_bucket", labels + [("le", le)]) for le in self._les),
                prefix("_count", labels), prefix("_sum", labels))
