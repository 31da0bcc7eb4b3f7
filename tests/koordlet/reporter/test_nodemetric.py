"""The NodeMetric status from synthetic series through the real metric cache, validated
against the published CRD. Percentiles follow koordlet's nearest-rank rule and the
cold-start rule (samples must span half the window), both of koordlet's metric cache."""

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from koordlet.apis.qos import KoordQoSClass, PriorityBand
from koordlet.metriccache.api import Metric
from koordlet.reporter.nodemetric import PodRows, node_metric_object, status_document, take_snapshot
from koordlet.reporter.policy import MetricCollectPolicy, PolicyError, policy_from_spec
from tests.koordlet.reporter.fixtures import (
    GI,
    NOW,
    crd_schema,
    node_samples,
    pod,
    pod_samples,
    status_validator,
    store,
)
from tests.stepping import driven

POLICY = MetricCollectPolicy()


def thirty_minutes_busy_at_the_end():
    """1 s samples: ~25 min at 1 core / 2 GiB, then the last 5 min at 3 cores / 6 GiB. Windows
    include both ends, so the last 5 min hold 301 samples."""
    return node_samples([1.0] * 1499 + [3.0] * 301, [2 * GI] * 1499 + [6 * GI] * 301)


def aggregated(status):
    return {entry["duration"]: entry["usage"] for entry in status["nodeMetric"].get("aggregatedNodeUsages", [])}


def test_percentiles_per_window_from_thirty_minutes_of_samples():
    cache = store()
    cache.append(thirty_minutes_busy_at_the_end())
    status = status_document(take_snapshot(cache, [], POLICY, NOW))
    windows = aggregated(status)
    assert list(windows) == ["5m0s", "10m0s", "30m0s"]
    # the last 5 minutes are all busy: every percentile is the busy level
    assert {kind: windows["5m0s"][kind]["resources"] for kind in ("p50", "p99")} == {
        "p50": {"cpu": "3", "memory": "6Gi"}, "p99": {"cpu": "3", "memory": "6Gi"}}
    # 10 minutes: half quiet, half busy -> p90 busy
    assert windows["10m0s"]["p90"]["resources"] == {"cpu": "3", "memory": "6Gi"}
    # 30 minutes: one sixth busy -> the median is quiet, p90 (past the 5/6 mark) is busy
    assert windows["30m0s"]["p50"]["resources"] == {"cpu": "1", "memory": "2Gi"}
    assert windows["30m0s"]["p90"]["resources"] == {"cpu": "3", "memory": "6Gi"}
    # nodeUsage is the 300 s average: all busy
    assert status["nodeMetric"]["nodeUsage"]["resources"] == {"cpu": "3", "memory": "6Gi"}


def test_cold_start_leaves_out_windows_not_half_covered():
    cache = store()
    cache.append(node_samples([2.0] * 200, [GI] * 200))  # 199 s of samples
    status = status_document(take_snapshot(cache, [], POLICY, NOW))
    # 199 s covers half of 5 min (150 s) but not of 10 min (300 s) nor 30 min (900 s)
    assert list(aggregated(status)) == ["5m0s"]
    assert status["nodeMetric"]["nodeUsage"]["resources"] == {"cpu": "2", "memory": "1Gi"}


def test_just_after_start_no_percentile_is_reported_but_the_average_is():
    cache = store()
    cache.append(node_samples([2.0] * 60, [GI] * 60))
    status = status_document(take_snapshot(cache, [], POLICY, NOW))
    assert "aggregatedNodeUsages" not in status["nodeMetric"]
    assert status["nodeMetric"]["nodeUsage"]["resources"]["cpu"] == "2"


def test_nothing_collected_means_no_report():
    assert take_snapshot(store(), [], POLICY, NOW) is None


def test_samples_older_than_the_window_do_not_count():
    cache = store()
    cache.append(node_samples([5.0] * 100, [GI] * 100, end=NOW - 1000))
    assert take_snapshot(cache, [], POLICY, NOW) is None


