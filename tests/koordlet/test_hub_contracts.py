"""The hub contracts agents share: quantities, the pod model, the static informer, series keys."""

from __future__ import annotations

import pytest

from koordlet.apis.qos import KoordQoSClass, PodQoS
from koordlet.apis.quantity import QuantityError, base_units, milli_cpu, parse_quantity
from koordlet.metriccache import Aggregate, AggregationType, Metric, SeriesKey
from koordlet.statesinformer import (
    ContainerInfo,
    ContainerState,
    NodeInfo,
    PodEventKind,
    PodInfo,
    SandboxState,
    StaticStates,
)


# Values as Kubernetes' resource.Quantity reports them (apimachinery docs and kubectl).
@pytest.mark.parametrize("text, milli", [("100m", 100), ("0.5", 500), ("2", 2000), ("1n", 1), ("1.0001", 1001)])
def test_milli_cpu(text, milli):
    assert milli_cpu(text) == milli


@pytest.mark.parametrize("text, value", [
    ("1Gi", 1073741824), ("128974848", 128974848), ("129e6", 129000000), ("123Mi", 128974848),
    ("1k", 1000), ("1Ki", 1024), ("0", 0),
])
def test_base_units(text, value):
    assert base_units(text) == value


@pytest.mark.parametrize("text", ["", "1.2.3", "10 Gi", "Gi", "1gi", "1e", "--1", "1KiB"])
def test_bad_quantities_are_errors(text):
    with pytest.raises(QuantityError):
        parse_quantity(text)


def pod(uid: str, qos: KoordQoSClass = KoordQoSClass.LS) -> PodInfo:
    container = ContainerInfo("c-" + uid, "app", uid, ContainerState.RUNNING, f"kubepods/pod{uid}/c-{uid}")
    return PodInfo(uid, "p-" + uid, "default", "s-" + uid, SandboxState.READY, f"kubepods/pod{uid}",
                   PodQoS(qos, koord=qos), containers=(container,))


def test_static_states_emits_add_update_delete_with_the_previous_pod():
    states = StaticStates(NodeInfo("node-a"))
    events = []
    unsubscribe = states.subscribe(events.append)
    first, second = pod("u1"), pod("u1", KoordQoSClass.BE)
    states.put(first)
    states.put(second)
    states.remove("u1")
    states.remove("u1")  # unknown now: no event
    unsubscribe()
    states.put(first)
    assert [(e.kind, e.pod.qos.effective, e.previous) for e in events] == [
        (PodEventKind.ADDED, KoordQoSClass.LS, None),
        (PodEventKind.UPDATED, KoordQoSClass.BE, first),
        (PodEventKind.DELETED, KoordQoSClass.BE, None),
    ]
    assert states.pods() == (first,)


def test_pod_finds_containers_by_name_and_id():
    p = pod("u2")
    assert p.container("app") is p.containers[0] and p.container_by_id("c-u2") is p.containers[0]
    assert p.container("sidecar") is None and p.container_by_id("nope") is None


def test_series_keys_sort_labels_so_equal_series_compare_equal():
    a = SeriesKey.of(Metric.NODE_PSI, resource="cpu", kind="some")
    b = SeriesKey.of("node_psi", kind="some", resource="cpu")
    assert a == b and hash(a) == hash(b)


def test_aggregate_get_reads_each_kind():
    agg = Aggregate(count=4, avg=2.0, p50=1.5, p90=3.0, p95=3.5, p99=3.9, last=4.0,
                    first_timestamp=1.0, last_timestamp=4.0)
    assert [agg.get(kind) for kind in AggregationType] == [2.0, 1.5, 3.0, 3.5, 3.9, 4.0, 4.0]
