"""The test peer's pure parts: applying adjustments to a model container and
splitting Synchronize the way a runtime does."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nri.testing.model import OwnershipConflict, OwnershipLedger, apply_adjustment, apply_update, merge_updates
from nri.testing.sync_split import SplitSyncFailed, plan_sync_chunks, shrink_objects_per_message
from proto.nri.pkg.api.v1alpha1 import api_pb2 as api


def _container():
    c = api.Container(id="c1", name="app", env=["A=1", "B=2"], annotations={"keep": "1", "drop": "x"})
    c.mounts.add(destination="/data", source="/host/data", type="bind")
    c.linux.resources.cpu.shares.value = 1024
    c.linux.resources.memory.limit.value = 1 << 30
    return c


def test_adjustment_sets_and_removes_with_the_dash_marker():
    c = _container()
    adj = api.ContainerAdjustment(annotations={"new": "v", "-drop": ""})
    adj.env.add(key="C", value="3")
    adj.env.add(key="-A", value="")
    adj.mounts.add(destination="-/data")
    adj.mounts.add(destination="/cache", source="/host/cache", type="bind")
    adj.linux.resources.cpu.shares.value = 2
    adj.linux.resources.cpu.cpus = "0-1"
    adj.linux.oom_score_adj.value = 0  # present with zero: must still apply
    apply_adjustment(c, adj, "10-test")
    assert dict(c.annotations) == {"keep": "1", "new": "v"}
    assert list(c.env) == ["B=2", "C=3"]
    assert [m.destination for m in c.mounts] == ["/cache"]
    assert c.linux.resources.cpu.shares.value == 2
    assert c.linux.resources.cpu.cpus == "0-1"
    assert c.linux.resources.memory.limit.value == 1 << 30
    assert c.linux.HasField("oom_score_adj") and c.linux.oom_score_adj.value == 0


def test_second_plugin_setting_the_same_field_is_a_conflict():
    c = _container()
    ledger = OwnershipLedger()
    a = api.ContainerAdjustment()
    a.linux.resources.cpu.shares.value = 2
    apply_adjustment(c, a, "10-b", ledger)
    with pytest.raises(OwnershipConflict, match='"10-b" and "20-a" both tried to set CPUShares'):
        apply_adjustment(c, a, "20-a", ledger)
    # a different field is fine
    m = api.ContainerAdjustment()
    m.linux.resources.memory.limit.value = 5
    apply_adjustment(c, m, "20-a", ledger)
    assert c.linux.resources.memory.limit.value == 5


def test_removal_releases_the_claim():
    c = _container()
    ledger = OwnershipLedger()
    apply_adjustment(c, api.ContainerAdjustment(annotations={"k": "1"}), "10-a", ledger)
    apply_adjustment(c, api.ContainerAdjustment(annotations={"-k": ""}), "20-b", ledger)
    apply_adjustment(c, api.ContainerAdjustment(annotations={"k": "2"}), "20-b", ledger)
    assert c.annotations["k"] == "2"


def test_update_merges_resources_and_ignore_failure_needs_everyone():
    c = _container()
    u = api.ContainerUpdate(container_id="c1")
    u.linux.resources.cpu.quota.value = 50000
    apply_update(c, u)
    assert c.linux.resources.cpu.quota.value == 50000 and c.linux.resources.cpu.shares.value == 1024
    u2 = api.ContainerUpdate(container_id="c1", ignore_failure=True)
    u2.linux.resources.memory.limit.value = 7
    u3 = api.ContainerUpdate(container_id="c1", ignore_failure=False)
    merged = merge_updates([("a", u2), ("b", u3)])
    assert not merged["c1"].ignore_failure
    assert merged["c1"].linux.resources.memory.limit.value == 7


def _pods(n, size=100):
    return [api.PodSandbox(id="p%d" % i, name="x" * size) for i in range(n)]


def _ctrs(n, size=100):
    return [api.Container(id="c%d" % i, name="y" * size) for i in range(n)]


def test_small_state_goes_in_one_message_without_more():
    chunks = plan_sync_chunks(_pods(3), _ctrs(3), max_length=1 << 22)
    assert len(chunks) == 1 and not chunks[0].request.more


def test_large_state_is_split_with_more_on_all_but_the_last():
    chunks = plan_sync_chunks(_pods(50), _ctrs(80), max_length=4000)
    assert len(chunks) > 1
    assert all(c.request.more for c in chunks[:-1]) and not chunks[-1].request.more
    assert all(c.request.ByteSize() <= 4000 for c in chunks)
    assert sum(c.pods for c in chunks) == 50 and sum(c.containers for c in chunks) == 80


def test_nri_0_6_never_splits():
    chunks = plan_sync_chunks(_pods(50), _ctrs(80), max_length=4000, split_supported=False)
    assert len(chunks) == 1 and not chunks[0].request.more


def test_split_gives_up_below_eight_objects():
    with pytest.raises(SplitSyncFailed, match="failed to synchronize plugin with split messages"):
        plan_sync_chunks(_pods(4, size=5000), _ctrs(4, size=5000), max_length=4000)
    assert shrink_objects_per_message(100, 100, 2000, 1000) == (50, 50)
    assert shrink_objects_per_message(100, 100, 1100, 1000) == (90, 90)
    assert shrink_objects_per_message(5, 5, 100000, 1000) == (4, 4)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 60), st.integers(0, 60), st.integers(20, 400))
def test_split_plan_sends_every_object_exactly_once_in_order(npods, nctrs, size):
    pods, ctrs = _pods(npods, size), _ctrs(nctrs, size)
    try:
        chunks = plan_sync_chunks(pods, ctrs, max_length=6000)
    except SplitSyncFailed:
        return
    assert [p.id for c in chunks for p in c.request.pods] == [p.id for p in pods]
    assert [x.id for c in chunks for x in c.request.containers] == [x.id for x in ctrs]
    assert not chunks[-1].request.more


_keys = st.text(alphabet="abcdefgh._/", min_size=1, max_size=8)


@settings(max_examples=80, deadline=None)
@given(st.dictionaries(_keys, st.text(max_size=5), max_size=6), st.dictionaries(_keys, st.text(max_size=5), max_size=6))
def test_setting_then_removing_annotations_and_env_restores_the_original(original, added):
    c = api.Container(id="c", annotations=original, env=["%s=%s" % kv for kv in original.items()])
    before = api.Container()
    before.CopyFrom(c)
    ledger = OwnershipLedger()
    new_keys = {k: v for k, v in added.items() if k not in original}
    set_adj = api.ContainerAdjustment(annotations=new_keys)
    for k, v in new_keys.items():
        set_adj.env.add(key=k, value=v)
    apply_adjustment(c, set_adj, "10-a", ledger)
    assert all(c.annotations[k] == v for k, v in new_keys.items())
    remove = api.ContainerAdjustment(annotations={"-" + k: "" for k in new_keys})
    for k in new_keys:
        remove.env.add(key="-" + k)
    apply_adjustment(c, remove, "20-b", ledger)
    assert dict(c.annotations) == dict(before.annotations)
    assert sorted(c.env) == sorted(before.env)
    assert not [key for key in ledger.owners if key[1] in ("Annotations", "Env")]