def mixed_pods():
    return {
        "web": pod("web", KoordQoSClass.LS, PriorityBand.PROD, 2000, 4 * GI),
        "db": pod("db", KoordQoSClass.LSR, PriorityBand.NONE, 2000, 4 * GI),  # no class: prod by QoS
        "spark": pod("spark", KoordQoSClass.BE, PriorityBand.BATCH),
        "crawler": pod("crawler", KoordQoSClass.BE, PriorityBand.NONE),  # no class: batch by QoS
        "midtier": pod("midtier", KoordQoSClass.LS, PriorityBand.MID, 1000, GI),
    }


def cache_with_pods(pods, usage):
    cache = store()
    cache.append(thirty_minutes_busy_at_the_end())
    for name, (cpu, memory) in usage.items():
        cache.append(pod_samples(pods[name], cpu, memory))
    return cache


USAGE = {"web": (0.5, GI), "db": (0.25, 2 * GI), "spark": (1.0, 512 * 1024 ** 2), "crawler": (0.75, GI),
         "midtier": (0.125, 256 * 1024 ** 2)}


def test_prod_usage_sums_only_prod_pods():
    pods = mixed_pods()
    snapshot = take_snapshot(cache_with_pods(pods, USAGE), pods.values(), POLICY, NOW)
    prod = snapshot.usage_of(PriorityBand.PROD)
    assert prod.cpu_cores == pytest.approx(0.75)  # web + db
    assert prod.memory_bytes == pytest.approx(3 * GI)
    batch = snapshot.usage_of(PriorityBand.BATCH)
    assert batch.cpu_cores == pytest.approx(1.75)  # spark + crawler


def test_pods_metric_lists_priority_and_qos_as_koordinator_spells_them():
    pods = mixed_pods()
    status = status_document(take_snapshot(cache_with_pods(pods, USAGE), pods.values(), POLICY, NOW))
    entries = {e["name"]: e for e in status["podsMetric"]}
    assert {name: (e.get("priority"), e.get("qos")) for name, e in entries.items()} == {
        "web": ("koord-prod", "LS"), "db": ("koord-prod", "LSR"), "spark": ("koord-batch", "BE"),
        "crawler": ("koord-batch", "BE"), "midtier": ("koord-mid", "LS")}
    assert entries["spark"]["podUsage"]["resources"] == {"cpu": "1", "memory": "512Mi"}
    assert entries["midtier"]["podUsage"]["resources"] == {"cpu": "125m", "memory": "256Mi"}
    # summing podsMetric by priority, as the load-aware scheduler does, gives Prod alone
    prod_cpu_milli = sum(int(e["podUsage"]["resources"]["cpu"].rstrip("m")) for e in status["podsMetric"]
                         if e.get("priority") == "koord-prod")
    assert prod_cpu_milli == 750


def test_pods_without_usage_are_not_listed():
    pods = mixed_pods()
    status = status_document(take_snapshot(cache_with_pods(pods, {"web": (0.5, GI)}), pods.values(), POLICY, NOW))
    assert [e["name"] for e in status["podsMetric"]] == ["web"]


def test_system_usage_is_node_minus_pods_when_not_collected():
    pods = mixed_pods()
    snapshot = take_snapshot(cache_with_pods(pods, USAGE), pods.values(), POLICY, NOW)
    assert snapshot.system.cpu_cores == pytest.approx(3.0 - 2.625)


def test_prod_reclaimable_is_request_minus_peak_with_margin():
    pods = mixed_pods()
    snapshot = take_snapshot(cache_with_pods(pods, USAGE), pods.values(), POLICY, NOW)
    # web: 2000m - 500m x 1.1 = 1450m; db: 2000m - 250m x 1.1 = 1725m (memory: 4Gi - 1.1 x usage)
    assert snapshot.prod_reclaimable_milli_cpu == 1450 + 1725
    assert snapshot.prod_reclaimable_memory_bytes == (4 * GI - int(1.1 * GI)) + (4 * GI - int(1.1 * 2 * GI))


