"""CreateContainer answers reused per pod: the same adjustments as deciding afresh, and a
new decision as soon as the pod, the rules or the node's allocations change."""

from __future__ import annotations

import asyncio
import dataclasses

from prometheus_client import CollectorRegistry

from koordlet.runtimehooks import nri_convert
from koordlet.runtimehooks.engine import HookEngine
from koordlet.runtimehooks.hook_config import HookConfig
from koordlet.runtimehooks.hooks import HOOKS
from koordlet.runtimehooks.nri_plugin import KoordletNriPlugin
from koordlet.statesinformer.model import NodeInfo
from koordlet.statesinformer.nri_feed import ContainerChange, NriFeed, SandboxChange
from koordlet.statesinformer.store import PodStore
from nri.stub import results
from proto.nri.pkg.api.v1alpha1 import api_pb2 as api
from resourceexecutor import executor_without_cgroups
from system.cpuset import format_cpuset
from tests.koordlet.runtimehooks.fixtures import batch, ext_spec
from tests.koordlet.runtimehooks.nri_pods import nri_container, nri_pod

ANNOT = "node.koordinator.sh/extended-resource-spec"
STATUS = "scheduling.koordinator.sh/resource-status"
CONFIG = HookConfig(node_cpus=frozenset(range(8)))


class Rig:
    def __init__(self, config: HookConfig = CONFIG, registry: CollectorRegistry | None = None) -> None:
        self.store = PodStore(NodeInfo("node"))
        self.feed = NriFeed(self.store)
        self.engine = HookEngine(self.store, config, HOOKS, registry=registry)
        self.engine.start()
        self.plugin = KoordletNriPlugin(self.engine, self.feed, executor_without_cgroups())
        self.decisions = 0
        decide = self.engine.decide

        def counted(pod, container, stage):
            self.decisions += container is not None  # container decisions only
            return decide(pod, container, stage)

        self.engine.decide = counted  # type: ignore[method-assign]

    async def run(self, pod: api.PodSandbox) -> None:
        await self.plugin.run_pod_sandbox(pod)
        await asyncio.sleep(0)  # the answers are prepared after RunPodSandbox's own

    async def create(self, pod: api.PodSandbox, name: str, suffix: str = "") -> api.ContainerAdjustment | None:
        container = nri_container(pod, name)
        container.id = (container.id[:60] + suffix).ljust(64, "0")[:64]
        answer = self.plugin.create_container(pod, container)
        self.plugin.follow_ups.run()  # the informer's feed, as the runtime's next event would run it
        return adjustment_sent(answer)

    def fresh(self, pod: api.PodSandbox, name: str) -> api.ContainerAdjustment | None:
        """What deciding from scratch gives for a new container `name` of `pod`."""
        from koordlet.statesinformer.from_nri import container_info
        info, _ = container_info(nri_container(pod, name), pod.uid)
        engine = HookEngine(self.store, self.engine.config, HOOKS)
        engine.start()
        spec = engine.decide(self.store.pod(pod.uid), info, "test")
        return nri_convert.adjustment(spec, self.plugin.cgroup_version, format_cpuset)


def adjustment_sent(answer: object) -> api.ContainerAdjustment | None:
    """The adjustment the runtime reads from a handler's answer (the stub's response, encoded)."""
    encoded = results.create_container_response(answer)
    response = api.CreateContainerResponse.FromString(
        encoded if isinstance(encoded, bytes) else encoded.SerializeToString())
    return response.adjust if response.HasField("adjust") else None


def pods() -> list[api.PodSandbox]:
    return [nri_pod("be1", "BE", {ANNOT: ext_spec(main=batch("500", "1Gi"), side=batch("250", None))}),
            nri_pod("ls1", "LS"),
            nri_pod("lsr1", "LSR", {STATUS: '{"cpuset": "2"}'})]


async def test_a_reused_answer_is_the_answer_decided_afresh() -> None:
    rig = Rig()
    for pod in pods():
        await rig.run(pod)
        for name in ("main", "side", "other"):
            first = await rig.create(pod, name, "a")
            again = await rig.create(pod, name, "b")  # a restart: same name, new id
            assert first == again == rig.fresh(pod, name)
    # all prepared after RunPodSandbox: BE (sized by name from its annotation) the unnamed
    # answer, main's and side's; LS and LSR the unnamed one, which serves every container
    assert rig.decisions == 5


