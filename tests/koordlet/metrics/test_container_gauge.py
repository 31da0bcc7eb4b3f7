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


def _fresh_copy(gauge: ContainerGauge, labels: dict[str, tuple[str, ...]]) -> ContainerGauge:
    """A gauge never scraped, with the same rows set in the same order."""
    fresh = ContainerGauge(gauge.name, gauge.help_text)
    for container_id in gauge.container_ids():
        value = gauge.value(container_id)
        assert value is not None
        fresh.set(labels[container_id], value)
    return fresh


def test_a_scrape_after_sets_repeating_changing_or_removing_rows_is_a_fresh_gauges():
    gauge = ContainerGauge("koordlet_container_scaled_cfs_burst_us", "burst")
    labels = {cid: ("n1", "default", "pod-" + cid, cid, "app") for cid in ("c1", "c2", "c3")}
    steps: list[list[tuple[str, float | None]]] = [  # (container, value set; None: removed)
        [("c1", 1000), ("c2", 0.0), ("c3", 5.0)],
        [("c1", 1000), ("c2", 0.0), ("c3", 5.0)],  # every set repeats
        [],  # no set at all
        [("c2", -0.0)],  # equal, spelled otherwise
        [("c2", 0.0), ("c1", float("nan"))],
        [("c1", float("nan"))],  # NaN again
        [("c3", None)],
        [("c3", 5.0)],  # back, after the others
        [("c1", 2000), ("c1", 1000)],  # changed and back between two scrapes
    ]
    for k, step in enumerate(steps):
        for cid, value in step:
            if value is None:
                gauge.remove(cid)
            else:
                gauge.set(labels[cid], value)
        got = render_families([gauge.family()], False)
        assert got == render_families([_fresh_copy(gauge, labels).family()], False), "step %d" % k
        if k == 3:
            assert b'container_id="c2",container_name="app"} -0.0\n' in got
        if k == 6:
            assert b'"c3"' not in got
    labels["c1"] = ("n1", "default", "renamed", "c1", "app")  # new labels, same value
    gauge.set(labels["c1"], 1000)
    assert b'pod_name="renamed"' in render_families([gauge.family()], False)