def test_prod_reclaim_skips_a_pod_without_samples_and_one_in_cold_start():
    """Three Prod pods read in one call: one has no sample, one's samples span a minute of
    the five (cold start: it reclaims nothing, yet its usage is listed), one is covered. The
    covered pod's reclaim must not take the others' peaks or coverage."""
    pods = {"gone": pod("gone", KoordQoSClass.LS, PriorityBand.PROD, 2000, 4 * GI),
            "young": pod("young", KoordQoSClass.LS, PriorityBand.PROD, 2000, 4 * GI),
            "web": pod("web", KoordQoSClass.LS, PriorityBand.PROD, 2000, 4 * GI)}
    cache = store()
    cache.append(thirty_minutes_busy_at_the_end())
    cache.append(pod_samples(pods["young"], 0.1, GI // 2, seconds=60))
    cache.append(pod_samples(pods["web"], 0.5, GI))
    snapshot = take_snapshot(cache, pods.values(), POLICY, NOW)
    assert sorted(p.name for p in snapshot.pods) == ["web", "young"]
    assert snapshot.prod_reclaimable_milli_cpu == 2000 - 550
    assert snapshot.prod_reclaimable_memory_bytes == 4 * GI - int(1.1 * GI)


def test_built_documents_validate_against_the_published_nodemetric_crd():
    schema = crd_schema("slo.koordinator.sh_nodemetrics.yaml")
    pods = mixed_pods()
    status = status_document(take_snapshot(cache_with_pods(pods, USAGE), pods.values(), POLICY, NOW))
    jsonschema.validate(node_metric_object("node-1", POLICY, status), schema)
    jsonschema.validate(status, schema["properties"]["status"])


def test_a_malformed_quantity_would_fail_the_schema_check():
    """The validation above can fail: the CRD's quantity pattern rejects what Go would not print."""
    schema = crd_schema("slo.koordinator.sh_nodemetrics.yaml")
    bad = {"nodeMetric": {"nodeUsage": {"resources": {"cpu": "1.5 cores"}}}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema["properties"]["status"])


def test_policy_from_the_cluster_spec_drives_windows():
    spec = {"metricCollectPolicy": {"aggregateDurationSeconds": 120, "reportIntervalSeconds": 10,
                                    "nodeAggregatePolicy": {"durations": ["1m0s", "2m"]}}}
    policy = policy_from_spec(spec, POLICY)
    assert policy.durations_seconds == (60.0, 120.0)
    assert policy.effective().report_interval_seconds == 30  # koordlet's floor
    cache = store()
    cache.append(thirty_minutes_busy_at_the_end())
    status = status_document(take_snapshot(cache, [], policy, NOW))
    assert list(aggregated(status)) == ["1m0s", "2m0s"]


@pytest.mark.parametrize("spec", [
    {"metricCollectPolicy": "fast"},
    {"metricCollectPolicy": {"aggregateDurationSeconds": -1}},
    {"metricCollectPolicy": {"reportIntervalSeconds": "60"}},
    {"metricCollectPolicy": {"nodeAggregatePolicy": {"durations": ["forever"]}}},
    {"metricCollectPolicy": {"nodeMemoryCollectPolicy": "everything"}},
])
def test_a_malformed_spec_is_refused(spec):
    with pytest.raises(PolicyError):
        policy_from_spec(spec, POLICY)




def test_the_stepped_build_gives_the_same_snapshot_and_yields_between_pod_chunks():
    from koordlet.reporter.nodemetric import snapshot_steps
    from koordlet.util.steps import PODS_PER_STEP

    pods = [pod("p%03d" % i) for i in range(3 * PODS_PER_STEP)]
    cache = store()
    cache.append(thirty_minutes_busy_at_the_end())
    for p in pods:
        cache.append(pod_samples(p, 0.1, GI, seconds=10))
    yields, stepped = driven(snapshot_steps(cache, pods, POLICY, NOW))
    assert yields == 7  # fresh rows: three steps deriving them, one sorting, three reading the cache
    assert stepped == take_snapshot(cache, pods, POLICY, NOW)


def test_requests_of_containers_known_only_from_nri_come_from_cpu_shares():
    from dataclasses import replace

    from koordlet.reporter.nodemetric import pod_requests
    from koordlet.statesinformer.model import LinuxResources

    base = pod("nri-only")
    # kubelet writes shares = request x 1024 / 1000: 512 shares for 500m; 2 shares for no request
    half_core = replace(base.containers[0], spec=None, linux=LinuxResources(cpu_shares=512))
    no_request = replace(base.containers[0], id="ctr-2", spec=None, linux=LinuxResources(cpu_shares=2))
    assert pod_requests(replace(base, containers=(half_core, no_request))) == (500, 0)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(min_value=0, max_value=512), st.floats(min_value=0, max_value=2 ** 42)),
                min_size=1, max_size=40))
