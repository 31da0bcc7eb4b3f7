"""Katalyst's realtime overcommit ratio. Expected figures are katalyst-core's own published
test cases (pkg/agent/sysadvisor/plugin/overcommitmentaware/realtime/realtime_test.go:
16 cores, 32 GiB, two pods, Katalyst's code defaults CPU 0.6/0.4 and memory 0.8/0.8)."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from koordlet.reporter.katalyst_metrics import MetricNamesError, parse_metric_names
from koordlet.reporter.overcommit import (
    ANNOTATION_KEYS,
    KATALYST_CODE_MEMORY,
    SEED_CPU,
    SEED_MEMORY,
    LoadTargets,
    NodeLoad,
    advise,
    overcommit_ratio,
)
from koordlet.reporter.overcommit_load import node_load
from tests.koordlet.reporter.fixtures import GI, NOW, pod, pod_samples, store

ALLOC_CPU = 16_000  # milli
ALLOC_MEMORY = 32 * GI


def ratios(request_cpu, usage_cpu, request_memory, usage_memory):
    return (overcommit_ratio(ALLOC_CPU, request_cpu, usage_cpu, SEED_CPU),
            overcommit_ratio(ALLOC_MEMORY, request_memory, usage_memory, KATALYST_CODE_MEMORY))


def test_katalyst_low_usage_case():
    # two pods requesting 2 cores / 4 GiB each, each using 0.5 core / 1 GiB
    cpu, memory = ratios(4000, 1000, 8 * GI, 2 * GI)
    assert cpu == pytest.approx(1.6, abs=0.01)
    assert memory == pytest.approx(1.17, abs=0.01)


def test_katalyst_no_metrics_case():
    cpu, memory = ratios(4000, 0, 8 * GI, 0)
    assert cpu == pytest.approx(1.75, abs=0.01)
    assert memory == pytest.approx(1.25, abs=0.01)


def test_katalyst_high_usage_case_floors_at_one():
    # two pods requesting 4 cores / 8 GiB each, using 3+2 cores and 7+6 GiB
    assert ratios(8000, 5000, 16 * GI, 13 * GI) == (1.0, 1.0)


def test_ratio_falls_to_one_when_a_busy_pod_lands():
    """The seed's worked example shape: a quiet node offers room; once a busy pod lands
    (it uses all it asked for) the offer is withdrawn."""
    quiet = overcommit_ratio(ALLOC_CPU, 4000, 1000, SEED_CPU)
    busy = overcommit_ratio(ALLOC_CPU, 4000 + 4000, 1000 + 4000, SEED_CPU)
    assert quiet > 1.5
    assert "%.2f" % busy == "1.00"


@pytest.mark.parametrize("allocatable, requested, usage", [
    (0, 4000, 1000),                  # zero allocatable
    (ALLOC_CPU, 0, 1000),             # zero requests (Katalyst's "no request" case)
    (-5, 4000, 1000),
    (ALLOC_CPU, 4000, float("nan")),  # NaN usage: Katalyst would publish NaN
    (float("nan"), 4000, 1000),
    (ALLOC_CPU, float("nan"), 1000),
    (ALLOC_CPU, 4000, float("inf")),
    (1e-300, 1e300, 0),               # finite inputs whose ratio overflows
])
def test_undefined_inputs_give_one(allocatable, requested, usage):
    assert overcommit_ratio(allocatable, requested, usage, SEED_CPU) == 1.0


def test_negative_usage_counts_as_zero():
    assert overcommit_ratio(ALLOC_CPU, 4000, -300, SEED_CPU) == overcommit_ratio(ALLOC_CPU, 4000, 0, SEED_CPU)


@given(st.floats(allow_nan=True, allow_infinity=True), st.floats(allow_nan=True, allow_infinity=True),
       st.floats(allow_nan=True, allow_infinity=True),
       st.floats(min_value=0.01, max_value=1), st.floats(min_value=0.01, max_value=1))
def test_ratio_is_always_finite_and_at_least_one(allocatable, requested, usage, target, estimated):
    ratio = overcommit_ratio(allocatable, requested, usage, LoadTargets(target, estimated))
    assert math.isfinite(ratio) and ratio >= 1.0


def test_targets_outside_zero_to_one_are_refused():
    with pytest.raises(ValueError):
        LoadTargets(1.5, 0.4)
    with pytest.raises(ValueError):
        LoadTargets(0.6, 0)


def test_seed_defaults_differ_from_katalyst_code_only_for_memory():
    assert (SEED_CPU.target_load, SEED_CPU.estimated_pod_load) == (0.6, 0.4)
    assert (SEED_MEMORY.target_load, SEED_MEMORY.estimated_pod_load) == (0.6, 0.6)
    assert (KATALYST_CODE_MEMORY.target_load, KATALYST_CODE_MEMORY.estimated_pod_load) == (0.8, 0.8)


LOW = NodeLoad(ALLOC_CPU, ALLOC_MEMORY, 4000, 8 * GI, 1000, 2 * GI)


def test_annotations_carry_every_kcnr_key_formatted_like_katalyst():
    result = advise(LOW, SEED_CPU, KATALYST_CODE_MEMORY, {}, 4, "static", "Static")
    annotations = result.annotations()
    assert tuple(sorted(annotations)) == tuple(sorted(ANNOTATION_KEYS))
    assert annotations["katalyst.kubewharf.io/cpu_overcommit_ratio"] == "1.59"  # Katalyst's 1.6 case, %.2f
    assert annotations["katalyst.kubewharf.io/memory_overcommit_ratio"] == "1.17"
    assert annotations["katalyst.kubewharf.io/guaranteed_cpus"] == "4"
    assert annotations["katalyst.kubewharf.io/overcommit_cpu_manager"] == "static"
    assert annotations["katalyst.kubewharf.io/overcommit_memory_manager"] == "Static"


def test_guaranteed_cpus_read_zero_when_the_cpu_manager_is_off():
    assert advise(LOW, SEED_CPU, SEED_MEMORY, {}, 4, "none", "None").annotations()[
        "katalyst.kubewharf.io/guaranteed_cpus"] == "0"


@pytest.mark.parametrize("configured, expected", [("1.2", "1.20"), ("10", "1.59"), ("0.5", "1.00"),
                                                  ("not-a-number", "1.59")])
def test_a_ratio_configured_on_the_node_caps_the_realtime_one(configured, expected):
    node = {"katalyst.kubewharf.io/cpu_overcommit_ratio": configured}
    result = advise(LOW, SEED_CPU, SEED_MEMORY, node, 0, "none", "None")
    assert result.annotations()["katalyst.kubewharf.io/cpu_overcommit_ratio"] == expected


def test_load_is_gathered_through_the_metric_cache_like_katalyst_low_usage():
    cache = store()
    pods = [pod("pod1", cpu_request=2000, memory_request=4 * GI), pod("pod2", cpu_request=2000, memory_request=4 * GI)]
    for p in pods:
        cache.append(pod_samples(p, 0.5, 1 * GI, seconds=10))
    load = node_load(cache, pods, ALLOC_CPU, ALLOC_MEMORY, ("cpu.usage.container", "load.1min.container"),
                     ("mem.usage.container",), NOW - 10, NOW)
    assert (load.request_milli_cpu, load.request_memory) == (4000, 8 * GI)
    assert load.usage_milli_cpu == pytest.approx(1000)
    assert load.usage_memory == pytest.approx(2 * GI)
    result = advise(load, SEED_CPU, KATALYST_CODE_MEMORY, {}, 0, "none", "None")
    assert result.cpu_ratio == pytest.approx(1.6, abs=0.01)
    assert result.memory_ratio == pytest.approx(1.17, abs=0.01)


def test_pods_without_samples_count_no_usage_like_katalyst_no_metrics():
    pods = [pod("pod1", cpu_request=2000, memory_request=4 * GI), pod("pod2", cpu_request=2000, memory_request=4 * GI)]
    load = node_load(store(), pods, ALLOC_CPU, ALLOC_MEMORY, ("cpu.usage.container",), ("mem.usage.container",),
                     NOW - 10, NOW)
    result = advise(load, SEED_CPU, KATALYST_CODE_MEMORY, {}, 0, "none", "None")
    assert (round(result.cpu_ratio, 2), round(result.memory_ratio, 2)) == (1.75, 1.25)


def test_metric_lists_name_known_metrics_and_at_least_one_collected():
    assert parse_metric_names("cpu.usage.container,load.1min.container",
                              ("cpu.usage.container", "load.1min.container")) == (
        "cpu.usage.container", "load.1min.container")
    with pytest.raises(MetricNamesError, match="not one of"):
        parse_metric_names("cpu.bogus", ("cpu.usage.container",))
    with pytest.raises(MetricNamesError, match="collected"):
        parse_metric_names("mem.rss.container", ("mem.usage.container", "mem.rss.container"))
    with pytest.raises(MetricNamesError, match="empty"):
        parse_metric_names(" , ", ("cpu.usage.container",))


def test_load_over_many_steps_sums_each_pods_containers_as_their_own_means_do():
    """60 pods of two containers (three steps of the stepped read): a container with no
    sample in the window counts nothing, one with samples partly outside it counts the
    mean of those inside; the totals equal a sum of the cache's own per-series means."""
    import dataclasses

    from koordlet.metriccache.api import Metric, NotEnoughData, SeriesKey
    from tests.koordlet.reporter.fixtures import series

    cache = store()
    pods = []
    for i in range(60):
        base = pod("p%02d" % i, cpu_request=100, memory_request=GI)
        second = dataclasses.replace(base.containers[0], id="ctr2-p%02d" % i, name="side")
        pods.append(dataclasses.replace(base, containers=(base.containers[0], second)))
    for i, p in enumerate(pods):
        for c, container in enumerate(p.containers):
            if (i + c) % 7 == 0:
                continue  # no sample at all
            seconds = 20 if i % 3 else 5  # some reach back before the window
            cache.append(series(SeriesKey.of(Metric.CONTAINER_CPU_USAGE_CORES, p.uid, container.id),
                                [0.01 * i + 0.003 * c + 0.001 * t for t in range(seconds)]))
            cache.append(series(SeriesKey.of(Metric.CONTAINER_MEMORY_USAGE_BYTES, p.uid, container.id),
                                [float(i * GI // 64 + c * 4096 + t) for t in range(seconds)]))
    start, end = NOW - 10, NOW

    def reference(metric):
        total = 0.0
        for p in pods:
            pod_total = 0.0
            for container in p.containers:
                try:
                    pod_total += cache.mean(SeriesKey.of(metric, p.uid, container.id), start, end, min_coverage=0.0).avg
                except NotEnoughData:
                    pass
            total += max(pod_total, 0.0)
        return total

    load = node_load(cache, pods, ALLOC_CPU, ALLOC_MEMORY, ("cpu.usage.container",), ("mem.usage.container",),
                     start, end)
    assert load.request_milli_cpu == 60 * 2 * 100 and load.request_memory == 60 * 2 * GI
    assert load.usage_milli_cpu == reference(Metric.CONTAINER_CPU_USAGE_CORES) * 1000
    assert load.usage_memory == reference(Metric.CONTAINER_MEMORY_USAGE_BYTES)
    assert load.usage_milli_cpu > 0 and load.usage_memory > 0


def test_usage_keys_follow_a_changed_pod_and_forget_a_gone_one():
    import dataclasses

    from koordlet.metriccache.api import Metric, SeriesKey
    from koordlet.reporter.overcommit_load import UsageKeys

    keys = UsageKeys(("cpu.usage.container", "load.1min.container"), ("mem.usage.container",), store().shared_key)
    a, b = pod("a"), pod("b")
    cpu, memory = keys.of(a)
    # kept a pod as tuples (one block each, smaller than a list): a list is never equal to them
    assert cpu == ((SeriesKey.of(Metric.CONTAINER_CPU_USAGE_CORES, a.uid, a.containers[0].id),),)
    assert memory == ((SeriesKey.of(Metric.CONTAINER_MEMORY_USAGE_BYTES, a.uid, a.containers[0].id),),)
    assert keys.of(a)[0] is cpu  # the same pod: kept
    side = dataclasses.replace(a.containers[0], id="ctr-side", name="side")
    grown = dataclasses.replace(a, containers=(a.containers[0], side))
    assert keys.of(grown)[0] == ((cpu[0][0], SeriesKey.of(Metric.CONTAINER_CPU_USAGE_CORES, a.uid, "ctr-side")),)
    keys.of(b)
    assert len(keys) == 2
    keys.keep_only([b])
    assert len(keys) == 1 and keys.of(b)[0] == ((SeriesKey.of(Metric.CONTAINER_CPU_USAGE_CORES, b.uid, "ctr-b"),),)


def test_usage_keys_are_the_caches_own_objects():
    from koordlet.metriccache.api import Metric
    from koordlet.reporter.overcommit_load import UsageKeys

    cache, a = store(), pod("a")
    cache.append(pod_samples(a, 0.5, GI, seconds=5))
    cpu, memory = UsageKeys(("cpu.usage.container",), ("mem.usage.container",), cache.shared_key).of(a)
    [written_cpu] = cache.keys(Metric.CONTAINER_CPU_USAGE_CORES)
    [written_memory] = cache.keys(Metric.CONTAINER_MEMORY_USAGE_BYTES)
    assert cpu[0][0] is written_cpu and memory[0][0] is written_memory
