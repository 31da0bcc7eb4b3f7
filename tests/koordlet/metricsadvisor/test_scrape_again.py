"""A scrape is byte for byte what an exporter that never scraped before writes for the same
state, whatever changed since its last scrape: values (the same, spelled otherwise, non-finite,
stale, fresh again), pods that come and go (the walk skipped while the informer hands the
same pods() snapshot)."""

from __future__ import annotations

import pytest

from koordlet.metriccache.api import Metric, Sample, SeriesKey
from koordlet.metriccache.store import MetricStore
from koordlet.metricsadvisor.exporter import AdvisorExporter
from koordlet.statesinformer.api import StaticStates
from koordlet.statesinformer.model import NodeInfo
from tests.koordlet.metricsadvisor.fixtures import make_pod

NOW = 1_700_000_000.0
STALE_AFTER = 150.0
NAN, INF = float("nan"), float("inf")
_POD = (Metric.POD_CPU_USAGE_CORES, Metric.POD_MEMORY_USAGE_BYTES, Metric.POD_CPU_THROTTLED_RATIO)
_CTR = (Metric.CONTAINER_CPU_USAGE_CORES, Metric.CONTAINER_MEMORY_USAGE_BYTES, Metric.CONTAINER_CPU_THROTTLED_RATIO)

# each step: the value of every (pod, metric) written this round; None: not written (its
# last sample ages until it is stale)
_STEPS: list[dict[int, tuple[float | None, float | None, float | None]]] = [
    {0: (0.5, 4096.0, 0.0), 1: (0.0, 0.0, 0.0), 2: (1.0, 1.0, 1.0)},
    {0: (0.5, 4096.0, 0.0), 1: (0.0, 0.0, 0.0), 2: (1.0, 1.0, 1.0)},  # nothing changed
    {0: (0.75, 4096.0, 0.0), 1: (0.0, 0.0, 0.0), 2: (1.0, 1.0, 1.0)},  # one value changed
    {0: (0.75, 4096.0, -0.0), 1: (-0.0, 0.0, 0.0), 2: (1.0, 1.0, 1.0)},  # equal, spelled otherwise
    {0: (0.75, 4096.0, 0.0), 1: (0.0, 0.0, 0.0), 2: (1.0, 1.0, 1.0)},  # and back
    {0: (NAN, INF, -INF), 1: (NAN, 0.0, 0.0), 2: (1.0, 1.0, 1.0)},  # non-finite
    {0: (NAN, INF, -INF), 1: (NAN, 0.0, 0.0), 2: (1.0, 1.0, 1.0)},  # NaN again (NaN != NaN)
    {0: (1e21, 1e-7, 3.0), 1: (None, 0.0, 0.0), 2: (1.0, 1.0, 1.0)},  # pod 1's cpu stops being written
    {0: (1e21, 1e-7, 3.0), 1: (None, 0.0, 0.0), 2: (1.0, 1.0, 1.0)},  # ... and is stale (see _clock)
    {0: (1e21, 1e-7, 3.0), 1: (None, 0.0, 0.0), 2: (1.0, 1.0, 1.0)},
    {0: (1e21, 1e-7, 3.0), 1: (0.25, 0.0, 0.0), 2: (1.0, 1.0, 1.0)},  # fresh again
    {0: (1e21, 1e-7, 3.0), 1: (0.25, 0.0, 0.0), 2: (1.0, 1.0, 1.0)},
]


def _round_time(step: int) -> float:
    # step 8 is STALE_AFTER past step 7: the one series not written since is stale from then on
    return NOW + step + (STALE_AFTER if step >= 8 else 0.0)


def _exporter(store: MetricStore, states: StaticStates, clock: list[float], container_series: bool) -> AdvisorExporter:
    return AdvisorExporter(store, states, "node-a", clock=lambda: clock[0], stale_after=STALE_AFTER,
                           container_series=container_series)


def _scrape(exporter: AdvisorExporter, openmetrics: bool = False) -> bytes:
    return b"".join(exporter.render_parts(openmetrics, True, True))


@pytest.mark.parametrize("container_series", [False, True])
def test_each_scrape_equals_a_fresh_exporters_as_values_change(container_series: bool) -> None:
    pods = [make_pod("u%d" % i) for i in range(3)]
    store, states, clock = MetricStore(), StaticStates(NodeInfo("node-a"), pods), [NOW]
    kept = _exporter(store, states, clock, container_series)
    for step, values in enumerate(_STEPS):
        t = clock[0] = _round_time(step)
        samples = []
        for i, pod_values in values.items():
            uid = pods[i].uid
            samples += [Sample(SeriesKey.of(m, uid), t, v) for m, v in zip(_POD, pod_values) if v is not None]
            for ctr in pods[i].containers:
                samples += [Sample(SeriesKey.of(m, uid, ctr.id), t, v * 2) for m, v in zip(_CTR, pod_values)
                            if v is not None]
        store.append(samples)
        got = _scrape(kept)
        assert got == _scrape(_exporter(store, states, clock, container_series)), "step %d" % step
        if step in (3, 4):  # the zero's sign is what was written, not the last scrape's
            zero = "-0.0" if step == 3 else "0.0"
            assert ('koordlet_pod_cpu_throttled_ratio{node="node-a",pod_uid="u0"' in got.decode()
                    and got.decode().count("} %s\n" % zero) >= 2)
        if step == 8:
            assert b'koordlet_pod_used_cpu_cores{node="node-a",pod_uid="u1"' not in got
        if step == 10:
            assert b'koordlet_pod_used_cpu_cores{node="node-a",pod_uid="u1",' in got


def test_pods_that_come_and_go_and_series_made_or_dropped_write_what_a_fresh_exporter_does() -> None:
    pods = [make_pod("u%d" % i) for i in range(4)]
    store, clock = MetricStore(), [NOW]
    states = StaticStates(NodeInfo("node-a"), pods[:2])
    kept = _exporter(store, states, clock, False)

    def write(step: int, uids: list[str], value: float) -> None:
        t = clock[0] = NOW + step
        store.append([Sample(SeriesKey.of(m, uid), t, value) for uid in uids for m in _POD])

    write(0, ["u0", "u1"], 1.0)
    first = _scrape(kept)
    states.put(pods[2])  # a new pod: its series made after the scrape
    write(1, ["u0", "u1", "u2"], 1.0)
    second = _scrape(kept)
    assert second != first and b'pod_uid="u2"' in second
    assert second == _scrape(_exporter(store, states, clock, False))
    states.remove("u0")
    store.forget_pod("u0")
    write(2, ["u1", "u2"], 1.0)
    third = _scrape(kept)
    assert b'pod_uid="u0"' not in third
    assert third == _scrape(_exporter(store, states, clock, False))
    states.put(pods[3])  # listed, but no series yet: no usage lines
    write(3, ["u1", "u2"], 2.0)
    fourth = _scrape(kept)
    assert b'koordlet_pod_used_cpu_cores{node="node-a",pod_uid="u3"' not in fourth
    assert fourth == _scrape(_exporter(store, states, clock, False))
    for openmetrics in (False, True):
        assert _scrape(kept, openmetrics) == _scrape(_exporter(store, states, clock, False), openmetrics)
