"""Spec -> NRI messages: only owned fields, v2-only settings through `unified`."""

from types import MappingProxyType

from koordlet.runtimehooks import nri_convert
from koordlet.runtimehooks.spec import EMPTY_SPEC, ResourceSpec
from proto.nri.pkg.api.v1alpha1 import api_pb2 as api


def test_adjustment_sets_only_owned_fields() -> None:
    adjust = nri_convert.adjustment(ResourceSpec(cpuset_cpus=frozenset({0, 1, 2})), cgroup_version=1)
    expected = api.ContainerAdjustment()
    expected.linux.resources.cpu.cpus = "0-2"
    assert adjust == expected
    assert not adjust.linux.resources.cpu.HasField("shares")
    assert not adjust.linux.resources.HasField("memory")


def test_unlimited_is_minus_one_and_empty_spec_is_no_adjustment() -> None:
    adjust = nri_convert.adjustment(ResourceSpec(cpu_shares=2, cfs_quota=-1, memory_limit=-1), 1)
    res = adjust.linux.resources
    assert (res.cpu.shares.value, res.cpu.quota.value, res.memory.limit.value) == (2, -1, -1)
    assert nri_convert.adjustment(EMPTY_SPEC, 1) is None
    assert nri_convert.update("c1", ResourceSpec(bvt=2), 1) is None  # bvt has no OCI field: reconciler's job


def test_unified_only_on_cgroup_v2() -> None:
    spec = ResourceSpec(cpu_idle=1, unified=MappingProxyType({"memory.high": "1048576"}))
    assert nri_convert.adjustment(spec, 1) is None
    v2 = nri_convert.adjustment(spec, 2)
    assert dict(v2.linux.resources.unified) == {"cpu.idle": "1", "memory.high": "1048576"}


def test_holds_compares_only_owned_fields() -> None:
    current = api.LinuxResources()
    current.cpu.shares.value = 512
    current.cpu.cpus = "0-3"
    current.memory.limit.value = 1 << 30
    assert nri_convert.holds(current, ResourceSpec(cpu_shares=512, cpuset_cpus=frozenset(range(4))), 1)
    assert not nri_convert.holds(current, ResourceSpec(cpuset_cpus=frozenset({0})), 1)
    assert not nri_convert.holds(current, ResourceSpec(cfs_quota=-1), 1)
