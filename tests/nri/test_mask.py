"""Event masks: derived from the plugin's handlers, valid for the runtime's NRI version."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nri.events import EVENT_SPECS, Event
from nri.masks import (
    Delivery,
    InvalidEventMask,
    MaskError,
    NoUsableEvents,
    NriVersion,
    check_event_mask,
    delivery,
    events_of,
    falls_back_to_state_change,
    handled_events,
    mask_of,
    runtime_nri_version,
    subscription_mask,
    valid_event_mask,
)

V06 = NriVersion(0, 6, 1)
V08 = NriVersion(0, 8, 0)
V010 = NriVersion(0, 10, 0)
V012 = NriVersion(0, 12, 0)


class EveryHandler:
    pass


for _spec in EVENT_SPECS:
    setattr(EveryHandler, _spec.handler, lambda self, *a: None)


class CreateUpdateStopRemove:
    async def create_container(self, pod, ctr):
        return None

    async def update_container(self, pod, ctr, res):
        return None

    async def stop_container(self, pod, ctr):
        return None

    async def remove_container(self, pod, ctr):
        return None

    not_a_handler = 1


def test_event_bits_follow_event_minus_one():
    assert Event.RUN_POD_SANDBOX.bit == 0x1
    assert Event.CREATE_CONTAINER.bit == 0x8
    assert Event.UPDATE_CONTAINER.bit == 0x80
    assert Event.STOP_CONTAINER.bit == 0x200
    assert Event.REMOVE_CONTAINER.bit == 0x400
    assert Event.UPDATE_POD_SANDBOX.bit == 0x800
    assert Event.POST_UPDATE_POD_SANDBOX.bit == 0x1000
    assert Event.VALIDATE_CONTAINER_ADJUSTMENT.bit == 0x2000
    with pytest.raises(ValueError):
        _ = Event.UNKNOWN.bit


def test_valid_mask_is_0x7ff_up_to_0_9_and_0x3fff_from_0_10():
    assert valid_event_mask(V06) == 0x7FF
    assert valid_event_mask(V08) == 0x7FF
    assert valid_event_mask(NriVersion(0, 9, 0)) == 0x7FF
    assert valid_event_mask(V010) == 0x3FFF
    assert valid_event_mask(V012) == 0x3FFF


def test_mask_is_derived_from_the_methods_the_plugin_defines():
    handled = handled_events(CreateUpdateStopRemove())
    assert handled == {Event.CREATE_CONTAINER, Event.UPDATE_CONTAINER, Event.STOP_CONTAINER, Event.REMOVE_CONTAINER}
    # the worked example of protocols.md §1.8
    assert subscription_mask(handled, V012) == 0x688


def test_mask_for_nri_0_6_runtime_has_no_bit_beyond_0x7ff():
    mask = subscription_mask(handled_events(EveryHandler()), V06)
    assert mask == 0x7FF
    assert mask & ~0x7FF == 0
    check_event_mask(mask, V06)  # the runtime accepts it


def test_mask_for_nri_0_12_runtime_includes_validation_and_pod_update():
    assert subscription_mask(handled_events(EveryHandler()), V012) == 0x3FFF


def test_only_unsupported_handlers_is_an_error_not_a_subscribe_all_zero():
    class OnlyValidator:
        async def validate_container_adjustment(self, req):
            return None

    with pytest.raises(NoUsableEvents):
        subscription_mask(handled_events(OnlyValidator()), V08)
    assert subscription_mask(handled_events(OnlyValidator()), V010) == 0x2000


def test_requested_mask_narrows_but_cannot_extend_the_handled_set():
    handled = handled_events(CreateUpdateStopRemove())
    assert subscription_mask(handled, V012, requested=Event.CREATE_CONTAINER.bit) == 0x8
    assert subscription_mask(handled, V012, requested=0) == 0x688
    with pytest.raises(MaskError):
        subscription_mask(handled, V012, requested=Event.RUN_POD_SANDBOX.bit)


def test_runtime_rejects_bits_outside_its_valid_set():
    with pytest.raises(InvalidEventMask, match="0x800"):
        check_event_mask(0x800 | 0x8, V08)
    assert check_event_mask(0x8, V08) == {Event.CREATE_CONTAINER}


def test_zero_mask_subscribes_to_every_valid_event():
    assert check_event_mask(0, V08) == events_of(0x7FF)
    assert len(check_event_mask(0, V012)) == 14


@settings(max_examples=200)
@given(st.integers(min_value=0, max_value=0x3FFF))
def test_mask_roundtrips_through_event_sets(mask):
    assert mask_of(events_of(mask)) == mask


@settings(max_examples=200)
@given(st.sets(st.sampled_from([s.event for s in EVENT_SPECS]), min_size=1), st.sampled_from([V06, V08, V010, V012]))
def test_subscription_mask_is_always_accepted_by_the_runtime(events, version):
    try:
        mask = subscription_mask(frozenset(events), version)
    except NoUsableEvents:
        assert all(e.value > 11 for e in events) and version.key < (0, 10)
        return
    assert mask != 0
    assert check_event_mask(mask, version) <= frozenset(events)


@pytest.mark.parametrize(
    ("name", "version", "nri", "expected"),
    [
        ("containerd", "v2.3.4", "v0.12.0", NriVersion(0, 12, 0)),
        ("containerd", "v1.7.5", "", NriVersion(0, 3, 0)),
        ("containerd", "v1.7.14", "", NriVersion(0, 6, 0)),
        ("containerd", "v1.7.20", "", NriVersion(0, 6, 1)),
        ("containerd", "1.7.26", "", NriVersion(0, 8, 0)),
        ("containerd", "v2.1.4", "", NriVersion(0, 8, 0)),
        ("containerd", "v2.2.0", "", NriVersion(0, 10, 0)),
        ("containerd", "v2.2.3", "", NriVersion(0, 11, 0)),
        ("containerd", "v9.9.9", "", NriVersion(0, 8, 0)),
        ("containerd", "garbage", "", NriVersion(0, 8, 0)),
        ("cri-o", "1.30.0", "", NriVersion(0, 8, 0)),
        ("cri-o", "1.30.0", "not-a-version", NriVersion(0, 8, 0)),
    ],
)
def test_runtime_nri_version_is_reported_or_inferred_or_conservative(name, version, nri, expected):
    assert runtime_nri_version(name, version, nri) == expected


def test_inferred_unknown_runtime_never_gets_bits_beyond_0x7ff():
    v = runtime_nri_version("some-runtime", "v3.0.0", "")
    assert subscription_mask(handled_events(EveryHandler()), v) == 0x7FF


def test_delivery_per_version_follows_the_table():
    assert delivery(Event.RUN_POD_SANDBOX, V08) is Delivery.STATE_CHANGE
    assert delivery(Event.RUN_POD_SANDBOX, V010) is Delivery.STATE_CHANGE
    assert delivery(Event.RUN_POD_SANDBOX, V012) is Delivery.DEDICATED
    assert delivery(Event.CREATE_CONTAINER, V06) is Delivery.DEDICATED
    assert delivery(Event.UPDATE_POD_SANDBOX, V08) is Delivery.NONE
    assert delivery(Event.UPDATE_POD_SANDBOX, V010) is Delivery.DEDICATED
    assert delivery(Event.POST_UPDATE_POD_SANDBOX, V010) is Delivery.STATE_CHANGE
    assert delivery(Event.VALIDATE_CONTAINER_ADJUSTMENT, V08) is Delivery.NONE
    assert falls_back_to_state_change(Event.START_CONTAINER, V012)
    assert not falls_back_to_state_change(Event.CREATE_CONTAINER, V012)
    assert not falls_back_to_state_change(Event.START_CONTAINER, V010)


def test_version_parse_rejects_garbage():
    with pytest.raises(MaskError):
        NriVersion.parse("x.y")
    assert str(NriVersion.parse("v0.12")) == "v0.12.0"