async def test_a_kept_answer_is_handed_out_as_a_message_of_its_own() -> None:
    rig = Rig()
    be = pods()[0]
    await rig.run(be)
    first = await rig.create(be, "main", "a")
    assert first is not None
    first.linux.resources.cpu.quota.value = 1  # what a caller does to its message stays there
    again = await rig.create(be, "main", "b")
    assert again is not first and again == rig.fresh(be, "main")
    assert again.linux.resources.cpu.quota.value == 50000


async def test_run_pod_sandbox_prepares_each_name_told_apart_and_one_for_the_rest() -> None:
    rig = Rig()
    be, ls, _ = pods()
    await rig.run(ls)
    assert rig.decisions == 1
    await rig.create(ls, "main", "a")
    await rig.create(ls, "side", "a")
    assert rig.decisions == 1
    await rig.run(be)
    assert rig.decisions == 4  # its annotation sizes main and side by name; any other name alike
    quotas = {n: (await rig.create(be, n, "a")).linux.resources.cpu.quota.value for n in ("main", "side", "init")}
    assert quotas == {"main": 50000, "side": 25000, "init": 0}  # init: not in the annotation, no quota set
    assert rig.decisions == 4


async def test_an_unparsable_annotation_prepares_nothing() -> None:
    rig = Rig()
    broken = nri_pod("be2", "BE", {ANNOT: "{not json"})
    await rig.run(broken)
    assert rig.decisions == 0  # any name may be sized differently: decided at CreateContainer
    await rig.create(broken, "main", "a")
    await rig.create(broken, "main", "b")
    assert rig.decisions == 1


async def test_pods_told_apart_by_the_same_names_share_one_name_set() -> None:
    rig = Rig()
    spec = ext_spec(main=batch("500", "1Gi"), side=batch("250", None))
    kept = [nri_pod("be1", "BE", {ANNOT: spec}), nri_pod("be2", "BE", {ANNOT: spec}), nri_pod("ls1", "LS"),
            nri_pod("ls2", "LS")]
    for pod in kept:
        await rig.run(pod)
    named = [rig.plugin._answers[pod.uid].named for pod in kept]
    assert named == [{"main", "side"}, {"main", "side"}, set(), set()]
    assert named[0] is named[1] and named[2] is named[3]  # kept a pod: one object per distinct set


async def test_pods_decided_alike_are_handed_the_same_answer_objects() -> None:
    rig = Rig()
    spec = ext_spec(main=batch("500", "1Gi"), side=batch("250", None))
    alike = [nri_pod("be1", "BE", {ANNOT: spec}), nri_pod("be2", "BE", {ANNOT: spec})]
    other = nri_pod("be3", "BE", {ANNOT: ext_spec(main=batch("1000", "1Gi"))})
    for pod in (*alike, other):
        await rig.run(pod)
    first, second, third = (rig.plugin._answers[pod.uid].by_name for pod in (*alike, other))
    assert first["main"] is second["main"] and first["side"] is second["side"]  # spec, bytes and pair shared
    assert third["main"] != first["main"]
    assert (await rig.create(other, "main", "a")).linux.resources.cpu.quota.value == 100000
    for pod in alike:
        assert await rig.create(pod, "main", "a") == rig.fresh(pod, "main")
    rig.plugin._shared.limit = 2
    await rig.run(nri_pod("be4", "BE", {ANNOT: ext_spec(main=batch("700", "1Gi"))}))
    assert len(rig.plugin._shared) <= 2  # bounded: cleared when full


async def test_a_changed_pod_is_decided_again() -> None:
    rig = Rig()
    be = pods()[0]
    await rig.run(be)
    assert (await rig.create(be, "main", "a")).linux.resources.cpu.quota.value == 50000
    assert rig.decisions == 3  # prepared: unnamed, main, side
    updated = api.PodSandbox()
    updated.CopyFrom(be)  # the runtime sends a new message
    updated.annotations[ANNOT] = ext_spec(main=batch("1000", "1Gi"))
    rig.feed.nri_pod_event(SandboxChange.UPDATE, updated)
    assert (await rig.create(be, "main", "b")).linux.resources.cpu.quota.value == 100000
    assert rig.decisions == 4


