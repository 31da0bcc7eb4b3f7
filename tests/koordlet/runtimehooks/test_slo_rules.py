"""The hooks' rules from NodeSLO and the BE suppress decision (pure functions).

Expected values: the NodeSLO CRD / koordlet defaults (cpuQOS.enable false on every class,
groupIdentity LSR/LS 2, BE -1, schedIdle 0) and koordlet's rules (disabled class -> bvt 0,
batch quota unset under the cfsQuota suppress policy)."""

from __future__ import annotations

import pytest

from koordlet.apis.qos import KoordQoSClass as Q
from koordlet.ports.be_suppress import BESuppress, quota_under_tier
from koordlet.runtimehooks.allocations import NO_ALLOCATIONS
from koordlet.runtimehooks.hook_config import HookConfig, HostCaps
from koordlet.runtimehooks.hooks import batch_resource, cpuset_allocator
from koordlet.runtimehooks.slo_rules import hook_config_from_slo, hook_config_with_suppress
from koordlet.slo.spec import parse_node_slo_spec
from tests.koordlet.runtimehooks.fixtures import batch, ext_spec, make_pod

BASE = HookConfig(node_cpus=frozenset(range(4)), host=HostCaps(2, True, True))

CASES = [
    ("defaults", {}, {Q.LSR: 0, Q.LS: 0, Q.BE: 0}, False, True),
    ("all enabled", {"resourceQOSStrategy": {c: {"cpuQOS": {"enable": True}} for c in ("lsrClass", "lsClass", "beClass")}},
     {Q.LSR: 2, Q.LS: 2, Q.BE: -1}, False, True),
    ("BE only, schedIdle", {"resourceQOSStrategy": {"beClass": {"cpuQOS": {"enable": True, "schedIdle": 1}}}},
     {Q.LSR: 0, Q.LS: 0, Q.BE: -1}, True, True),
    ("schedIdle without enable", {"resourceQOSStrategy": {"beClass": {"cpuQOS": {"schedIdle": 1}}}},
     {Q.LSR: 0, Q.LS: 0, Q.BE: 0}, False, True),
    ("custom identity", {"resourceQOSStrategy": {"lsClass": {"cpuQOS": {"enable": True, "groupIdentity": 1}}}},
     {Q.LSR: 0, Q.LS: 1, Q.BE: 0}, False, True),
    ("cfsQuota suppress", {"resourceUsedThresholdWithBE": {"enable": True, "cpuSuppressPolicy": "cfsQuota"}},
     {Q.LSR: 0, Q.LS: 0, Q.BE: 0}, False, False),
    ("cfsQuota policy but suppress off", {"resourceUsedThresholdWithBE": {"cpuSuppressPolicy": "cfsQuota"}},
     {Q.LSR: 0, Q.LS: 0, Q.BE: 0}, False, True),
]


@pytest.mark.parametrize("name,spec,bvt,idle,cfs", CASES, ids=[c[0] for c in CASES])
def test_hook_config_from_slo(name, spec, bvt, idle, cfs) -> None:
    config = hook_config_from_slo(parse_node_slo_spec(spec), BASE)
    assert dict(config.bvt) == bvt
    assert (config.be_cpu_idle, config.enable_cfs_quota) == (idle, cfs)
    assert (config.node_cpus, config.host) == (BASE.node_cpus, BASE.host)  # host facts kept


def test_quota_under_tier() -> None:
    # (own, tier) -> written: an unlimited tier leaves the child's own; a limited one caps it
    for own, tier, expected in ((50_000, -1, 50_000), (-1, -1, -1), (50_000, 20_000, 20_000),
                                (10_000, 20_000, 10_000), (-1, 20_000, 20_000)):
        assert quota_under_tier(own, tier) == expected


def test_be_hooks_stay_inside_the_suppressed_tier() -> None:
    be = make_pod("be1", Q.BE, annotations={"node.koordinator.sh/extended-resource-spec": ext_spec(main=batch("500", "1Gi"))})
    container = be.containers[0]
    free = cpuset_allocator.decide(be, container, BASE, NO_ALLOCATIONS)
    assert free.cpuset_cpus == frozenset(range(4))
    assert batch_resource.decide(be, container, BASE, NO_ALLOCATIONS).cfs_quota == 50_000
    held = hook_config_with_suppress(BASE, BESuppress(frozenset({2, 3}), 20_000))
    assert cpuset_allocator.decide(be, container, held, NO_ALLOCATIONS).cpuset_cpus == frozenset({2, 3})
    assert batch_resource.decide(be, container, held, NO_ALLOCATIONS).cfs_quota == 20_000
    ls = make_pod("ls1", Q.LS)
    assert cpuset_allocator.decide(ls, ls.containers[0], held, NO_ALLOCATIONS).cpuset_cpus == frozenset(range(4))
