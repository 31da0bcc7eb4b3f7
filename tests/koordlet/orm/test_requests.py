"""Pod requests from the informer's model; CPU from CRI resources by inverting kubelet's
conversions (1 CPU = 1024 shares; quota = milli x period / 1000)."""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

import pytest

from koordlet.apis.qos import KatalystQoSLevel, KoordQoSClass, PodQoS
from koordlet.config.parsers import parse_pairs
from koordlet.orm.requests import container_quantities, is_guaranteed, milli_from_quota, milli_from_shares, pod_request
from koordlet.statesinformer.model import (
    ContainerInfo,
    ContainerState,
    LinuxResources,
    PodInfo,
    Resources,
    SandboxState,
)
from koordlet.statesinformer.qos import k8s_qos_of_cgroup_parent
from system.cgroup_layout import QoSTier

KATALYST_MAP = ("resource.katalyst.kubewharf.io/reclaimed_millicpu=cpu,"
                "resource.katalyst.kubewharf.io/reclaimed_memory=memory")


@pytest.mark.parametrize("shares,milli", [(1024, 1000), (2048, 2000), (256, 250), (102, 100), (2, 0), (None, 0)])
def test_shares_back_to_milli_cpu(shares, milli) -> None:
    assert milli_from_shares(shares) == milli


@pytest.mark.parametrize("quota,period,milli", [(100000, 100000, 1000), (200000, 100000, 2000),
                                                (50000, 100000, 500), (-1, 100000, None), (None, None, None)])
def test_quota_back_to_milli_cpu(quota, period, milli) -> None:
    assert milli_from_quota(quota, period) == milli


def test_katalysts_resource_names_map_parses() -> None:
    assert parse_pairs(KATALYST_MAP) == {
        "resource.katalyst.kubewharf.io/reclaimed_millicpu": "cpu",
        "resource.katalyst.kubewharf.io/reclaimed_memory": "memory"}
    with pytest.raises(ValueError, match="is not a NAME=NAME pair"):
        parse_pairs("cpu")


def container(name="app", linux=None, spec=None) -> ContainerInfo:
    return ContainerInfo("id-" + name, name, "u1", ContainerState.CREATED, "",
                         linux=linux or LinuxResources(), spec=spec)


def pod(qos: PodQoS, containers, parent="kubepods/podu1") -> PodInfo:
    """The pod as the informer gives it: its Kubernetes tier read off the cgroup parent."""
    qos = replace(qos, k8s=qos.k8s or k8s_qos_of_cgroup_parent(parent))
    return PodInfo("u1", "p", "ns", "sb", SandboxState.READY, parent, qos, containers=tuple(containers))


DEDICATED = PodQoS(KoordQoSClass.LSR, katalyst=KatalystQoSLevel.DEDICATED_CORES,
                   memory_enhancement=MappingProxyType({"numa_binding": "true", "numa_exclusive": "true"}))
CRI_TWO_CPUS = LinuxResources(cpu_shares=2048, cpu_quota=200000, cpu_period=100000, memory_limit=1 << 30)


def test_a_guaranteed_dedicated_pod_from_cri_resources_is_exclusive_and_numa_bound() -> None:
    (request,) = pod_request(pod(DEDICATED, [container(linux=CRI_TWO_CPUS)])).containers
    assert dict(request.requests) == {"cpu": 2000, "memory": 1 << 30}
    assert request.exclusive_cpus and request.numa_binding and request.numa_exclusive
    assert request.qos_level == "dedicated_cores"


def test_fractional_cpus_are_not_exclusive() -> None:
    linux = LinuxResources(cpu_shares=1536, cpu_quota=150000, cpu_period=100000)
    (request,) = pod_request(pod(DEDICATED, [container(linux=linux)])).containers
    assert request.requests["cpu"] == 1500 and not request.exclusive_cpus


def test_a_burstable_pod_is_not_exclusive() -> None:
    (request,) = pod_request(pod(DEDICATED, [container(linux=CRI_TWO_CPUS)],
                                 parent="kubepods/burstable/podu1")).containers
    assert not request.exclusive_cpus


@pytest.mark.parametrize("qos", [PodQoS(KoordQoSClass.LSE, koord=KoordQoSClass.LSE),
                                 PodQoS(KoordQoSClass.LSR, koord=KoordQoSClass.LSR)])
def test_koordinator_lse_and_lsr_are_exclusive_without_numa_binding(qos) -> None:
    (request,) = pod_request(pod(qos, [container(linux=CRI_TWO_CPUS)])).containers
    assert request.exclusive_cpus and not request.numa_binding


def test_ls_pods_share_unless_the_static_cpu_policy_is_on() -> None:
    ls = pod(PodQoS(KoordQoSClass.LS, koord=KoordQoSClass.LS), [container(linux=CRI_TWO_CPUS)])
    (request,) = pod_request(ls).containers
    assert not request.exclusive_cpus
    (request,) = pod_request(ls, static_cpu_policy=True).containers
    assert request.exclusive_cpus and not request.numa_binding


def test_the_spec_wins_over_cri_and_names_are_mapped() -> None:
    spec = Resources(requests=MappingProxyType({"resource.katalyst.kubewharf.io/reclaimed_millicpu": 3000}))
    requests, _ = container_quantities(container(linux=CRI_TWO_CPUS, spec=spec),
                                       parse_pairs(KATALYST_MAP))
    assert requests == {"cpu": 3000}


def test_guaranteed_from_the_informers_tier_for_both_drivers() -> None:
    uid = "1234-ab"
    for parent, expected in [("kubepods/pod1234-ab", True),
                             ("kubepods.slice/kubepods-pod1234_ab.slice", True),
                             ("kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234_ab.slice", False),
                             ("kubepods/besteffort/pod1234-ab", False)]:
        qos = PodQoS(KoordQoSClass.LS, k8s=k8s_qos_of_cgroup_parent(parent))
        p = PodInfo(uid, "p", "ns", "sb", SandboxState.READY, parent, qos)
        assert is_guaranteed(p) is expected, parent
    assert is_guaranteed(PodInfo(uid, "p", "ns", "sb", SandboxState.READY, "", PodQoS(KoordQoSClass.LS, k8s=QoSTier.GUARANTEED)))