async def test_new_rules_are_decided_again() -> None:
    rig = Rig()
    be = pods()[0]
    await rig.run(be)
    await rig.create(be, "main", "a")
    rig.engine.set_config(dataclasses.replace(CONFIG, enable_cfs_quota=False))
    assert (await rig.create(be, "main", "b")).linux.resources.cpu.quota.value == -1
    assert rig.decisions == 4  # three prepared, main's again under the new rule


async def test_moved_allocations_are_decided_again() -> None:
    rig = Rig()
    ls = pods()[1]
    await rig.run(ls)
    assert (await rig.create(ls, "main", "a")).linux.resources.cpu.cpus == "0-7"
    lsr = pods()[2]
    await rig.run(lsr)  # takes CPU 2 from the shared pool
    await rig.create(lsr, "main", "a")
    assert (await rig.create(ls, "main", "b")).linux.resources.cpu.cpus == "0-1,3-7"
    assert rig.decisions == 3  # ls prepared, lsr prepared, ls again after the pool moved


async def test_a_removed_pod_leaves_no_answers() -> None:
    rig = Rig()
    ls = pods()[1]
    await rig.run(ls)
    await rig.create(ls, "main", "a")
    assert rig.plugin._answers
    rig.plugin.remove_pod_sandbox(ls)
    assert not rig.plugin._answers


async def test_hook_timings_are_observed_after_the_handler() -> None:
    registry = CollectorRegistry()
    rig = Rig(registry=registry)
    ls = pods()[1]
    await rig.run(ls)
    container = nri_container(ls, "main")
    rig.plugin.create_container(ls, container)
    name = "koordlet_runtime_hook_duration_seconds_count"
    labels = {"hook": "CPUSetAllocator", "stage": "create_container"}
    assert registry.get_sample_value(name, labels) == 0.0  # not yet: the answer goes first
    await asyncio.sleep(0)
    assert registry.get_sample_value(name, labels) == 1.0


def test_hook_timings_without_a_loop_are_observed_at_once() -> None:
    registry = CollectorRegistry()
    store = PodStore(NodeInfo("node"))
    engine = HookEngine(store, CONFIG, HOOKS, registry=registry)
    feed = NriFeed(store)
    ls = pods()[1]
    feed.nri_pod_event(SandboxChange.RUN, ls)
    feed.nri_container_event(ContainerChange.CREATED, ls, nri_container(ls, "main"))
    engine.plan(store.pod("ls1"))
    assert registry.get_sample_value("koordlet_runtime_hook_duration_seconds_count",
                                     {"hook": "CPUSetAllocator", "stage": "reconcile"}) == 2.0


async def test_a_kept_answer_is_handed_to_the_stub_as_the_encoded_response_of_the_fresh_one() -> None:
    rig = Rig()
    be = pods()[0]
    await rig.run(be)
    answer = rig.plugin.create_container(be, nri_container(be, "main"))
    assert isinstance(answer, results.EncodedResponse)  # the stub writes it as it is
    assert answer == api.CreateContainerResponse(adjust=rig.fresh(be, "main")).SerializeToString()


async def test_a_kept_answer_is_found_without_building_the_pods_decision_inputs_again() -> None:
    rig = Rig()
    built: list[str] = []
    container_inputs = rig.engine.container_inputs

    def counted(pod):
        built.append(pod.uid)
        return container_inputs(pod)

    rig.engine.container_inputs = counted  # type: ignore[method-assign]
    be = pods()[0]
    await rig.run(be)
    built.clear()
    first = await rig.create(be, "main", "a")
    again = await rig.create(be, "main", "b")
    assert built == []  # the pod and the engine hold the very inputs the answers were kept for
    assert first == again == rig.fresh(be, "main")
    kept = rig.plugin._answers[be.uid]
    kept.inputs = kept.inputs._replace(annotations=dict(kept.inputs.annotations))  # equal, another object
    assert await rig.create(be, "main", "c") == rig.fresh(be, "main")
    assert built == [be.uid]  # compared once, then kept as the objects held now
    await rig.create(be, "main", "d")
    assert built == [be.uid]