def test_any_usage_level_gives_a_status_the_crd_accepts(levels):
    validator = status_validator()
    cache = store()
    cache.append(node_samples([cpu for cpu, _ in levels], [memory for _, memory in levels]))
    web = pod("web", KoordQoSClass.LS, PriorityBand.PROD, 2000, GI)
    cache.append(pod_samples(web, levels[0][0], levels[0][1], seconds=len(levels)))
    validator.validate(status_document(take_snapshot(cache, [web], POLICY, NOW)))


def test_a_pod_with_a_broken_sample_is_left_out_and_the_report_still_built():
    from koordlet.metriccache.api import Metric, Sample, SeriesKey

    pods = mixed_pods()
    cache = cache_with_pods(pods, USAGE)
    cache.append([Sample(SeriesKey.of(Metric.POD_CPU_USAGE_CORES, pods["web"].uid), NOW, float("nan"))])
    status = status_document(take_snapshot(cache, pods.values(), POLICY, NOW))
    assert "web" not in {e["name"] for e in status["podsMetric"]}
    assert len(status["podsMetric"]) == len(pods) - 1


def test_kept_pod_rows_follow_a_changed_pod_and_forget_a_gone_one():
    """Rows kept across reports (as the reports module keeps them) give what fresh ones give:
    a pod handed out anew (its request raised, its class changed) is read anew, and a pod no
    longer listed is dropped."""
    pods = mixed_pods()
    cache = cache_with_pods(pods, USAGE)
    rows = PodRows(cache.shared_key)
    kept = take_snapshot(cache, pods.values(), POLICY, NOW, rows)
    assert kept == take_snapshot(cache, pods.values(), POLICY, NOW)
    assert len(rows) == len(pods)

    pods["web"] = pod("web", KoordQoSClass.LS, PriorityBand.PROD, 3000, 4 * GI)  # +1000m requested
    pods["midtier"] = pod("midtier", KoordQoSClass.LS, PriorityBand.BATCH, 1000, GI)
    del pods["crawler"]
    again = take_snapshot(cache, pods.values(), POLICY, NOW, rows)
    assert again == take_snapshot(cache, pods.values(), POLICY, NOW)
    assert again.prod_reclaimable_milli_cpu == kept.prod_reclaimable_milli_cpu + 1000
    assert {p.name: p.priority for p in again.pods}["midtier"] is PriorityBand.BATCH
    assert len(rows) == len(pods)


def test_kept_pod_rows_hold_the_caches_own_keys():
    pods = mixed_pods()
    cache = cache_with_pods(pods, USAGE)
    rows = PodRows(cache.shared_key)
    take_snapshot(cache, pods.values(), POLICY, NOW, rows)
    written = {key: key for metric in (Metric.POD_CPU_USAGE_CORES, Metric.POD_MEMORY_USAGE_BYTES)
               for key in cache.keys(metric)}
    for info in pods.values():
        row = rows.of(info)
        assert written[row.cpu_key] is row.cpu_key and written[row.memory_key] is row.memory_key


def test_pods_are_listed_by_namespace_and_name_whatever_order_they_come_in():
    pods = [pod("b", namespace="ns-2"), pod("a", namespace="ns-2"), pod("z", namespace="ns-1")]
    cache = cache_with_pods({p.name: p for p in pods}, {"a": (0.5, GI), "b": (0.5, GI), "z": (0.5, GI)})
    status = status_document(take_snapshot(cache, tuple(pods), POLICY, NOW))
    assert [(e["namespace"], e["name"]) for e in status["podsMetric"]] == [("ns-1", "z"), ("ns-2", "a"), ("ns-2", "b")]


