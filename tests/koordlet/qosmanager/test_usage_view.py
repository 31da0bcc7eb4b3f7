"""How old a last sample a strategy still reads: pods within 5 s, containers within two of
their (longer) collection intervals."""

from __future__ import annotations

from koordlet.metriccache.api import Metric, SeriesKey
from koordlet.metriccache.retention import RetentionPolicy
from koordlet.metriccache.store import MetricStore
from koordlet.qosmanager.assembly import container_sample_age
from koordlet.qosmanager.usage import UsageView
from tests.koordlet.hubs_helper import config_of, hubs_for


def test_container_samples_may_be_as_old_as_their_interval_allows():
    store = MetricStore(RetentionPolicy(container_sample_interval=10.0))
    store.append_at(100.0, [(SeriesKey.of(Metric.POD_CPU_USAGE_CORES, "u1"), 1.5),
                            (SeriesKey.of(Metric.CONTAINER_CPU_USAGE_CORES, "u1", "c1"), 0.5)])
    age = container_sample_age(store)
    assert age == 21.0  # 2 x the 10 s container interval + 1
    view = UsageView(store, 115.0, container_max_age=age)
    assert view.last(Metric.POD_CPU_USAGE_CORES, "u1") is None
    assert view.last(Metric.CONTAINER_CPU_USAGE_CORES, "u1", "c1") == 0.5
    assert UsageView(store, 122.0, container_max_age=age).last(Metric.CONTAINER_CPU_USAGE_CORES, "u1", "c1") is None
    assert container_sample_age(MetricStore()) == 5.0  # every second: the pods' 5 s


def test_the_daemons_cache_knows_the_container_interval(tmp_path):
    hubs = hubs_for(config_of(state_dir=tmp_path, collect_container_res_used_interval_seconds="30"))
    assert hubs.metric_cache.policy.container_sample_interval == 30.0
    assert container_sample_age(hubs.metric_cache) == 61.0
