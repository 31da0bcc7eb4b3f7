"""Container series hold as many samples as their own (slower) collection leaves in the
retention, not as many as a 1 s series."""

from __future__ import annotations

import pytest

from koordlet.metriccache.api import Metric, SeriesKey
from koordlet.metriccache.options import MetricCacheOptions
from koordlet.metriccache.retention import RetentionPolicy, retention_for


def test_container_capacity_follows_the_container_interval():
    policy = retention_for(MetricCacheOptions(), 1.0, 10.0)
    container = SeriesKey.of(Metric.CONTAINER_CPU_USAGE_CORES, "u1", "c1")
    pod = SeriesKey.of(Metric.POD_CPU_USAGE_CORES, "u1")
    assert policy.capacity(container) == policy.container_seconds / 10 + 2
    assert policy.capacity(pod) == policy.pod_seconds / 1 + 2
    assert retention_for(MetricCacheOptions(), 1.0).capacity(container) == policy.container_seconds + 2


def test_a_container_interval_faster_than_the_pods_is_raised_to_it():
    assert retention_for(MetricCacheOptions(), 1.0, 0.5).container_sample_interval == 1.0


@pytest.mark.parametrize("interval", [0.0, -1.0, float("inf")])
def test_a_container_interval_must_be_positive(interval):
    with pytest.raises(ValueError, match="container_sample_interval"):
        RetentionPolicy(container_sample_interval=interval)
