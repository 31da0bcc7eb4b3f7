"""The advisor's exposition for a fixed sequence of states and scrapes is the one the
exporter gave before its render was made cheaper (data/exposition_before.txt.gz, written by the
exporter at s24 9c18728): byte for byte, and as prometheus_client's parser reads it.

The sequence covers what the render caches or reads in bulk: pods replaced, added and
removed between scrapes, stale, missing, non-finite and changing values, PSI rounds that
change for some objects only, CPI appearing, label values that need escaping or hold a
"%", both formats, each part alone and both, at both levels."""

from __future__ import annotations

import dataclasses
import gzip
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from koordlet.apis.keys import BATCH_CPU, BATCH_MEMORY
from koordlet.apis.qos import KoordQoSClass, PodQoS
from koordlet.metriccache.api import Metric, Sample, SeriesKey
from koordlet.metriccache.store import MetricStore
from koordlet.metricsadvisor.exporter import AdvisorExporter
from koordlet.statesinformer.api import StaticStates
from koordlet.statesinformer.model import ContainerInfo, ContainerState, NodeInfo, PodInfo, Resources, SandboxState

BEFORE = Path(__file__).with_name("data") / "exposition_before.txt.gz"
NOW = 1_700_000_000.0
_SEPARATOR = "=== scrape %d: %s\n"
SCRAPES = 2 * 5 * 4  # levels x steps x (text: both parts, each alone; OpenMetrics: both)


def _pod(i: int, name: str | None = None) -> PodInfo:
    uid = "uid-%d" % i
    names = (BATCH_CPU, BATCH_MEMORY) if i % 2 else ("cpu", "memory")
    spec = Resources({names[0]: 250 * (i + 1), names[1]: (i + 1) << 20}, {names[0]: 1000, "nvidia.com/gpu": 1})
    states = (ContainerState.RUNNING, ContainerState.RUNNING if i != 2 else ContainerState.EXITED)
    ctrs = tuple(ContainerInfo("c%d-%s" % (k, uid), "app%d" % k, uid, state, "kubepods/pod%s/c%d" % (uid, k),
                               spec=spec if k == 0 else None) for k, state in enumerate(states))
    return PodInfo(uid, name or 'pod-%d "q" 100%%r \\ %d' % (i, i), "ns-%d" % (i % 2), "sb-%d" % i,
                   SandboxState.READY, "kubepods/pod" + uid, PodQoS(KoordQoSClass.LS, koord=KoordQoSClass.LS),
                   containers=ctrs)


def _samples(pods: list[PodInfo], t: float, scale: float) -> list[Sample]:
    out = [Sample(SeriesKey.of(Metric.NODE_CPU_USAGE_CORES), t, 3.5 * scale),
           Sample(SeriesKey.of(Metric.NODE_NETWORK_BYTES_PER_SECOND, interface="eth0", direction="tx"), t, 12.0)]
    for i, pod in enumerate(pods):
        values = (0.1 * (i + 1) * scale, float(i << 20), float("nan") if i == 1 else 0.0)
        out += [Sample(SeriesKey.of(m, pod.uid), t, v) for m, v in zip(
            (Metric.POD_CPU_USAGE_CORES, Metric.POD_MEMORY_USAGE_BYTES, Metric.POD_CPU_THROTTLED_RATIO), values)
            if not (i == 3 and m is Metric.POD_MEMORY_USAGE_BYTES)]  # a series never written
        for k, ctr in enumerate(pod.containers):
            out += [Sample(SeriesKey.of(Metric.CONTAINER_CPU_USAGE_CORES, pod.uid, ctr.id), t,
                           float("inf") if i == 4 else 0.05 * (k + 1) * scale),
                    Sample(SeriesKey.of(Metric.CONTAINER_MEMORY_USAGE_BYTES, pod.uid, ctr.id), t, 1e21)]
    return out


def _psi(pods: list[PodInfo], round_: int) -> dict:
    def readings(scale: float, full: bool) -> dict:
        averages = (1.5 * scale, 0.25 * scale, 0.0)
        return {"cpu": (averages, averages if full else None), "memory": (averages, averages), "io": (averages, None)}

    snapshot = {("", ""): readings(1.0 + round_, True)}
    for i, pod in enumerate(pods):
        busy = (1.0 + round_) if i % 2 == 0 else 0.0  # odd pods idle: the same averages every round
        if i != 5:  # a pod whose cgroup gave no PSI
            snapshot[(pod.uid, "")] = readings(busy, i % 3 == 0)
        snapshot.update({(pod.uid, c.id): readings(busy, False) for c in pod.containers})
    return snapshot


