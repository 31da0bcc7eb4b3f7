"""PodMemo, and the strategies' per-pod parts it keeps: a change of one pod derives that
pod again and gives what deriving every pod afresh gives."""

from __future__ import annotations

import dataclasses

from koordlet.apis.keys import RESOURCE_STATUS
from koordlet.apis.qos import KoordQoSClass
from koordlet.qosmanager.cpu_burst import CPUBurst
from koordlet.qosmanager.cpu_suppress import CPUSuppress, pod_facts
from koordlet.slo.node_slo import CPUBurstPolicy, CPUBurstStrategy
from koordlet.statesinformer.model import NodeInfo, PodQoS
from koordlet.statesinformer.pod_memo import PodMemo
from tests.koordlet.qosmanager.helpers import Rig, container, pod
from tests.resourceexecutor.conftest import FakeTreeIO
from tests.system.fake_trees import build_v1_tree

CLASSES = (KoordQoSClass.LS, KoordQoSClass.LSR, KoordQoSClass.BE, KoordQoSClass.LSE)


def _pods(count: int) -> tuple:
    out = []
    for i in range(count):
        uid, cls = "p%d" % i, CLASSES[i % len(CLASSES)]
        tier = "besteffort" if cls is KoordQoSClass.BE else "burstable"
        parent = "kubepods/%s/pod%s" % (tier, uid)
        annotations = {RESOURCE_STATUS: '{"cpuset": "%d"}' % i} \
            if cls in (KoordQoSClass.LSR, KoordQoSClass.LSE) else None
        out.append(pod(uid, cls, parent, annotations=annotations, containers=(
            container("c%d" % i, uid, parent + "/c", requests={"cpu": 500 + i}, limits={"cpu": 1000 + i}),)))
    return tuple(out)


def _changed(pods: tuple, at: int, **fields) -> tuple:
    return pods[:at] + (dataclasses.replace(pods[at], **fields),) + pods[at + 1:]


def test_only_new_pod_objects_are_derived_again():
    derived: list[str] = []

    def derive(p):
        derived.append(p.uid)
        return p.uid.upper()

    memo: PodMemo[str] = PodMemo(derive)
    pods = _pods(5)
    assert memo.values(pods) == ["P0", "P1", "P2", "P3", "P4"]
    assert memo.values(pods) is memo.values(pods)  # the same tuple: nothing to do
    derived.clear()
    changed = _changed(pods, 2, name="renamed")
    assert memo.values(changed) == ["P0", "P1", "P2", "P3", "P4"]
    assert derived == ["p2"]
    derived.clear()
    fewer = changed[:1] + changed[2:] + _pods(7)[5:]  # p1 gone, p5 and p6 new
    assert memo.values(fewer) == ["P0", "P2", "P3", "P4", "P5", "P6"]
    assert derived == ["p5", "p6"] and len(memo) == 6
    derived.clear()
    memo.clear()  # what derive reads besides the pod changed
    assert memo.values(fewer) == ["P0", "P2", "P3", "P4", "P5", "P6"]
    assert derived == ["p0", "p2", "p3", "p4", "p5", "p6"]


def test_a_pod_gone_and_back_is_derived_again():
    calls: list[str] = []
    memo: PodMemo[int] = PodMemo(lambda p: calls.append(p.uid) or 0)
    pods = _pods(3)
    memo.values(pods)
    memo.values(pods[:2])
    calls.clear()
    memo.values(pods)
    assert calls == ["p2"]  # forgotten while it was gone


def test_burst_plan_after_changes_equals_a_plan_made_afresh():
    cfg = CPUBurstStrategy(policy=CPUBurstPolicy.AUTO)
    burst = CPUBurst()
    pods = _pods(12)
    burst._plan(cfg, pods)
    for at, fields in ((0, {"qos": PodQoS(KoordQoSClass.BE, koord=KoordQoSClass.BE)}),  # LS -> BE
                       (2, {"qos": PodQoS(KoordQoSClass.LS, koord=KoordQoSClass.LS)}),  # BE -> LS
                       (1, {"containers": ()}),  # LSR without containers
                       (4, {"containers": (container("c4b", "p4", "kubepods/burstable/podp4/c", limits={"cpu": 3000}),)})):
        pods = _changed(pods, at, **fields)
        kept = burst._plan(cfg, pods)
        fresh = CPUBurst()._plan(cfg, pods)
        assert kept == fresh
    assert [c.id for c in kept.containers] == [c.id for c in fresh.containers]
    assert "c4b" in kept.running and "c0" not in kept.running and "c2" in kept.running
    assert kept.state_pods[0] == ("p0", True)


def test_suppress_facts_after_changes_equal_facts_made_afresh(tmp_path):
    rig = Rig(build_v1_tree(tmp_path), NodeInfo("n", capacity={"cpu": 16_000}), io=FakeTreeIO())
    for p in _pods(12):
        rig.states.put(p)
    ctx = rig.ctx
    memo = CPUSuppress().pod_parts
    facts = pod_facts(ctx, None, memo)
    for uid, cls in (("p0", KoordQoSClass.BE), ("p2", KoordQoSClass.LSE), ("p3", KoordQoSClass.LS)):
        current = next(p for p in rig.states.pods() if p.uid == uid)
        rig.states.put(dataclasses.replace(current, qos=PodQoS(cls, koord=cls)))
        facts = pod_facts(ctx, facts, memo)
        fresh = pod_facts(ctx)
        assert facts == fresh
    assert {k.pod_uid for k in facts.be_usage} == {"p0", "p6", "p10"}
    # p3 (LSE on CPU 3) is LS now: CPU 3 is no longer kept from BE; p7 (LSE on CPU 7) still is
    assert 3 in facts.unsuppressed and 7 not in facts.unsuppressed
    assert [i.cpu for i in facts.lsr_pool] == [1, 5, 9]