def web_cpu(snapshot):
    return next(p.usage.cpu_cores for p in snapshot.pods if p.name == "web")


def test_a_report_of_the_same_pods_tuple_reads_again_and_a_new_tuple_is_planned_anew():
    """Rows and steps kept for the informer's pods() tuple: the same tuple reads the cache
    again (usage moved), a new tuple with a pod changed reads that pod's new request."""
    pods = mixed_pods()
    cache = cache_with_pods(pods, USAGE)
    rows = PodRows(cache.shared_key)
    listing = tuple(pods.values())
    first = take_snapshot(cache, listing, POLICY, NOW, rows)
    cache.append(pod_samples(pods["web"], 1.5, GI, seconds=5, end=NOW + 5))  # web busier since
    second = take_snapshot(cache, listing, POLICY, NOW + 5, rows)
    assert second == take_snapshot(cache, listing, POLICY, NOW + 5)
    assert web_cpu(second) > web_cpu(first)

    pods["web"] = pod("web", KoordQoSClass.LS, PriorityBand.PROD, 3000, 4 * GI)  # +1000m requested
    changed = take_snapshot(cache, tuple(pods.values()), POLICY, NOW + 5, rows)
    assert changed == take_snapshot(cache, tuple(pods.values()), POLICY, NOW + 5)
    assert changed.prod_reclaimable_milli_cpu > second.prod_reclaimable_milli_cpu


def snapshot_of_three_steps_of_entries():
    """2 x ENTRIES_PER_STEP + 1 pods with usage, and their snapshot."""
    from koordlet.reporter.nodemetric import ENTRIES_PER_STEP

    pods = [pod("p%04d" % i) for i in range(2 * ENTRIES_PER_STEP + 1)]
    cache = store()
    cache.append(thirty_minutes_busy_at_the_end())
    for p in pods:
        cache.append(pod_samples(p, 0.1, GI, seconds=10))
    return pods, take_snapshot(cache, pods, POLICY, NOW)


# ------------------------------------------------------------------ against a reference


