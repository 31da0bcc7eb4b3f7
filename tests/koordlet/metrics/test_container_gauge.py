"""The hand-rendered per-container gauge: what a scrape parses, and series that follow
their containers."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from koordlet.metrics.container_gauge import ContainerGauge
from koordlet.metrics.text import render_families


def scrape(gauge: ContainerGauge) -> dict[str, tuple[dict[str, str], float]]:
    (family,) = text_string_to_metric_families(render_families([gauge.family()], False).decode())
    assert family.type == "gauge" and family.name == "koordlet_container_scaled_cfs_burst_us"
    return {s.labels["container_id"]: (s.labels, s.value) for s in family.samples}


def test_values_follow_sets_renames_and_removals():
    gauge = ContainerGauge("koordlet_container_scaled_cfs_burst_us", "burst")
    gauge.set(("n1", "default", "web", "c1", "app"), 1000)
    gauge.set(("n1", "default", "db\"1", "c2", "db"), 2000)
    gauge.set(("n1", "default", "web", "c1", "app"), 1500)
    got = scrape(gauge)
    assert got["c1"] == ({"node": "n1", "pod_namespace": "default", "pod_name": "web", "container_id": "c1",
                          "container_name": "app"}, 1500.0)
    assert got["c2"][0]["pod_name"] == 'db"1'  # escaped on the wire, the same value parsed back
    gauge.set(("n1", "default", "web-2", "c1", "app"), 1500)  # new labels for the same container
    assert scrape(gauge)["c1"][0]["pod_name"] == "web-2"
    gauge.remove("c2")
    gauge.remove("gone")  # removing an unknown container is not an error
    assert set(scrape(gauge)) == {"c1"} and gauge.value("c1") == 1500.0 and gauge.value("c2") is None


def test_an_empty_gauge_renders_nothing_and_labels_must_be_complete():
    gauge = ContainerGauge("koordlet_container_scaled_cfs_burst_us", "burst")
    assert render_families([gauge.family()], False) == b""
    with pytest.raises(ValueError, match="takes labels"):
        gauge.set(("n1", "c1"), 1.0)


def test_each_scrape_shows_the_values_set_since_the_last_one():
    gauge = ContainerGauge("koordlet_container_scaled_cfs_burst_us", "burst")
    labels = ("n1", "default", "web", "c1", "app")
    for value in (1000, 1000, 2500, 2500, 0.0, -0.0, 7, float("nan")):
        gauge.set(labels, value)
        text = render_families([gauge.family()], False).decode()
        spelled = "NaN" if value != value else repr(float(value))
        assert text.endswith('container_name="app"} %s\n' % spelled)
