"""Table-driven tests of every hook and class, at the pure policy.

Expected figures are koordinator's published arithmetic (anchors.md §2.8, §0 item 10):
shares = milli x 1024 / 1000 (min 2), quota = milli x 100000 / 1000 (min 1000, -1 when
unlimited, never 1000), pod level = sum of containers; bvt LSR/LS 2, BE -1.
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

import pytest

from koordlet.apis.qos import KatalystQoSLevel, KoordQoSClass
from koordlet.config.features import resolve
from koordlet.runtimehooks.allocations import NO_ALLOCATIONS, AllocationIndex, CpuAllocations
from koordlet.runtimehooks.annotations import annotation_problems
from koordlet.runtimehooks.engine import plans_json, plans_json_steps
from koordlet.runtimehooks.hook_config import CpuManagerPolicy, HookConfig, HostCaps
from koordlet.runtimehooks.hooks import HOOKS, enabled_hooks
from koordlet.runtimehooks.hooks.group_identity import qos_dir_specs
from koordlet.runtimehooks.policy import decide, plan_pod
from koordlet.runtimehooks.spec import EMPTY_SPEC, ContainerPlan, PodPlan, ResourceSpec, combine
from koordlet.statesinformer.model import Resources, Source
from koordlet.util.steps import PODS_PER_STEP
from system.cgroup_layout import QoSTier
from tests.koordlet.runtimehooks.fixtures import batch, ext_spec, make_pod
from tests.stepping import driven

GiB = 1 << 30
BE, LS, LSR, LSE, SYSTEM = (KoordQoSClass.BE, KoordQoSClass.LS, KoordQoSClass.LSR, KoordQoSClass.LSE,
                            KoordQoSClass.SYSTEM)
ANNOT = "node.koordinator.sh/extended-resource-spec"
STATUS = "scheduling.koordinator.sh/resource-status"
CONFIG = HookConfig(node_cpus=frozenset(range(8)))
# koordlet's groupIdentity values with cpuQOS enabled on every class
BVT_RULE = MappingProxyType({LSR: 2, LS: 2, BE: -1})
BVT_TIERS = MappingProxyType({QoSTier.GUARANTEED: 2, QoSTier.BURSTABLE: 2, QoSTier.BESTEFFORT: -1})
BVT_HOST = HookConfig(node_cpus=frozenset(range(8)), host=HostCaps(cgroup_version=1, bvt_supported=True),
                      bvt=BVT_RULE, bvt_by_tier=BVT_TIERS)


def spec_of(pod, name, config=CONFIG, allocations=NO_ALLOCATIONS, hooks=HOOKS):
    container = pod.container(name) if name is not None else None
    return decide(pod, container, config, allocations, hooks)


BATCH_CASES = [
    # (id, class, annotation, container, expected shares, quota, memory)
    ("be-500m-2Gi", BE, ext_spec(main=batch("500", "2Gi")), "main", 512, 50_000, 2 * GiB),
    ("be-request-only-unlimited", BE, ext_spec(main={"requests": {"kubernetes.io/batch-cpu": "1000"}}),
     "main", 1024, -1, -1),
    ("be-tiny-limit-clamped", BE, ext_spec(main=batch("5", "1Mi")), "main", 5, 1000, 1 << 20),
    ("be-no-request-min-shares", BE, ext_spec(main={"limits": {"kubernetes.io/batch-cpu": "2000"}}),
     "main", 2, 200_000, -1),
    # v1.1 reads batch-cpu with Quantity.Value(): "500m" rounds up to 1 milli-core
    ("be-fractional-quantity-rounds-up", BE, ext_spec(main=batch("500m", "1Gi")), "main", 2, 1000, GiB),
]


@pytest.mark.parametrize("case", BATCH_CASES, ids=[c[0] for c in BATCH_CASES])
def test_batch_resource_container(case) -> None:
    _, qos, annotation, name, shares, quota, memory = case
    pod = make_pod("p1", qos, annotations={ANNOT: annotation})
    spec = spec_of(pod, name, hooks=enabled_hooks(lambda g: g == "BatchResource"))
    assert (spec.cpu_shares, spec.cfs_quota, spec.memory_limit) == (shares, quota, memory)


def test_batch_pod_level_is_sum_and_unlimited_wins() -> None:
    annotation = ext_spec(a=batch("500", "1Gi"), b=batch("1000", "2Gi"))
    pod = make_pod("p1", BE, ("a", "b"), annotations={ANNOT: annotation})
    spec = spec_of(pod, None, hooks=enabled_hooks(lambda g: g == "BatchResource"))
    assert (spec.cpu_shares, spec.cfs_quota, spec.memory_limit) == (1536, 150_000, 3 * GiB)
    unlimited = ext_spec(a=batch("500", "1Gi"), b={"requests": {"kubernetes.io/batch-cpu": "1000"}})
    pod = make_pod("p2", BE, ("a", "b"), annotations={ANNOT: unlimited})
    spec = spec_of(pod, None, hooks=enabled_hooks(lambda g: g == "BatchResource"))
    # v1.1 wrote 1000 here (missing else); unlimited must stay -1.
    assert (spec.cpu_shares, spec.cfs_quota, spec.memory_limit) == (1536, -1, -1)


def test_batch_cfs_quota_disabled_by_rule_is_unlimited() -> None:
    pod = make_pod("p1", BE, annotations={ANNOT: ext_spec(main=batch("500", "1Gi"))})
    spec = spec_of(pod, "main", config=replace(CONFIG, enable_cfs_quota=False))
    assert spec.cfs_quota == -1 and spec.cpu_shares == 512


def test_batch_from_kubelet_spec_when_no_annotation() -> None:
    specs = {"main": Resources(requests=MappingProxyType({"kubernetes.io/batch-cpu": 250}),
                               limits=MappingProxyType({"kubernetes.io/batch-cpu": 250,
                                                        "kubernetes.io/batch-memory": GiB}))}
    from_nri = make_pod("p1", BE, specs=specs)
    assert (spec_of(from_nri, "main").cpu_shares, spec_of(from_nri, "main").cfs_quota) == (256, 25_000)
    assert spec_of(from_nri, None).cpu_shares is None  # pod sum needs every container: kubelet's spec
    full = make_pod("p2", BE, specs=specs, sources=frozenset({Source.NRI, Source.KUBELET}))
    assert (spec_of(full, None).cpu_shares, spec_of(full, None).memory_limit) == (256, GiB)


BAD_ANNOTATIONS = [
    ("not-json", "{containers"),
    ("not-object", "[1, 2]"),
    ("containers-list", '{"containers": ["main"]}'),
    ("bad-quantity", '{"containers": {"main": {"limits": {"kubernetes.io/batch-cpu": "lots"}}}}'),
    ("boolean-quantity", '{"containers": {"main": {"limits": {"kubernetes.io/batch-cpu": true}}}}'),
    ("limits-not-object", '{"containers": {"main": {"limits": "500"}}}'),
]


@pytest.mark.parametrize("text", [t for _, t in BAD_ANNOTATIONS], ids=[i for i, _ in BAD_ANNOTATIONS])
def test_bad_extended_resource_spec_is_absent_and_reported(text: str) -> None:
    pod = make_pod("p1", BE, annotations={ANNOT: text})
    only_batch = enabled_hooks(lambda g: g == "BatchResource")
    assert spec_of(pod, "main", hooks=only_batch) == EMPTY_SPEC
    assert spec_of(pod, None, hooks=only_batch) == EMPTY_SPEC
    (problem,) = annotation_problems(pod.annotations)
    assert ANNOT in problem


@pytest.mark.parametrize("qos", [LS, LSR, LSE, SYSTEM, KoordQoSClass.NONE])
def test_batch_resource_ignores_non_be_classes(qos) -> None:
    pod = make_pod("p1", qos, annotations={ANNOT: ext_spec(main=batch("500", "1Gi"))})
    assert spec_of(pod, "main", hooks=enabled_hooks(lambda g: g == "BatchResource")) == EMPTY_SPEC


def test_katalyst_reclaimed_resources_map_to_cpu_and_memory() -> None:
    annotation = ext_spec(main={"requests": {"resource.katalyst.kubewharf.io/reclaimed_millicpu": "2000"},
                                "limits": {"resource.katalyst.kubewharf.io/reclaimed_millicpu": "2000",
                                           "resource.katalyst.kubewharf.io/reclaimed_memory": "4Gi"}})
    pod = make_pod("p1", BE, annotations={ANNOT: annotation}, katalyst=KatalystQoSLevel.RECLAIMED_CORES)
    spec = spec_of(pod, "main")
    assert (spec.cpu_shares, spec.cfs_quota, spec.memory_limit) == (2048, 200_000, 4 * GiB)
    shared = make_pod("p2", LS, annotations={ANNOT: annotation}, katalyst=KatalystQoSLevel.SHARED_CORES)
    assert spec_of(shared, "main", hooks=enabled_hooks(lambda g: g == "BatchResource")) == EMPTY_SPEC


def _index(*pods) -> CpuAllocations:
    index = AllocationIndex()
    for pod in pods:
        index.put(pod)
    return index.snapshot()


def test_cpuset_pools_by_class() -> None:
    lse = make_pod("lse", LSE, annotations={STATUS: '{"cpuset": "0-1"}'})
    lsr = make_pod("lsr", LSR, annotations={STATUS: '{"cpuset": "2-3"}'})
    ls = make_pod("ls", LS)
    be = make_pod("be", BE)
    allocations = _index(lse, lsr, ls, be)
    config = replace(CONFIG, reserved_cpus=frozenset({7}))
    only = enabled_hooks(lambda g: g == "CPUSetAllocator")
    cpus = {pod.uid: spec_of(pod, "main", config, allocations, only).cpuset_cpus for pod in (lse, lsr, ls, be)}
    assert cpus == {"lse": {0, 1}, "lsr": {2, 3}, "ls": {4, 5, 6}, "be": {2, 3, 4, 5, 6}}
    assert spec_of(ls, None, config, allocations, only) == EMPTY_SPEC  # pod level untouched


def test_containers_decided_under_the_same_pools_share_one_set() -> None:
    """Every LS container decided between two changes holds the same pool object (one set,
    not one a container); new allocations or a new rule give the new pool."""
    lsr = make_pod("lsr", LSR, annotations={STATUS: '{"cpuset": "2-3"}'})
    pods = [make_pod("ls%d" % i, LS) for i in range(3)]
    allocations = _index(lsr, *pods)
    only = enabled_hooks(lambda g: g == "CPUSetAllocator")
    first = [spec_of(pod, "main", CONFIG, allocations, only).cpuset_cpus for pod in pods]
    assert first[0] == {0, 1, 4, 5, 6, 7} and all(cpus is first[0] for cpus in first)
    moved = _index(*pods)  # the LSR pod is gone: its CPUs are shared again
    assert spec_of(pods[0], "main", CONFIG, moved, only).cpuset_cpus == frozenset(range(8))
    reserved = replace(CONFIG, reserved_cpus=frozenset({7}))
    assert spec_of(pods[0], "main", reserved, allocations, only).cpuset_cpus == {0, 1, 4, 5, 6}
    assert spec_of(pods[0], "main", CONFIG, allocations, only).cpuset_cpus == first[0]


def test_cpuset_dedicated_cores_are_exclusive_and_provider_wins() -> None:
    class Orm:
        def cpuset_for(self, pod_uid: str, container_name: str):
            return frozenset({6, 7}) if pod_uid == "ded" else None

    ded = make_pod("ded", LS, katalyst=KatalystQoSLevel.DEDICATED_CORES, annotations={STATUS: '{"cpuset": "0"}'})
    index = AllocationIndex(Orm())
    index.put(ded)
    allocations = index.snapshot()
    assert spec_of(ded, "main", CONFIG, allocations).cpuset_cpus == {6, 7}
    assert spec_of(make_pod("be", BE), "main", CONFIG, allocations).cpuset_cpus == frozenset(range(6))


@pytest.mark.parametrize("status", ['{"cpuset": "x-1"}', "{", '{"cpuset": 3}', "[]"])
def test_cpuset_bad_resource_status_is_absent(status: str) -> None:
    lsr = make_pod("lsr", LSR, annotations={STATUS: status})
    allocations = _index(lsr)
    assert allocations == CpuAllocations()
    # without its own CPUs an LSR pod follows kubelet's (none) policy: the shared pool
    assert spec_of(lsr, "main", CONFIG, allocations).cpuset_cpus == frozenset(range(8))
    assert annotation_problems(lsr.annotations)


def test_cpuset_static_kubelet_and_system_and_unknown_node() -> None:
    static = replace(CONFIG, cpu_manager_policy=CpuManagerPolicy.STATIC)
    none_class = make_pod("g", KoordQoSClass.NONE, k8s=QoSTier.GUARANTEED)
    assert spec_of(none_class, "main", static).cpuset_cpus is None
    assert spec_of(make_pod("ls", LS), "main", static).cpuset_cpus == frozenset(range(8))
    system = make_pod("sys", SYSTEM)
    assert spec_of(system, "main", CONFIG).cpuset_cpus is None
    assert spec_of(system, "main", replace(CONFIG, system_qos_cpus=frozenset({0}))).cpuset_cpus == {0}
    assert spec_of(make_pod("ls", LS), "main", HookConfig()) == EMPTY_SPEC


@pytest.mark.parametrize("qos,k8s,bvt", [
    (LSE, None, 2), (LSR, None, 2), (LS, None, 2), (BE, None, -1),
    # no class, or SYSTEM: the kube QoS tier's value, as koordlet gives them
    (SYSTEM, QoSTier.BURSTABLE, 2), (KoordQoSClass.NONE, QoSTier.BESTEFFORT, -1),
])
def test_group_identity_bvt_per_class_on_pod_only(qos, k8s, bvt) -> None:
    pod = make_pod("p", qos, k8s=k8s)
    only = enabled_hooks(lambda g: g == "GroupIdentity")
    assert spec_of(pod, None, BVT_HOST, hooks=only).bvt == bvt
    assert spec_of(pod, "main", BVT_HOST, hooks=only) == EMPTY_SPEC
    assert spec_of(pod, None, CONFIG, hooks=only) == EMPTY_SPEC  # kernel without bvt


def test_group_identity_cpu_idle_for_be_on_v2_only() -> None:
    v2 = replace(CONFIG, host=HostCaps(cgroup_version=2, cpu_idle_supported=True))
    only = enabled_hooks(lambda g: g == "GroupIdentity")
    assert spec_of(make_pod("be", BE), None, v2, hooks=only) == ResourceSpec(cpu_idle=1)
    assert spec_of(make_pod("ls", LS), None, v2, hooks=only) == EMPTY_SPEC
    v1 = replace(CONFIG, host=HostCaps(cgroup_version=1, cpu_idle_supported=True))
    assert spec_of(make_pod("be", BE), None, v1, hooks=only) == EMPTY_SPEC


def test_qos_dirs_follow_be_and_ls_values() -> None:
    specs = qos_dir_specs(BVT_HOST)
    assert {tier: s.bvt for tier, s in specs.items()} == {
        QoSTier.BESTEFFORT: -1, QoSTier.BURSTABLE: 2, QoSTier.GUARANTEED: 0}
    assert qos_dir_specs(CONFIG) == {}


def test_gates_switch_hooks_off() -> None:
    pod = make_pod("be", BE, annotations={ANNOT: ext_spec(main=batch("500", "1Gi"))})
    assert decide(pod, pod.container("main"), BVT_HOST, NO_ALLOCATIONS, enabled_hooks(lambda g: False)) == EMPTY_SPEC
    gates = resolve({"BatchResource": False})
    spec = decide(pod, pod.container("main"), BVT_HOST, NO_ALLOCATIONS, enabled_hooks(gates.enabled))
    assert spec.cpu_shares is None and spec.cpuset_cpus == frozenset(range(8))


def test_combine_first_owner_wins_and_unified_merges() -> None:
    first = ResourceSpec(cpu_shares=2, unified=MappingProxyType({"memory.high": "1"}))
    second = ResourceSpec(cpu_shares=1024, memory_limit=5, unified=MappingProxyType({"memory.high": "2", "x": "y"}))
    merged = combine([first, second])
    assert (merged.cpu_shares, merged.memory_limit, dict(merged.unified)) == (2, 5, {"memory.high": "1", "x": "y"})


def test_plan_covers_pod_and_live_containers() -> None:
    pod = make_pod("be", BE, ("a", "b"), annotations={ANNOT: ext_spec(a=batch("500", "1Gi"), b=batch("500", "1Gi"))})
    plan = plan_pod(pod, BVT_HOST, NO_ALLOCATIONS, HOOKS)
    assert plan.spec.cpu_shares == 1024 and plan.spec.bvt == -1
    assert [c.spec.cpu_shares for c in plan.containers] == [512, 512]
    assert plan.to_json()["containers"][0]["spec"]["cpuset_cpus"] == "0-7"


def test_provider_change_moves_the_shared_pools() -> None:
    from koordlet.runtimehooks.engine import HookEngine
    from koordlet.statesinformer.api import StaticStates
    from koordlet.statesinformer.model import NodeInfo

    class Orm:
        def __init__(self) -> None:
            self.bound: dict[str, frozenset[int]] = {}

        def cpuset_for(self, pod_uid: str, container_name: str):
            return self.bound.get(pod_uid)

    orm = Orm()
    ded = make_pod("ded", LS, katalyst=KatalystQoSLevel.DEDICATED_CORES)
    ls = make_pod("ls", LS)
    engine = HookEngine(StaticStates(NodeInfo("n"), [ded, ls]), CONFIG, HOOKS, provider=orm)
    engine.start()
    heard: list = []
    engine.add_listener(heard.append)
    assert engine.plan(ls).containers[0].spec.cpuset_cpus == frozenset(range(8))
    orm.bound["ded"] = frozenset({0, 1})
    engine.allocations_changed()
    assert heard == [None]
    assert engine.plan(ls).containers[0].spec.cpuset_cpus == frozenset(range(2, 8))
    assert engine.plan(ded).containers[0].spec.cpuset_cpus == {0, 1}


def test_the_index_says_the_pools_moved_only_when_a_cpu_joins_or_leaves_a_union() -> None:
    index = AllocationIndex()
    first = make_pod("lsr1", LSR, annotations={STATUS: '{"cpuset": "0"}'})
    second = make_pod("lsr2", LSR, annotations={STATUS: '{"cpuset": "0"}'})
    assert index.put(first) is True  # CPU 0 leaves the share pool
    assert index.put(second) is False  # already reserved: no pod's pool moves
    assert index.snapshot().reserved == {0}
    assert index.remove("lsr1") is False  # lsr2 still holds CPU 0
    assert index.put(make_pod("lsr2", LSR, annotations={STATUS: '{"cpuset": "0-1"}'})) is True  # CPU 1 joins
    assert index.snapshot().reserved == {0, 1}
    assert index.put(make_pod("lsr2", LSE, annotations={STATUS: '{"cpuset": "0-1"}'})) is True  # now exclusive
    assert index.snapshot() == CpuAllocations(exclusive=frozenset({0, 1}))
    assert index.remove("lsr2") is True and index.snapshot() == CpuAllocations()
    assert index.remove("gone") is False


def test_specs_without_unified_files_share_one_read_only_empty_mapping() -> None:
    pod_spec, container_spec = ResourceSpec(cpu_shares=2), ResourceSpec(memory_limit=1 << 20)
    assert pod_spec.unified is container_spec.unified is EMPTY_SPEC.unified
    assert dict(pod_spec.unified) == {}
    with pytest.raises(TypeError):
        pod_spec.unified["cpu.weight"] = "100"  # type: ignore[index]
    merged = pod_spec.merged(ResourceSpec(unified=MappingProxyType({"cpu.idle": "1"})))
    assert dict(merged.unified) == {"cpu.idle": "1"} and dict(EMPTY_SPEC.unified) == {}


def test_the_pods_document_is_built_in_steps_of_pods_in_name_order():
    plans = [PodPlan("uid-%d" % i, "ns", "pod-%03d" % (99 - i), KoordQoSClass.BE, "/kubepods/pod%d" % i,
                     ResourceSpec(cpu_shares=512 + i),
                     (ContainerPlan("main", "ctr-%d" % i, "/kubepods/pod%d/ctr" % i, ResourceSpec(cfs_quota=1000)),))
             for i in range(3 * PODS_PER_STEP + 1)]
    yields, document = driven(plans_json_steps(plans))
    assert yields == 3  # a yield between every PODS_PER_STEP pods, none before the first
    names = [entry["name"] for entry in document["pods"]]
    assert names == sorted(plan.name for plan in plans)
    assert document == plans_json(plans) == {"pods": [plan.to_json() for plan in sorted(plans, key=lambda p: p.name)]}
    assert document["pods"][0] == plans[-1].to_json()  # the last made has the first name


def test_plans_of_pods_decided_alike_share_their_spec_objects() -> None:
    from koordlet.runtimehooks.engine import HookEngine
    from koordlet.statesinformer.api import StaticStates
    from koordlet.statesinformer.model import NodeInfo

    pods = [make_pod("ls%d" % i, LS) for i in range(3)] + [make_pod("be0", BE, annotations={ANNOT: ext_spec(
        main=batch("500", "1Gi"))})]
    engine = HookEngine(StaticStates(NodeInfo("n"), pods), CONFIG, HOOKS)
    engine.start()
    first, second, third, be = map(engine.plan, pods)
    assert first.spec is second.spec is third.spec
    assert first.containers[0].spec is second.containers[0].spec is third.containers[0].spec
    assert be.containers[0].spec != first.containers[0].spec
    assert be.containers[0].spec == plan_pod(pods[3], CONFIG, NO_ALLOCATIONS, HOOKS).containers[0].spec
    engine._shared_specs.limit = 1
    engine.set_config(replace(CONFIG, enable_cfs_quota=False))  # new plans, decided again
    assert engine.plan(pods[3]).containers[0].spec.cfs_quota == -1 and len(engine._shared_specs) <= 1


def test_specs_that_differ_only_in_v2_files_are_equal_in_hash_not_in_value() -> None:
    plain = ResourceSpec(cpu_idle=1)
    with_weight = ResourceSpec(cpu_idle=1, unified=MappingProxyType({"cpu.weight": "20"}))
    assert hash(plain) == hash(with_weight) and plain != with_weight
    assert {plain: 1, with_weight: 2} == {ResourceSpec(cpu_idle=1): 1, with_weight: 2}
