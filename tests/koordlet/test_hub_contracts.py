"""The hub contracts agents share: quantities, the pod model, the static informer, series keys."""

from __future__ import annotations

import pytest

from koordlet.apis.qos import KoordQoSClass, PodQoS
from koordlet.apis.quantity import INT64_MAX, QuantityError, base_units, canonical, milli_cpu
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


@pytest.mark.parametrize("text", ["", "1.2.3", "10 Gi", "Gi", "1gi", "1e", "--1", "1KiB", ".", "+", "1e5Ki", "nan", "inf"])
def test_bad_quantities_are_errors(text):
    with pytest.raises(QuantityError):
        base_units(text)
    with pytest.raises(QuantityError):
        milli_cpu(text)


def reference(text: str | int | float, tens: int) -> int:
    """Kubernetes' rounding up of an exact decimal value (the tests' reference: Decimal, exact here)."""
    import decimal
    import math

    context = decimal.Context(prec=400, Emax=10**6, Emin=-10**6)
    units = {"": 1, "n": "1e-9", "u": "1e-6", "m": "1e-3", "k": "1e3", "M": "1e6", "G": "1e9", "T": "1e12",
             "P": "1e15", "E": "1e18", "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
    written = str(text)
    suffix = next((s for s in sorted(units, key=len, reverse=True) if s and written.endswith(s)
                   and "e" not in written.lower().replace(s.lower(), "", 1)), "")
    number = written[:len(written) - len(suffix)] if suffix else written
    value = context.multiply(context.multiply(decimal.Decimal(number), decimal.Decimal(units[suffix])),
                             decimal.Decimal(10) ** tens)
    return math.ceil(value)


def test_quantities_round_up_exactly_as_the_decimal_reference():
    import random

    rng = random.Random(20261206)
    for _ in range(3000):
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 19)))
        cut = rng.randint(0, len(digits))
        number = (rng.choice(["", "-", "+"]) + digits[:cut] + ("." if rng.random() < 0.5 else "") + digits[cut:])
        if number.strip("+-.") == "":
            continue
        tail = rng.choice(["", "n", "u", "m", "k", "M", "G", "T", "Ki", "Mi", "Gi", "e%d" % rng.randint(-30, 12)])
        text = number + tail
        for tens, parse in ((0, base_units), (3, milli_cpu)):
            expected = reference(text, tens)
            if -INT64_MAX - 1 <= expected <= INT64_MAX:
                assert parse(text) == expected, text
            else:
                with pytest.raises(QuantityError):
                    parse(text)
    assert canonical("cpu", 0.25) == 250 and canonical("memory", 1.5e3) == 1500 and canonical("memory", 7) == 7


@pytest.mark.parametrize("text", ["1e1000000", "1e-1000000", "9" * 5000, "1" + "0" * 65, "1e19", "8Ei",
                                  "-9223372036854775809", 10**400, "1e100000000000000000000"])
def test_out_of_range_quantities_are_refused_at_once(text):
    if text == "1e-1000000":  # a tiny positive: rounds up to the smallest unit, as Kubernetes rounds
        assert base_units(text) == 1 and milli_cpu("-" + text) == 0
        return
    with pytest.raises(QuantityError):
        base_units(text)


def test_zeros_do_not_count_as_digits():
    assert milli_cpu("1." + "0" * 200) == 1000
    assert base_units("0" * 200 + "5") == 5
    assert milli_cpu("0." + "0" * 200 + "1") == 1  # a tiny positive rounds up to the smallest unit


def test_int64_bounds_are_in_range():
    assert base_units(str(INT64_MAX)) == INT64_MAX
    assert base_units("-9223372036854775808") == -INT64_MAX - 1
    assert milli_cpu("9223372036854775.807") == INT64_MAX
    assert base_units("7Ei") == 7 << 60


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


def test_an_annotation_with_an_out_of_range_quantity_is_refused_as_bad_input():
    import json

    from koordlet.statesinformer.extended_spec import ANNOTATION_EXTENDED_RESOURCE_SPEC, parse_extended_resource_spec

    for hostile in ("1e1000000", "1e30", "9" * 5000):
        text = json.dumps({"containers": {"main": {"requests": {"kubernetes.io/batch-cpu": hostile}}}})
        specs, problems = parse_extended_resource_spec({ANNOTATION_EXTENDED_RESOURCE_SPEC: text})
        assert dict(specs) == {} and len(problems) == 1
        assert "out of range" in problems[0].reason or "digits" in problems[0].reason
