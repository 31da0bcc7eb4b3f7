"""The registry's text and OpenMetrics expositions are prometheus_client's generate_latest
functions', byte for byte."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Enum, Gauge, Histogram, Info, Summary
from prometheus_client.core import CounterMetricFamily, Exemplar, GaugeHistogramMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import generate_latest
from prometheus_client.openmetrics.exposition import generate_latest as om_generate_latest

from koordlet.metrics.registry import new_registry, record_host_probe
from koordlet.metrics.text import RegistryText


class OddNames:
    """Families generate_latest spells specially: a name outside the legacy set, a timestamp,
    a gauge histogram's _gsum/_gcount."""

    def collect(self):
        odd = GaugeMetricFamily("odd.name", "dots", labels=["k"])
        odd.add_metric(["v"], 1.0)
        stamped = GaugeMetricFamily("stamped", "with a timestamp", labels=["k"])
        stamped.add_metric(["v"], 2.0, timestamp=1_700_000_000.5)
        histogram = GaugeHistogramMetricFamily("gh", "gauge histogram", buckets=[("1.0", 3), ("+Inf", 5)],
                                               gsum_value=7.0)
        colon = GaugeMetricFamily("with:colon", "a colon, which OpenMetrics writes as _", labels=["k"])
        colon.add_metric(["v"], 3.0)
        exemplified = CounterMetricFamily("exemplified", "a counter with an exemplar", labels=["k"])
        exemplified.add_metric(["v"], 4.0, exemplar=Exemplar({"trace_id": "abc"}, 1.0))
        return [odd, stamped, histogram, colon, exemplified]


def daemon_like_registry() -> CollectorRegistry:
    registry = new_registry('node "a"', now=1_700_000_000.0)
    record_host_probe(registry, "node-a", True, False)
    counter = Counter("koordlet_things", "Things.\nTwo lines, a \\ backslash", ["kind"], registry=registry)
    counter.labels(kind='q"uote\\d\n').inc(3)
    counter.labels(kind="plain").inc(1e21)
    gauge = Gauge("koordlet_values", "Values", ["a", "b"], registry=registry)
    for k, value in enumerate((0.0, -1.5, 1e6, 123456.789, 1e-7, 12345678.0, float("nan"), float("inf"),
                               float("-inf"), 2 ** 53)):
        gauge.labels(a="z%d" % k, b="a").set(value)
    Gauge("koordlet_unlabelled", "No labels", registry=registry).set(4)
    Gauge("koordlet_quoted", 'A "quoted" help', unit="seconds", registry=registry).set(0.5)
    histogram = Histogram("koordlet_seconds", "A histogram", ["hook"], registry=registry,
                          buckets=(0.0005, 0.001, 0.1, 1.0, 10.0, 1e7))
    histogram.labels(hook="a").observe(0.0007)
    Summary("koordlet_summary", "A summary", registry=registry).observe(2.5)
    Info("koordlet_about", "An info", registry=registry).info({"version": "1", "x": "y"})
    Enum("koordlet_state", "An enum", states=["on", "off"], registry=registry).state("off")
    registry.register(OddNames())
    return registry


class Frozen:
    """One collection of a registry, replayed: the process and GC figures move between two calls."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.metrics: list = []

    def freeze(self) -> Frozen:
        self.metrics = list(self.registry.collect())
        return self

    def collect(self):
        return self.metrics


def test_the_text_is_generate_latests_over_repeated_scrapes_and_changed_values():
    registry = daemon_like_registry()
    frozen = Frozen(registry)
    text = RegistryText(frozen)
    frozen.freeze()
    assert text.render() == generate_latest(frozen)
    Gauge("koordlet_later", "Registered after a scrape", ["k"], registry=registry).labels(k="x").set(0.25)
    changing = Gauge("koordlet_changing", "Changes", ["k"], registry=registry)
    for value in (1.0, 7e6, 0.5):
        changing.labels(k="x").set(value)
        changing.labels(k="y%d" % int(value)).set(value)
        frozen.freeze()
        assert text.render() == generate_latest(frozen)
    changing.remove("x")
    frozen.freeze()
    assert text.render() == generate_latest(frozen)
    assert b"process_open_fds" in text.render() and b"koordlet_changing" in text.render()


def om_latest(registry) -> bytes:
    """om_generate_latest without the closing `# EOF`, which the endpoint adds after every part."""
    text = om_generate_latest(registry)
    assert text.endswith(b"# EOF\n")
    return text[:-len(b"# EOF\n")]


def test_the_openmetrics_text_is_generate_latests_also_after_text_scrapes():
    registry = daemon_like_registry()
    frozen = Frozen(registry)
    text = RegistryText(frozen)
    frozen.freeze()
    assert text.render(openmetrics=True) == om_latest(frozen)
    changing = Gauge("koordlet_changing", "Changes", ["k"], registry=registry)
    for value in (1.0, 7e6, 0.5):
        changing.labels(k="y%d" % int(value)).set(value)
        frozen.freeze()
        # the series prefixes a text scrape made serve the OpenMetrics one, and back
        assert text.render() == generate_latest(frozen)
        assert text.render(openmetrics=True) == om_latest(frozen)
    rendered = text.render(openmetrics=True)
    assert b"# UNIT koordlet_quoted_seconds seconds\n" in rendered and b'A \\"quoted\\" help' in rendered
    assert b"with_colon{" in rendered and b"# {trace_id=" in rendered


def test_only_the_families_a_format_spells_specially_are_left_to_prometheus_client(monkeypatch):
    import prometheus_client.exposition
    import prometheus_client.openmetrics.exposition

    left: dict[str, set[str]] = {"text": set(), "openmetrics": set()}

    def recording(kind: str, real):
        def recorded(registry):
            left[kind].update(metric.name for metric in registry.collect())
            return real(registry)
        return recorded

    # (koordlet.metrics.text imports these at the first family it leaves to them)
    monkeypatch.setattr(prometheus_client.exposition, "generate_latest", recording("text", generate_latest))
    monkeypatch.setattr(prometheus_client.openmetrics.exposition, "generate_latest",
                        recording("openmetrics", om_generate_latest))
    frozen = Frozen(daemon_like_registry()).freeze()
    RegistryText(frozen).render()
    RegistryText(frozen).render(openmetrics=True)
    assert left == {"text": {"odd.name", "stamped", "gh"},
                    "openmetrics": {"odd.name", "stamped", "gh", "with:colon", "exemplified"}}