def reference_status(samples, listing, now, policy=POLICY):
    """The status straight from koordlet's rules over the raw samples (key -> [(ts, value)]):
    each pod's windows cut, averaged one addition after the other, percentiles by sorting;
    no kept rows, no shared spans, no C."""
    from koordlet.metriccache.aggregation import nearest_rank
    from koordlet.metriccache.api import Metric, SeriesKey
    from koordlet.reporter.nodemetric import rfc3339
    from koordlet.reporter.quantities import cpu_quantity, cpu_quantity_from_milli, go_duration, memory_quantity
    from tests.koordlet.metriccache.reference import sequential_mean

    def window(key, start):
        return [(ts, v) for ts, v in samples.get(key, ()) if start <= ts <= now]

    def resources(cpu, memory):
        return {"resources": {"cpu": cpu_quantity(cpu), "memory": memory_quantity(memory)}}

    start = now - policy.aggregate_duration_seconds
    node_cpu = [v for _, v in window(SeriesKey.of(Metric.NODE_CPU_USAGE_CORES), start)]
    node_memory = [v for _, v in window(SeriesKey.of(Metric.NODE_MEMORY_USAGE_BYTES), start)]
    entries, reclaim_cpu, reclaim_memory, pods_cpu, pods_memory = [], 0, 0, 0.0, 0.0
    for info in sorted(listing, key=lambda p: (p.namespace, p.name)):
        cpu = window(SeriesKey.of(Metric.POD_CPU_USAGE_CORES, info.uid), start)
        memory = window(SeriesKey.of(Metric.POD_MEMORY_USAGE_BYTES, info.uid), start)
        if not cpu or not memory:
            continue
        cpu_mean, memory_mean = sequential_mean(v for _, v in cpu), sequential_mean(v for _, v in memory)
        if cpu_mean != cpu_mean or memory_mean != memory_mean:  # a NaN sample: the pod is left out
            continue
        pods_cpu += cpu_mean
        pods_memory += memory_mean
        band = info.qos.band
        if band is PriorityBand.NONE:
            band = {KoordQoSClass.BE: PriorityBand.BATCH, KoordQoSClass.LS: PriorityBand.PROD,
                    KoordQoSClass.LSR: PriorityBand.PROD, KoordQoSClass.LSE: PriorityBand.PROD,
                    KoordQoSClass.SYSTEM: PriorityBand.PROD}.get(info.qos.effective, PriorityBand.NONE)
        entry = {"namespace": info.namespace, "name": info.name, "podUsage": resources(cpu_mean, memory_mean)}
        if band is not PriorityBand.NONE:
            entry["priority"] = band.value
        if info.qos.effective is not KoordQoSClass.NONE:
            entry["qos"] = info.qos.effective.value
        entries.append(entry)
        half = 0.5 * (now - start)
        if band is PriorityBand.PROD and cpu[-1][0] - cpu[0][0] >= half and memory[-1][0] - memory[0][0] >= half:
            request_cpu = sum(c.spec.requests.get("cpu", 0) for c in info.containers)
            request_memory = sum(c.spec.requests.get("memory", 0) for c in info.containers)
            reclaim_cpu += max(request_cpu - int(nearest_rank(sorted(v for _, v in cpu), 950) * 1.1 * 1000), 0)
            reclaim_memory += max(request_memory - int(nearest_rank(sorted(v for _, v in memory), 990) * 1.1), 0)
    node = (sequential_mean(node_cpu), sequential_mean(node_memory))
    aggregated = []
    for duration in policy.durations_seconds:
        cpu = window(SeriesKey.of(Metric.NODE_CPU_USAGE_CORES), now - duration)
        memory = window(SeriesKey.of(Metric.NODE_MEMORY_USAGE_BYTES), now - duration)
        if cpu[-1][0] - cpu[0][0] < 0.5 * duration or memory[-1][0] - memory[0][0] < 0.5 * duration:
            continue
        ordered_cpu, ordered_memory = sorted(v for _, v in cpu), sorted(v for _, v in memory)
        aggregated.append({"usage": {kind: resources(nearest_rank(ordered_cpu, p), nearest_rank(ordered_memory, p))
                                     for kind, p in (("p50", 500), ("p90", 900), ("p95", 950), ("p99", 990))},
                           "duration": go_duration(duration)})
    node_metric = {"nodeUsage": resources(*node),
                   "systemUsage": resources(max(node[0] - pods_cpu, 0.0), max(node[1] - pods_memory, 0.0))}
    if aggregated:
        node_metric["aggregatedNodeUsages"] = aggregated
    return {"updateTime": rfc3339(now), "nodeMetric": node_metric, "podsMetric": entries,
            # whole millicores summed: as cores (reclaim_cpu / 1000) 1013 came back as 1012m
            "prodReclaimableMetric": {"resource": {"resources": {"cpu": cpu_quantity_from_milli(reclaim_cpu),
                                                                 "memory": memory_quantity(reclaim_memory)}}}}


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2 ** 32))
def test_reports_as_pods_come_and_go_equal_a_reference_over_the_raw_samples(seed):
    """Random samples, pods coming, going and changing between reports, series with gaps
    (a pod's round missed, a memory series that starts late), now and then a broken sample:
    each report the daemon's way (rows kept across reports, the same pods() tuple reused
    while nothing changed) gives, to the byte, the reference's document."""
    import json
    import random

    from koordlet.metriccache.api import Metric, SeriesKey
    from koordlet.reporter.nodemetric import node_metric_text_steps
    from koordlet.util.json_text import canonical_json
    from koordlet.util.steps import run_steps

    rng = random.Random(seed)
    classes = [(KoordQoSClass.LS, PriorityBand.PROD), (KoordQoSClass.LS, PriorityBand.NONE),
               (KoordQoSClass.LSR, PriorityBand.NONE), (KoordQoSClass.BE, PriorityBand.BATCH),
               (KoordQoSClass.BE, PriorityBand.NONE), (KoordQoSClass.LS, PriorityBand.MID),
               (KoordQoSClass.NONE, PriorityBand.NONE)]

    def new_pod(number):
        qos, band = rng.choice(classes)
        return pod("p%02d" % number, qos, band, rng.choice((0, 500, 2000)), rng.choice((0, GI, 3 * GI)),
                   namespace=rng.choice(("a", "b", 'ü"\\\u2028')))  # one to escape in JSON

    cache = store()
    samples: dict = {}
    listing = tuple(new_pod(n) for n in range(8))
    born = {info.uid: rng.choice((-600, -120)) for info in listing}  # the round a pod's series start
    late = {info.uid: rng.choice((0, 0, 30, 200)) for info in listing}  # and its memory series after it
    next_number = len(listing)
    rows = PodRows(cache.shared_key)
    node_keys = (SeriesKey.of(Metric.NODE_CPU_USAGE_CORES), SeriesKey.of(Metric.NODE_MEMORY_USAGE_BYTES))
    first = int(NOW) - 600
    reports = 0
    for second in range(first, int(NOW) + 1):
        ts = float(second)
        written = [(node_keys[0], rng.uniform(0, 8)), (node_keys[1], float(rng.randrange(1, 64) * GI))]
        for info in listing:
            if second - int(NOW) < born[info.uid] or rng.random() < 0.15:  # not yet, or a missed round
                continue
            # mostly below the requests, so Prod pods reclaim and their peaks count
            cpu = rng.choice((rng.uniform(0, 0.6), round(rng.uniform(0, 1.5), 3), float("nan") if rng.random() < 0.002 else 0.5))
            written.append((SeriesKey.of(Metric.POD_CPU_USAGE_CORES, info.uid), cpu))
            if second - int(NOW) >= born[info.uid] + late[info.uid]:  # some memory series start late
                written.append((SeriesKey.of(Metric.POD_MEMORY_USAGE_BYTES, info.uid),
                                float(rng.choice((rng.randrange(1 << 30), rng.randrange(1 << 18) * 4096)))))
        cache.append_at(ts, written)
        for key, value in written:
            samples.setdefault(key, []).append((ts, value))
        if (second - first) % 97 == 96 or second == int(NOW):
            snapshot = take_snapshot(cache, listing, POLICY, ts, rows)
            expected = reference_status(samples, listing, ts)
            assert json.dumps(status_document(snapshot)) == json.dumps(expected)
            # the text the route and the file keep: the object's canonical JSON, entries written as text
            assert run_steps(node_metric_text_steps(snapshot, 'node-"ü"', POLICY)) == canonical_json(
                node_metric_object('node-"ü"', POLICY, expected))
            reports += 1
            if rng.random() < 0.7:  # the listing changes: a pod goes, one comes, one changes its class
                kept = [info for info in listing if rng.random() < 0.85]
                kept.append(new_pod(next_number))
                born[kept[-1].uid] = second - int(NOW) + 1
                late[kept[-1].uid] = rng.choice((0, 30))
                next_number += 1
                changed = rng.randrange(len(kept))
                qos, band = rng.choice(classes)
                kept[changed] = pod(kept[changed].name, qos, band, 1000, GI, namespace=kept[changed].namespace)
                born.setdefault(kept[changed].uid, -600)
                late.setdefault(kept[changed].uid, 0)
                listing = tuple(kept)
    assert reports == 7


def test_the_text_is_written_in_steps_of_entries_per_step():
    from koordlet.reporter.nodemetric import node_metric_text_steps
    from koordlet.util.json_text import canonical_json

    _, snapshot = snapshot_of_three_steps_of_entries()
    yields, text = driven(node_metric_text_steps(snapshot, "node-1", POLICY))
    assert yields == 2  # three chunks of entries, a yield between two
    assert text == canonical_json(node_metric_object("node-1", POLICY, status_document(snapshot)))
