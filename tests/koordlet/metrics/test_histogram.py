"""koordlet's Histogram writes what prometheus_client's Histogram writes for the same
observations, in both formats, also after observations between scrapes (its kept lines are
made again), and promtool accepts it."""

from __future__ import annotations

import shutil

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client import Histogram as ClientHistogram
from prometheus_client.exposition import generate_latest
from prometheus_client.openmetrics.exposition import generate_latest as om_generate_latest

from koordlet.metrics.histogram import Histogram
from koordlet.metrics.text import RegistryText
from tests.promtool import promtool_problems

BOUNDS = (0.0005, 0.001, 0.1, 1.0, 1e7)


class Twins:
    """The same histograms twice: prometheus_client's on one registry, koordlet's on another."""

    def __init__(self) -> None:
        self.client, self.kept = CollectorRegistry(), CollectorRegistry()
        self.labelled = [kind("koordlet_x_seconds", 'A "doc"\\ with\nlines', ("hook", "stage"), registry=registry,
                              buckets=BOUNDS) for kind, registry in self.pairs()]
        self.plain = [kind("koordlet_y_seconds", "Unlabelled", registry=registry)
                      for kind, registry in self.pairs()]

    def pairs(self):
        return ((ClientHistogram, self.client), (Histogram, self.kept))

    def observe(self, hook: str, stage: str, amount: float) -> None:
        for histogram in self.labelled:
            histogram.labels(hook, stage).observe(amount)

    def observe_plain(self, amount: float) -> None:
        for histogram in self.plain:
            histogram.observe(amount)


def om_body(registry) -> bytes:
    return om_generate_latest(registry)[:-len(b"# EOF\n")]


def assert_same(twins: Twins, text: RegistryText) -> None:
    assert text.render() == generate_latest(twins.client)
    assert text.render(openmetrics=True) == om_body(twins.client)
    # prometheus_client's own readers see the same samples
    assert generate_latest(twins.kept) == generate_latest(twins.client)


def test_the_lines_are_prometheus_clients_and_follow_every_observation():
    twins = Twins()
    text = RegistryText(twins.kept)
    assert_same(twins, text)  # no series yet: the headers, and the unlabelled series at 0
    twins.observe("a", 'q"uote\\d\n', 0.0007)
    twins.observe("b", "create", 5e6)
    assert_same(twins, text)
    for amount in (1e8, 0.0, 0.0005, 2e-9, float("nan")):
        twins.observe("b", "create", amount)
        twins.observe_plain(amount)
        assert_same(twins, text)  # each observation shows at the next scrape: no kept line is stale
    twins.observe("c", "new", 0.5)  # a series first used after scrapes comes last, as in prometheus_client
    assert_same(twins, text)
    for _ in range(3):
        assert_same(twins, text)  # scrapes without observations in between serve the kept lines
    assert twins.kept.get_sample_value("koordlet_x_seconds_count", {"hook": "b", "stage": "create"}) == 5.0  # NaN in no bucket
    assert twins.kept.get_sample_value("koordlet_x_seconds_bucket",
                                       {"hook": "b", "stage": "create", "le": "0.0005"}) == 3.0


def test_a_scrape_without_an_observation_in_between_reuses_the_lines():
    histogram = Histogram("koordlet_z_seconds", "Z", ("k",), buckets=(1.0,))
    series = histogram.labels("a")
    series.observe(0.5)
    first = series.lines()
    assert series.lines() is first
    series.observe(2.0)
    assert series.lines() != first and 'le="+Inf"} 2.0' in series.lines()


@pytest.mark.parametrize("make", [
    lambda: Histogram("koordlet_h", "h", ("le",)),
    lambda: Histogram("koordlet_h", "h", ("__x",)),
    lambda: Histogram("koordlet:h", "h"),
    lambda: Histogram("koordlet_h", "h", buckets=(2.0, 1.0)),
    lambda: Histogram("koordlet_h", "h", buckets=(float("inf"),)),
])
def test_names_labels_and_buckets_it_cannot_write_are_refused(make):
    with pytest.raises(ValueError):
        make()


def test_labels_of_the_wrong_count_and_an_unlabelled_observe_of_a_labelled_histogram_are_refused():
    registry = CollectorRegistry()
    histogram = Histogram("koordlet_h_seconds", "h", ("a", "b"), registry=registry)
    with pytest.raises(ValueError):
        histogram.labels("only-one")
    with pytest.raises(ValueError):
        histogram.observe(1.0)
    assert generate_latest(registry) == b"# HELP koordlet_h_seconds h\n# TYPE koordlet_h_seconds histogram\n"


def test_a_registered_name_twice_is_refused_by_the_registry():
    registry = CollectorRegistry()
    Histogram("koordlet_h_seconds", "h", registry=registry)
    with pytest.raises(ValueError):
        Histogram("koordlet_h_seconds", "h", registry=registry)


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool is not installed")
def test_promtool_accepts_the_text_format():
    twins = Twins()
    twins.observe("a", "create", 0.0007)
    twins.observe_plain(3.0)
    body = RegistryText(twins.kept).render()
    assert promtool_problems(body) == []
