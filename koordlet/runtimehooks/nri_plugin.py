"""The NRI transport: koordlet's plugin on the `nri.Stub`.

Subscribed events (the stub derives the mask from the handlers defined here):
RunPodSandbox (pod-level cgroups through the executor: NRI cannot adjust them),
CreateContainer (the ContainerAdjustment), UpdateContainer (re-assert what we
own over kubelet's update), RemoveContainer and RemovePodSandbox (forget).
Nothing else: PostCreateContainer and ValidateContainerAdjustment would each add
a round trip to every CRI CreateContainer, StartContainer/StopContainer carry
nothing the policy uses.

Every event feeds the states informer first; the decision then reads the pod and
container back from it, so NRI and the reconciler decide from the same values.
When a plan changes for containers that already run (an LSR pod took CPUs from
the shared pool), unsolicited UpdateContainers go out from a separate task,
never from inside a handler (containerd would wait on its own lock).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable

import structlog

from koordlet.runtimehooks import nri_convert
from koordlet.runtimehooks.engine import DecisionInputs, HookEngine
from koordlet.runtimehooks.follow_ups import FollowUps
from koordlet.runtimehooks.reconciler import updaters_for
from koordlet.runtimehooks.shared import SharedValues
from koordlet.runtimehooks.spec import ResourceSpec
from koordlet.statesinformer.from_nri import container_info
from koordlet.statesinformer.model import ContainerInfo, ContainerState, PodInfo
from koordlet.statesinformer.nri_feed import ContainerChange, NriFeed, SandboxChange
from koordlet.util.steps import PODS_PER_STEP
from nri.stub import NotConnected, Stub
from nri.stub.results import EncodedResponse
from nri.ttrpc.status import TtrpcError
from proto.nri.pkg.api.v1alpha1 import api_pb2 as api
from resourceexecutor import ResourceExecutor
from system.cpuset import format_cpuset

log = structlog.get_logger(__name__)

# Kernel list text of a cpu set: the shared pools repeat on every call.
_cpu_list = lru_cache(maxsize=1024)(format_cpuset)

# A CreateContainer answer: the spec and the CreateContainerResponse of its adjustment,
# encoded. A pod's answers are kept for its next containers, as bytes: a kept message costs
# ~1.6 KB (its upb arena) against ~70 B, and the stub writes the bytes as they are.
Answer = tuple[ResourceSpec, EncodedResponse | None]

# Distinct answers the plugin keeps to hand the same objects to every pod that gets an equal
# one (pods of one workload are decided alike): ~250 bytes an answer.
SHARED_ANSWERS = 1024

# a module global: an Enum member read through its class costs a Python-level lookup on 3.11
_CREATED = ContainerChange.CREATED

# Container updates in one unsolicited UpdateContainers: bounds the message built and
# encoded in one go (and the runtime's work per request) at node scale.
UPDATES_PER_CALL = 100


@dataclass(slots=True)
class PodAnswers:
    """CreateContainer answers for one pod while `inputs` hold: one per name a hook tells
    apart (`named`; None: every name), one ("") for every other new container."""

    inputs: DecisionInputs
    named: frozenset[str] | None
    by_name: dict[str, Answer] = field(default_factory=dict)

    def key(self, container_name: str) -> str:
        return container_name if self.named is None or container_name in self.named else ""


class KoordletNriPlugin:
    def __init__(self, engine: HookEngine, feed: NriFeed, executor: ResourceExecutor,
                 on_synchronized: Callable[[], None] = lambda: None,
                 admit: Callable[[PodInfo, ContainerInfo | None], None] | None = None) -> None:
        self.engine = engine
        # An out-of-band allocator's admission (the ORM's admit_now): raises to fail the
        # container with its reason, before the cpuset is decided.
        self._admit = admit
        self.feed = feed
        self._executor = executor
        self._on_synchronized = on_synchronized
        self.stub: Stub | None = None
        self._sent: dict[str, ResourceSpec] = {}  # container id -> spec the runtime holds from us
        self._pending: set[str] | None = set()  # pods whose running containers may need an update; None: all
        self._flush_task: asyncio.Task[None] | None = None
        self._feeding: str | None = None  # the pod an event handler is feeding right now
        self._answers: dict[str, PodAnswers] = {}  # pod uid -> answers reusable while its inputs hold
        self._shared: SharedValues[bytes, Answer] = SharedValues(SHARED_ANSWERS)  # by encoded response
        # what a handler leaves for after its answer; before_event runs it before the next handler
        self.follow_ups = FollowUps()
        engine.add_listener(self._plans_changed)

    @property
    def cgroup_version(self) -> int:
        return self.engine.config.host.cgroup_version

    # -- handlers (their names are the subscription) -----------------------------------

    def before_event(self) -> None:
        """The stub calls this before every handler: what the last handler left runs
        first, so the informer hears events in the runtime's order."""
        self.follow_ups.run()

    def synchronize(self, pods: list[api.PodSandbox], containers: list[api.Container]) -> list[api.ContainerUpdate]:
        self.feed.nri_synchronized(pods, containers)
        self._sent.clear()
        updates = []
        by_sandbox = {info.sandbox_id: info for info in self.engine.states.pods()}
        for container in containers:
            spec = self._container_spec(by_sandbox.get(container.pod_sandbox_id), container.id, "synchronize")
            if spec is None:
                continue
            self._sent[container.id] = spec
            if not nri_convert.holds(container.linux.resources, spec, self.cgroup_version, _cpu_list):
                message = nri_convert.update(container.id, spec, self.cgroup_version, _cpu_list)
                if message is not None:
                    updates.append(message)
        self._on_synchronized()
        return updates

    def _feed_pod(self, kind: SandboxChange, pod: api.PodSandbox) -> None:
        self._feeding = pod.uid
        try:
            self.feed.nri_pod_event(kind, pod)
        finally:
            self._feeding = None

    def _feed_container(self, kind: ContainerChange, pod: api.PodSandbox, container: api.Container,
                        resources: api.LinuxResources | None = None) -> None:
        self._feeding = pod.uid
        try:
            self.feed.nri_container_event(kind, pod, container, resources)
        finally:
            self._feeding = None

    async def run_pod_sandbox(self, pod: api.PodSandbox) -> None:
        """The pod's own cgroup values written (in the executor's IO thread) before the
        answer, as koordlet does in its RunPodSandbox hook."""
        self._feed_pod(SandboxChange.RUN, pod)
        info = self.engine.states.pod(pod.uid)
        executor = self._executor
        if info is None or not info.cgroup_parent:
            return
        spec = self.engine.decide(info, None, "run_pod_sandbox")
        if not spec.empty:
            await executor.apply_batch(updaters_for(executor, spec, info.cgroup_parent))
        # after this answer is on its way, before the runtime's next request is read
        asyncio.get_running_loop().call_soon(self._prepare_answers, pod.uid)

    def _prepare_answers(self, pod_uid: str) -> None:
        """Decide, off the CreateContainer path, the answers the pod's new containers will
        get: one per name a hook tells apart, one for every other name. Nothing when any
        name may be decided differently."""
        info = self.engine.states.pod(pod_uid)
        if info is None:
            return
        known = self._pod_answers(info)
        if known is None or known.named is None:
            return
        for name in ("", *sorted(known.named)):
            if name not in known.by_name:
                placeholder = ContainerInfo(id="", name=name, pod_uid=info.uid, state=ContainerState.CREATED,
                                            cgroup_dir="")
                known.by_name[name] = self._shared_answer(self.engine.decide(info, placeholder, "create_container"))

    def remove_pod_sandbox(self, pod: api.PodSandbox) -> None:
        self._answers.pop(pod.uid, None)
        self._feed_pod(SandboxChange.REMOVE, pod)

    def create_container(self, pod: api.PodSandbox,
                         container: api.Container) -> api.ContainerAdjustment | EncodedResponse | None:
        info = self.engine.states.pod(pod.uid)
        if info is None:  # the sandbox was never seen: the informer must hear of it first
            self._feed_container(ContainerChange.CREATED, pod, container)
            fed = self.engine.states.pod(pod.uid)
            if self._admit is not None and fed is not None:
                self._admit(fed, fed.container_by_id(container.id))
            spec = self._container_spec(fed, container.id, "create_container")
            if spec is None:
                return None
            self._sent[container.id] = spec
            return self._adjustment(spec)
        # Decide (or reuse the decision) and feed the informer once the runtime has read the
        # answer: the feed is most of the handler's cost and the CRI call waits for us.
        spec, encoded = self._answer(info, container)
        self.follow_ups.add(self._feed_container, _CREATED, pod, container)
        self._sent[container.id] = spec
        return encoded

    def _answer(self, info: PodInfo, container: api.Container) -> Answer:
        """The answer for a new container of a known pod: the one prepared or given before
        while the pod's decision inputs are unchanged, else decided now.  Only the
        container's name can count: NRI brings no kubelet spec."""
        known = self._pod_answers(info)
        if known is not None:
            answer = known.by_name.get(known.key(container.name))
            if answer is not None:
                return answer
        created, _ = container_info(container, info.uid)
        if self._admit is not None:
            self._admit(info, created)
        answer = self._shared_answer(self.engine.decide(info, created, "create_container"))
        if known is not None:
            known.by_name[known.key(container.name)] = answer
        return answer

    def _same_inputs(self, inputs: DecisionInputs, info: PodInfo) -> bool:
        """The kept inputs are the very objects the pod and the engine hold now: then they
        are equal, found without building the pod's DecisionInputs (~5 us of an answer with
        the caches cold)."""
        engine = self.engine
        return (inputs.annotations is info.annotations and inputs.qos is info.qos and inputs.config is engine.config
                and inputs.allocations is engine.index.snapshot())

    def _pod_answers(self, info: PodInfo) -> PodAnswers | None:
        """The pod's reusable answers, emptied when its inputs changed; None when nothing
        may be reused (an admitting allocator decides per container)."""
        if self._admit is not None:
            return None
        known = self._answers.get(info.uid)
        if known is not None and self._same_inputs(known.inputs, info):
            return known
        inputs = self.engine.container_inputs(info)
        if inputs is None:
            return None
        if known is None or known.inputs != inputs:
            known = self._answers[info.uid] = PodAnswers(inputs, self.engine.named_containers(info))
        else:
            known.inputs = inputs  # equal: kept as the objects held now, for _same_inputs
        return known

    def _adjustment(self, spec: ResourceSpec) -> api.ContainerAdjustment | None:
        return nri_convert.adjustment(spec, self.cgroup_version, _cpu_list)

    def _encoded_answer(self, spec: ResourceSpec) -> EncodedResponse | None:
        adjustment = self._adjustment(spec)
        if adjustment is None:
            return None
        return EncodedResponse(api.CreateContainerResponse(adjust=adjustment).SerializeToString())

    def _shared_answer(self, spec: ResourceSpec) -> Answer:
        """The answer for `spec`: the objects handed out before for an equal spec (kept a
        pod, they would be copies: the spec, its encoded response, their pair)."""
        encoded = self._encoded_answer(spec)
        if encoded is None:
            return spec, None
        kept = self._shared.get(encoded)
        return kept if kept is not None and kept[0] == spec else self._shared.keep(encoded, (spec, encoded))

    def update_container(self, pod: api.PodSandbox, container: api.Container,
                         resources: api.LinuxResources) -> list[api.ContainerUpdate]:
        self._feed_container(ContainerChange.UPDATED, pod, container, resources)
        spec = self._container_spec(self.engine.states.pod(pod.uid), container.id, "update_container")
        if spec is None or nri_convert.holds(resources, spec, self.cgroup_version, _cpu_list):
            return []
        self._sent[container.id] = spec
        message = nri_convert.update(container.id, spec, self.cgroup_version, _cpu_list)
        return [message] if message is not None else []

    def post_start_container(self, pod: api.PodSandbox, container: api.Container) -> None:
        """The container runs: the informer marks it running, which is what the collectors
        (usage, throttling, PSI, CPI) and CPU burst go by. After the start, so no round trip
        on the pod's CreateContainer path."""
        self._feed_container(ContainerChange.STARTED, pod, container)

    def remove_container(self, pod: api.PodSandbox, container: api.Container) -> None:
        self._sent.pop(container.id, None)
        self._feed_container(ContainerChange.REMOVED, pod, container)

    # -- decisions ------------------------------------------------------------------

    def _container_spec(self, info: PodInfo | None, container_id: str, stage: str) -> ResourceSpec | None:
        container = info.container_by_id(container_id) if info is not None else None
        if info is None or container is None:
            log.warning("nri_container_unknown_to_informer", container=container_id, stage=stage)
            return None
        return self.engine.decide(info, container, stage)

    async def close(self) -> None:
        """Run what handlers left and cancel a pending unsolicited update (the daemon is
        stopping)."""
        self.follow_ups.run()
        task, self._flush_task = self._flush_task, None
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    # -- unsolicited updates ----------------------------------------------------------

    def _plans_changed(self, changed: frozenset[str] | None) -> None:
        self._forget_answers(changed)
        if self.stub is None or not self._sent:
            return
        if changed is not None and changed == {self._feeding}:
            return  # the handler feeding this pod answers for its container; siblings do not depend on it
        if changed is None or self._pending is None:
            self._pending = None
        else:
            self._pending |= changed
        if self._flush_task is None or self._flush_task.done():
            self._flush_task = asyncio.get_running_loop().create_task(self._flush())

    def _forget_answers(self, changed: frozenset[str] | None) -> None:
        """Drop answers of pods gone from the informer (however they went) and, when the
        rules or the node's allocations moved, all of them.  A pod that changed keeps its
        entry: its inputs are compared at the next CreateContainer."""
        if not self._answers:
            return
        if changed is None:
            self._answers.clear()
            return
        pod = self.engine.states.pod
        for uid in changed:
            if uid in self._answers and pod(uid) is None:
                del self._answers[uid]

    async def _flush(self) -> None:
        """Send the running containers' changed specs, until no change is pending: a
        change landing while this task yields or waits on the runtime is picked up by the
        next round (no new task is started while this one runs)."""
        await asyncio.sleep(0)  # gather a burst of changes (and let the handler return)
        while self._pending is None or self._pending:
            pending, self._pending = self._pending, set()
            updates = await self._changed_updates(pending)
            if self.stub is None:
                return
            # in order, a bounded message at a time: one UpdateContainers of 2,000 updates
            # held the loop tens of ms to build and encode
            for start in range(0, len(updates), UPDATES_PER_CALL):
                chunk = updates[start:start + UPDATES_PER_CALL]
                try:
                    failed = await self.stub.update_containers(chunk)
                except (NotConnected, TtrpcError, ConnectionError) as exc:
                    # the reconciler repairs these; the next Synchronize resends them
                    log.info("nri_unsolicited_update_failed", containers=len(updates) - start, error=str(exc))
                    return
                log.info("nri_containers_updated", containers=len(chunk), failed=len(failed))

    async def _changed_updates(self, pending: set[str] | None) -> list[api.ContainerUpdate]:
        """Updates for the containers of `pending` pods (None: every pod) whose spec differs
        from what the runtime holds from us; the loop is given back every PODS_PER_STEP pods
        (deciding 1,000 pods' plans held it ~100 ms)."""
        uids = [pod.uid for pod in self.engine.states.pods()] if pending is None else list(pending)
        updates = []
        for start in range(0, len(uids), PODS_PER_STEP):
            if start:
                await asyncio.sleep(0)
            for uid in uids[start:start + PODS_PER_STEP]:
                pod = self.engine.states.pod(uid)  # as it is now: it may have gone while we yielded
                if pod is None:
                    continue
                for container in self.engine.plan(pod).containers:
                    sent = self._sent.get(container.container_id)
                    if sent is None or sent == container.spec:
                        continue
                    message = nri_convert.update(container.container_id, container.spec, self.cgroup_version,
                                                 _cpu_list)
                    self._sent[container.container_id] = container.spec
                    if message is not None:
                        updates.append(message)
        return updates
