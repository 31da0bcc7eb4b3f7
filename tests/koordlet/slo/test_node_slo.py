"""NodeSLO spec: koordlet's defaults, parsing over defaults, refusal naming the field."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from koordlet.apis.qos import KoordQoSClass
from koordlet.slo.node_slo import CPUBurstPolicy, CPUSuppressPolicy, NodeSLO, NodeSLOError
from koordlet.slo.spec import node_slo_document, parse_node_slo_spec, spec_of_document


def test_defaults_are_koordlets():
    # koordinator pkg/util/config.go (v1.1) DefaultNodeSLOSpecConfig and anchors §2.6
    slo = parse_node_slo_spec({})
    t = slo.resource_used_threshold_with_be
    assert (t.enable, t.cpu_suppress_threshold_percent) == (False, 65)
    assert t.cpu_suppress_policy is CPUSuppressPolicy.CPUSET
    assert (t.memory_evict_threshold_percent, t.memory_evict_lower) == (70, 68)
    assert t.cpu_evict_be_usage_threshold_percent == 90 and not t.cpu_evict_configured
    b = slo.cpu_burst_strategy
    assert (b.policy, b.cpu_burst_percent, b.cfs_quota_burst_percent, b.cfs_quota_burst_period_seconds,
            b.share_pool_threshold_percent) == (CPUBurstPolicy.NONE, 1000, 300, -1, 50)
    assert [slo.cpu_qos(c).group_identity for c in (KoordQoSClass.LSR, KoordQoSClass.LS, KoordQoSClass.BE)] \
        == [2, 2, -1]
    assert [slo.resctrl_qos(c).cat_range_end_percent for c in (KoordQoSClass.LSR, KoordQoSClass.LS,
                                                               KoordQoSClass.BE)] == [100, 100, 30]
    assert slo.memory_qos(KoordQoSClass.BE).wmark_min_adj == 50
    assert slo.memory_qos(KoordQoSClass.LS).wmark_min_adj == -25
    assert not any(slo.resource_qos(c).cpu_qos.enable for c in (KoordQoSClass.LSR, KoordQoSClass.BE))


def test_issue_example_overrides_only_what_it_names():
    slo = parse_node_slo_spec({"resourceUsedThresholdWithBE": {
        "enable": True, "cpuSuppressThresholdPercent": 65, "cpuSuppressPolicy": "cfsQuota"}})
    t = slo.resource_used_threshold_with_be
    assert t.enable and t.cpu_suppress_policy is CPUSuppressPolicy.CFS_QUOTA
    assert t.memory_evict_threshold_percent == 70


def test_cpu_qos_per_class_for_the_group_identity_hook():
    slo = parse_node_slo_spec({"resourceQOSStrategy": {
        "lsrClass": {"cpuQOS": {"enable": True, "groupIdentity": 2}},
        "beClass": {"cpuQOS": {"enable": True, "groupIdentity": -1, "schedIdle": 1}}}})
    assert slo.cpu_qos(KoordQoSClass.LSE) == slo.cpu_qos(KoordQoSClass.LSR)
    assert slo.cpu_qos(KoordQoSClass.BE).sched_idle == 1 and slo.cpu_qos(KoordQoSClass.BE).enable
    assert slo.cpu_qos(KoordQoSClass.NONE) is slo.cpu_qos(KoordQoSClass.LS)
    assert slo.cpu_qos(KoordQoSClass.SYSTEM) is None


@pytest.mark.parametrize("spec, field", [
    ({"resourceUsedThresholdWithBE": {"cpuEvictBESatisfactionLowerPercent": 50,
                                      "cpuEvictBESatisfactionUpperPercent": 40}},
     "spec.resourceUsedThresholdWithBE.cpuEvictBESatisfactionLowerPercent"),
    ({"resourceUsedThresholdWithBE": {"cpuEvictBESatisfactionLowerPercent": 61,
                                      "cpuEvictBESatisfactionUpperPercent": 80}},
     "spec.resourceUsedThresholdWithBE.cpuEvictBESatisfactionLowerPercent"),
    ({"resourceUsedThresholdWithBE": {"cpuEvictBESatisfactionLowerPercent": 40}},
     "spec.resourceUsedThresholdWithBE.cpuEvictBESatisfactionUpperPercent"),
    ({"resourceQOSStrategy": {"beClass": {"resctrlQOS": {"mbaPercent": 55}}}},
     "spec.resourceQOSStrategy.beClass.resctrlQOS.mbaPercent"),
    ({"resourceQOSStrategy": {"lsClass": {"resctrlQOS": {"catRangeStartPercent": 50, "catRangeEndPercent": 50}}}},
     "spec.resourceQOSStrategy.lsClass.resctrlQOS.catRangeEndPercent"),
    ({"resourceUsedThresholdWithBE": {"cpuSuppressThresholdPercent": 101}},
     "spec.resourceUsedThresholdWithBE.cpuSuppressThresholdPercent"),
    ({"resourceUsedThresholdWithBE": {"memoryEvictThresholdPercent": -1}},
     "spec.resourceUsedThresholdWithBE.memoryEvictThresholdPercent"),
    ({"resourceUsedThresholdWithBE": {"memoryEvictThresholdPercent": 60, "memoryEvictLowerPercent": 60}},
     "spec.resourceUsedThresholdWithBE.memoryEvictLowerPercent"),
    ({"resourceUsedThresholdWithBE": {"cpuSuppressPolicy": "quota"}},
     "spec.resourceUsedThresholdWithBE.cpuSuppressPolicy"),
    ({"resourceUsedThresholdWithBE": {"enable": "yes"}}, "spec.resourceUsedThresholdWithBE.enable"),
    ({"resourceUsedThresholdWithBE": {"cpuSupressThresholdPercent": 50}},
     "spec.resourceUsedThresholdWithBE.cpuSupressThresholdPercent"),
    ({"cpuBurstStrategy": {"policy": "always"}}, "spec.cpuBurstStrategy.policy"),
    ({"resourceQOSStrategy": {"beClass": {"cpuQOS": {"groupIdentity": 3}}}},
     "spec.resourceQOSStrategy.beClass.cpuQOS.groupIdentity"),
    ({"resourceQOSStrategy": {"beClass": []}}, "spec.resourceQOSStrategy.beClass"),
    ({"bogus": {}}, "spec.bogus"),
])
def test_invalid_document_names_the_field(spec, field):
    with pytest.raises(NodeSLOError) as caught:
        parse_node_slo_spec(spec)
    assert caught.value.field == field
    assert field in str(caught.value)


def test_crd_fields_we_do_not_act_on_are_accepted():
    slo = parse_node_slo_spec({"hostApplications": [], "systemStrategy": {"minFreeKbytesFactor": 100},
                               "resourceQOSStrategy": {"systemClass": {}, "beClass": {"blkioQOS": {}}},
                               "resourceUsedThresholdWithBE": {"cpuEvictPolicy": "evictByRealLimit"}})
    assert slo == NodeSLO()


def test_whole_object_gives_its_spec():
    doc = {"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeSLO",
           "spec": {"cpuBurstStrategy": {"policy": "auto"}}}
    assert parse_node_slo_spec(spec_of_document(doc)).cpu_burst_strategy.policy is CPUBurstPolicy.AUTO
    with pytest.raises(NodeSLOError):
        spec_of_document({"kind": "NodeMetric", "spec": {}})


@given(st.integers(-50, 150), st.integers(-50, 150))
def test_cpu_evict_pair_accepted_only_inside_koordlets_ranges(lower, upper):
    spec = {"resourceUsedThresholdWithBE": {"cpuEvictBESatisfactionLowerPercent": lower,
                                            "cpuEvictBESatisfactionUpperPercent": upper}}
    valid = 0 < lower <= 60 and 0 < upper < 100 and lower <= upper
    try:
        slo = parse_node_slo_spec(spec)
    except NodeSLOError:
        assert not valid
    else:
        assert valid and slo.resource_used_threshold_with_be.cpu_evict_configured


def test_document_round_trips_through_the_parser():
    spec = {"resourceUsedThresholdWithBE": {"enable": True, "cpuSuppressPolicy": "cfsQuota",
                                            "cpuEvictBESatisfactionLowerPercent": 40,
                                            "cpuEvictBESatisfactionUpperPercent": 80},
            "cpuBurstStrategy": {"policy": "auto"},
            "resourceQOSStrategy": {"beClass": {"resctrlQOS": {"enable": True, "mbaPercent": 50}}}}
    slo = parse_node_slo_spec(spec)
    document = node_slo_document(slo)
    assert document["resourceUsedThresholdWithBE"]["cpuSuppressPolicy"] == "cfsQuota"
    assert document["resourceQOSStrategy"]["beClass"]["cpuQOS"]["groupIdentity"] == -1
    assert parse_node_slo_spec(document) == slo


def test_pod_cpu_burst_annotation():
    from koordlet.slo.node_slo import CPUBurstStrategy
    from koordlet.slo.spec import pod_cpu_burst

    node = CPUBurstStrategy()
    assert pod_cpu_burst(node, None) is node
    pod = pod_cpu_burst(node, '{"policy": "auto", "cfsQuotaBurstPercent": 200}')
    assert (pod.policy, pod.cfs_quota_burst_percent, pod.cpu_burst_percent) == (CPUBurstPolicy.AUTO, 200, 1000)
    for text, field in (("{", "koordinator.sh/cpuBurst"), ('{"sharePoolThresholdPercent": 10}',
                                                         "koordinator.sh/cpuBurst.sharePoolThresholdPercent")):
        with pytest.raises(NodeSLOError) as caught:
            pod_cpu_burst(node, text)
        assert caught.value.field == field


_percent = st.integers(0, 100)


@given(st.fixed_dictionaries({}, optional={
    "cpuSuppressThresholdPercent": _percent, "memoryEvictThresholdPercent": st.integers(3, 100),
    "cpuSuppressPolicy": st.sampled_from(["cpuset", "cfsQuota"]), "enable": st.booleans()}),
    st.fixed_dictionaries({}, optional={"catRangeStartPercent": st.integers(0, 49),
                                        "catRangeEndPercent": st.integers(50, 100),
                                        "mbaPercent": st.sampled_from(range(0, 101, 10))}),
    st.fixed_dictionaries({}, optional={"policy": st.sampled_from(["none", "auto", "cpuBurstOnly"]),
                                        "cpuBurstPercent": st.integers(0, 10000)}))
def test_any_valid_spec_survives_its_own_document(threshold, resctrl, burst):
    slo = parse_node_slo_spec({"resourceUsedThresholdWithBE": threshold, "cpuBurstStrategy": burst,
                               "resourceQOSStrategy": {"lsClass": {"resctrlQOS": resctrl}}})
    assert parse_node_slo_spec(node_slo_document(slo)) == slo


def test_group_identities_for_the_hook_follow_enable():
    assert set(NodeSLO().group_identities().values()) == {0}  # cpuQOS off by default: "none"
    slo = parse_node_slo_spec({"resourceQOSStrategy": {
        "lsrClass": {"cpuQOS": {"enable": True}}, "beClass": {"cpuQOS": {"enable": True}}}})
    assert slo.group_identities() == {KoordQoSClass.LSR: 2, KoordQoSClass.LS: 0, KoordQoSClass.BE: -1}