def scrapes() -> list[tuple[str, bytes]]:
    """(what was scraped, the body) for the whole sequence, at both levels."""
    return _level_scrapes(False) + _level_scrapes(True)


def _level_scrapes(container_series: bool) -> list[tuple[str, bytes]]:
    out = []
    precisions = ("avg10", "avg60", "avg300") if container_series else ("avg10",)
    pods = [_pod(i) for i in range(7)]
    store, states = MetricStore(), StaticStates(NodeInfo('node "a"'), pods)
    now, rounds = [NOW], [_psi(pods, 0)]
    exporter = AdvisorExporter(store, states, 'node "a"', clock=lambda: now[0] + 1, psi=lambda: rounds[-1],
                               container_series=container_series, psi_precisions=precisions)
    store.append([s for s in _samples(pods, NOW - 600, 1.0) if s.key.pod_uid == "uid-6"])  # stale pod
    store.append([s for s in _samples(pods, NOW, 1.0) if s.key.pod_uid != "uid-6"])

    def scrape(step: str) -> None:
        for openmetrics, internal, external in ((False, True, True), (False, True, False), (False, False, True),
                                                (True, True, True)):
            what = "series=%s %s om=%s internal=%s external=%s" % (
                container_series, step, openmetrics, internal, external)
            out.append((what, b"".join(exporter.render_parts(openmetrics, internal, external))))

    scrape("first")
    scrape("nothing changed")
    now[0] += 10
    store.append([s for s in _samples(pods, now[0], 2.0) if s.key.pod_uid != "uid-6"])
    rounds.append(_psi(pods, 1))
    scrape("new values and PSI round")
    states.put(dataclasses.replace(pods[0], name="renamed"))
    states.remove(pods[3].uid)
    store.forget_pod(pods[3].uid)
    added = _pod(9)
    states.put(added)
    store.append(_samples([added], now[0], 1.0))
    cid = pods[1].containers[0].id
    store.append([Sample(SeriesKey.of(Metric.CONTAINER_CPU_CYCLES, pods[1].uid, cid), now[0], 3000.0),
                  Sample(SeriesKey.of(Metric.CONTAINER_INSTRUCTIONS, pods[1].uid, cid), now[0], 1000.0)])
    scrape("pods renamed, removed, added; CPI")
    now[0] += 200  # every sample stale now
    rounds.append({})
    scrape("all stale, no PSI")
    return out


def _render_file() -> str:
    return "".join(_SEPARATOR % (k, what) + body.decode() for k, (what, body) in enumerate(scrapes()))


def _split(text: str) -> list[str]:
    return [part for k, part in enumerate(text.split("=== scrape ")) if k]


@pytest.mark.parametrize("index", range(SCRAPES))
def test_each_scrape_reads_as_before(index: int) -> None:
    before, now = _split(gzip.decompress(BEFORE.read_bytes()).decode()), _split(_render_file())
    assert len(before) == len(now) == SCRAPES
    head, _, body_before = before[index].partition("\n")
    head_now, _, body_now = now[index].partition("\n")
    assert head == head_now
    openmetrics = "om=True" in head
    if not openmetrics:  # prometheus_client's text parser reads the text format
        parsed_before = [(f.name, f.type, f.documentation, f.samples)
                         for f in text_string_to_metric_families(body_before)]
        parsed_now = [(f.name, f.type, f.documentation, f.samples) for f in text_string_to_metric_families(body_now)]
        assert _nan_as_text(parsed_now) == _nan_as_text(parsed_before)
    assert body_now == body_before


def _nan_as_text(families: list) -> str:
    return repr(families)  # NaN != NaN: compare the spelled-out form


if __name__ == "__main__":  # writes the file; only ever with the exporter the file is said to come from
    BEFORE.parent.mkdir(exist_ok=True)
    BEFORE.write_bytes(gzip.compress(_render_file().encode(), 9, mtime=0))
