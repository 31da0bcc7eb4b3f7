"""PodStore: merging NRI, CRI and kubelet, events on real change only, forgetting."""

from __future__ import annotations

import weakref

from hypothesis import given, settings
from hypothesis import strategies as st

from koordlet.apis.qos import KoordQoSClass
from koordlet.statesinformer.from_kubelet import KubeletPod
from koordlet.statesinformer.from_nri import container_info, sandbox_view
from koordlet.statesinformer.merge import merge_pod
from koordlet.statesinformer.model import (
    ContainerState,
    NodeInfo,
    PodEvent,
    PodEventKind,
    PodInfo,
    Resources,
    SandboxState,
    Source,
)
from koordlet.statesinformer.nri_feed import ContainerChange, NriFeed, SandboxChange
from koordlet.statesinformer.pod_sum import KeptPodSum
from koordlet.statesinformer.store import TOMBSTONE_SECONDS, PodStore
from proto.nri.pkg.api.v1alpha1 import api_pb2
from system.cgroup_layout import QoSTier
from tests.koordlet.statesinformer.nri_capture import plugin_requests
from tests.koordlet.statesinformer.nri_fixtures import container, container_dir, sandbox, uid_of

NODE = NodeInfo("node-a")


class Recorder:
    def __init__(self, store: PodStore) -> None:
        self.events: list[PodEvent] = []
        self.gone: list[str] = []
        store.subscribe(self.events.append)
        store.on_cgroup_gone = self.gone.append

    def kinds(self) -> list[tuple[PodEventKind, str]]:
        return [(e.kind, e.pod.uid) for e in self.events]


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


_FEEDS: weakref.WeakKeyDictionary[PodStore, NriFeed] = weakref.WeakKeyDictionary()


def nri(store: PodStore) -> NriFeed:
    """The store's NRI adapter (one per store, as the plugin holds one)."""
    if store not in _FEEDS:
        _FEEDS[store] = NriFeed(store)
    return _FEEDS[store]


def new_store(**kwargs) -> tuple[PodStore, Recorder, Clock]:
    clock = Clock()
    store = PodStore(NODE, clock=clock, **kwargs)
    return store, Recorder(store), clock


def cri_listing(*pairs: tuple[api_pb2.PodSandbox, list[api_pb2.Container]]):
    """Views as the CRI converter would give them (same facts, source CRI)."""
    import dataclasses

    views, containers = [], []
    for sb, ctrs in pairs:
        view = sandbox_view(sb)
        views.append(dataclasses.replace(view, pod=dataclasses.replace(view.pod, sources=frozenset({Source.CRI}))))
        for ctr in ctrs:
            containers.append((sb.id, container_info(ctr, sb.uid)[0]))
    return views, containers


# ---- the real containerd session, replayed

_SANDBOX_METHODS = {"RunPodSandbox": SandboxChange.RUN, "UpdatePodSandbox": SandboxChange.UPDATE,
                    "StopPodSandbox": SandboxChange.STOP, "RemovePodSandbox": SandboxChange.REMOVE}
_CONTAINER_METHODS = {"CreateContainer": ContainerChange.CREATED, "StartContainer": ContainerChange.STARTED,
                      "UpdateContainer": ContainerChange.UPDATED, "StopContainer": ContainerChange.STOPPED,
                      "RemoveContainer": ContainerChange.REMOVED}


def feed_capture(store: PodStore) -> None:
    for method, request in plugin_requests():
        if method == "Synchronize":
            nri(store).nri_synchronized(request.pods, request.containers)
        elif method in _SANDBOX_METHODS:
            nri(store).nri_pod_event(_SANDBOX_METHODS[method], request.pod)
        elif method in _CONTAINER_METHODS:
            nri(store).nri_container_event(_CONTAINER_METHODS[method], request.pod, request.container)


def test_the_captured_containerd_session_ends_with_nothing_known_and_every_cgroup_forgotten() -> None:
    store, rec, _ = new_store(expected=[Source.NRI])
    assert not store.synced()
    feed_capture(store)
    assert store.synced()
    assert store.pods() == ()
    assert {k: v for k, v in store.counts().items() if v and k[0] != "tombstones"} == {}
    pre, captured = "b6a55975-c650-465b-b4cc-f6bc6f380edf", "08806dbd-fccd-4af6-bbfd-9f016b81c554"
    assert rec.kinds()[0] == (PodEventKind.ADDED, pre)
    assert (PodEventKind.ADDED, captured) in rec.kinds()
    assert [k for k in rec.kinds() if k[0] is PodEventKind.DELETED] == [
        (PodEventKind.DELETED, captured), (PodEventKind.DELETED, pre)]
    # both containers' dirs and both pod dirs were handed to forget_cgroup
    assert sorted(rec.gone) == sorted([
        "kubepods/burstable/pod%s/%s" % (pre, "0d895407f96aa5d736f2530a27cc088200e960fadc09811df7acc13dbcd44d42"),
        "kubepods/burstable/pod%s" % pre,
        "kubepods/burstable/pod%s/%s" % (captured, "d38a456b71723bc55e48cd94fe16dd776ed1b6d3bc0dba691297c95dd762e97a"),
        "kubepods/burstable/pod%s" % captured,
    ])


def test_the_captured_update_changes_the_container_linux_resources() -> None:
    store, rec, _ = new_store()
    updates: list[PodInfo] = []
    for method, request in plugin_requests():
        if method == "Synchronize":
            nri(store).nri_synchronized(request.pods, request.containers)
        elif method == "RunPodSandbox":
            nri(store).nri_pod_event(SandboxChange.RUN, request.pod)
        elif method in ("CreateContainer", "StartContainer", "UpdateContainer"):
            update = request.linux_resources if method == "UpdateContainer" else None
            nri(store).nri_container_event(_CONTAINER_METHODS[method], request.pod, request.container, update)
            updates.append(store.pod(request.pod.uid))
    created, started, updated = (pod.containers[0] for pod in updates)
    # containerd 2.3.4 sent CreateContainer with state UNKNOWN and StartContainer with CREATED
    assert (created.state, started.state, updated.state) == (
        ContainerState.CREATED, ContainerState.RUNNING, ContainerState.RUNNING)
    # kubelet asked 512 shares; the capturing plugin adjusted them to 333, which StartContainer
    # and UpdateContainer carry; the update request asked for 300: the ask is what is kept
    assert (created.linux.cpu_shares, started.linux.cpu_shares, updated.linux.cpu_shares) == (512, 512, 300)
    assert updated.linux.cpu_period == 100000


# ---- events only on real change

def test_feeding_the_same_facts_again_emits_nothing() -> None:
    store, rec, _ = new_store()
    sb = sandbox(1)
    ctr = container(sb, "c1")
    nri(store).nri_synchronized([sb], [ctr])
    assert rec.kinds() == [(PodEventKind.ADDED, uid_of(1))]
    nri(store).nri_synchronized([sb], [ctr])
    nri(store).nri_pod_event(SandboxChange.UPDATE, sb)
    nri(store).nri_container_event(ContainerChange.UPDATED, sb, ctr)
    assert len(rec.events) == 1


def test_pods_is_the_same_tuple_until_a_pod_changes() -> None:
    store, _, _ = new_store()
    sb = sandbox(1)
    nri(store).nri_synchronized([sb], [container(sb, "c1")])
    listed = store.pods()
    nri(store).nri_synchronized([sb], [container(sb, "c1")])  # the same facts: nothing changed
    assert store.pods() is listed
    nri(store).nri_container_event(ContainerChange.UPDATED, sb, container(sb, "c1", shares=150),
                                   api_pb2.LinuxResources(cpu=api_pb2.LinuxCPU(shares=api_pb2.OptionalUInt64(
                                       value=300))))
    changed = store.pods()
    assert changed is not listed and changed[0].containers[0].linux.cpu_shares == 300
    nri(store).nri_pod_event(PodEventKind.DELETED, sb)
    assert store.pods() == () and store.pods() is store.pods()


def test_a_changed_container_emits_one_update_with_the_previous_pod() -> None:
    store, rec, _ = new_store()
    sb = sandbox(1)
    nri(store).nri_synchronized([sb], [container(sb, "c1", shares=100)])
    adjusted = container(sb, "c1", shares=150)  # what a plugin made of it: not kubelet's ask
    nri(store).nri_container_event(ContainerChange.UPDATED, sb, adjusted)
    assert len(rec.events) == 1
    ask = api_pb2.LinuxResources()
    ask.cpu.shares.value = 200
    nri(store).nri_container_event(ContainerChange.UPDATED, sb, adjusted, ask)
    event = rec.events[-1]
    assert event.kind is PodEventKind.UPDATED
    assert event.previous.containers[0].linux.cpu_shares == 100
    assert event.pod.containers[0].linux.cpu_shares == 200


def test_an_update_repeating_the_ask_held_emits_nothing_and_another_ask_one_update() -> None:
    store, rec, _ = new_store()
    sb = sandbox(1)
    nri(store).nri_synchronized([sb], [container(sb, "c1", shares=100)])
    asks = [api_pb2.LinuxResources(), api_pb2.LinuxResources(), api_pb2.LinuxResources()]
    asks[0].cpu.shares.value = asks[1].cpu.shares.value = 200
    asks[2].cpu.quota.value = 5000
    for ask in asks:
        nri(store).nri_container_event(ContainerChange.UPDATED, sb, container(sb, "c1", shares=100), ask)
    assert [kind for kind, _ in rec.kinds()] == [PodEventKind.ADDED, PodEventKind.UPDATED, PodEventKind.UPDATED]
    linux = rec.events[-1].pod.containers[0].linux
    assert (linux.cpu_shares, linux.cpu_quota) == (200, 5000)


def test_a_container_event_that_leaves_the_pod_as_it_was_emits_nothing() -> None:
    store, rec, _ = new_store()
    sb = sandbox(1)
    ctr = container(sb, "c1")
    ctr.linux.cgroups_path = "relative/c1"  # unreadable: the feed makes a new, equal value at every event
    nri(store).nri_synchronized([sb], [ctr])
    ctr.pod_sandbox_id = "sb-other"  # the store's bookkeeping changes, not what the pod shows
    nri(store).nri_container_event(ContainerChange.UPDATED, sb, ctr)
    assert rec.kinds() == [(PodEventKind.ADDED, uid_of(1))]


def test_without_kubelet_an_updated_container_keeps_its_extended_spec_and_a_runtime_spec_goes() -> None:
    import dataclasses
    import json

    from koordlet.statesinformer.extended_spec import ANNOTATION_EXTENDED_RESOURCE_SPEC
    from koordlet.statesinformer.merge import merged_container

    spec = {"containers": {"main": {"requests": {"kubernetes.io/batch-cpu": "500"}}}}
    sb = sandbox(1, annotations={ANNOTATION_EXTENDED_RESOURCE_SPEC: json.dumps(spec)})
    store, rec, _ = new_store()
    nri(store).nri_synchronized([sb], [container(sb, "c1", shares=100)])
    ask = api_pb2.LinuxResources()
    ask.cpu.shares.value = 200
    nri(store).nri_container_event(ContainerChange.UPDATED, sb, container(sb, "c1", shares=100), ask)
    (merged,) = rec.events[-1].pod.containers
    assert merged.linux.cpu_shares == 200 and merged.spec == Resources(requests={"kubernetes.io/batch-cpu": 500})
    # a runtime copy that carries a spec of its own loses it where neither kubelet nor the sandbox gives one
    carrying = dataclasses.replace(container_info(container(sb, "c1"), sb.uid)[0], spec=merged.spec)
    assert merged_container(carrying, {}, None) == dataclasses.replace(carrying, spec=None)


def test_a_stopped_container_is_forgotten_and_its_cgroup_released() -> None:
    store, rec, _ = new_store()
    sb = sandbox(1, "besteffort")
    nri(store).nri_synchronized([sb], [container(sb, "c1"), container(sb, "c2", name="side")])
    nri(store).nri_container_event(ContainerChange.STOPPED, sb, container(sb, "c1", state=api_pb2.CONTAINER_STOPPED))
    assert [c.id for c in store.pod(uid_of(1)).containers] == ["c2"]
    assert rec.gone == [container_dir(sb, "c1")]
    nri(store).nri_container_event(ContainerChange.REMOVED, sb, container(sb, "c1", state=api_pb2.CONTAINER_STOPPED))
    assert rec.gone == [container_dir(sb, "c1")]  # once, not again at removal


def test_stop_sandbox_marks_it_not_ready_and_remove_deletes_the_pod() -> None:
    store, rec, _ = new_store()
    sb = sandbox(1)
    nri(store).nri_synchronized([sb], [container(sb, "c1")])
    nri(store).nri_pod_event(SandboxChange.STOP, sb)
    pod = store.pod(uid_of(1))
    assert pod.state is SandboxState.NOT_READY and pod.containers == ()
    nri(store).nri_pod_event(PodEventKind.DELETED, sb)  # the model's kinds are accepted too
    assert store.pod(uid_of(1)) is None
    assert rec.kinds()[-1] == (PodEventKind.DELETED, uid_of(1))
    assert rec.gone == [container_dir(sb, "c1"), sb.linux.cgroup_parent.lstrip("/")]


def test_a_late_event_does_not_bring_a_removed_pod_back() -> None:
    store, rec, _ = new_store()
    sb = sandbox(1)
    nri(store).nri_synchronized([sb], [container(sb, "c1")])
    nri(store).nri_pod_event(SandboxChange.REMOVE, sb)
    for change in ContainerChange:
        nri(store).nri_container_event(change, sb, container(sb, "c1"))
    nri(store).nri_pod_event(SandboxChange.UPDATE, sb)
    assert store.pods() == ()
    assert rec.kinds() == [(PodEventKind.ADDED, uid_of(1)), (PodEventKind.DELETED, uid_of(1))]


def test_an_event_without_a_pod_changes_nothing() -> None:
    store, rec, _ = new_store()
    nameless = api_pb2.PodSandbox(id="sb-x")  # no uid
    nri(store).nri_pod_event(SandboxChange.RUN, nameless)
    nri(store).nri_container_event(ContainerChange.CREATED, api_pb2.PodSandbox(), container(sandbox(1), "c1"))
    assert store.pods() == () and rec.events == []
    assert {k: v for k, v in store.counts().items() if v} == {}


def test_a_listener_that_raises_stays_subscribed() -> None:
    store, rec, _ = new_store()
    calls: list[PodEvent] = []

    def bad(event: PodEvent) -> None:
        calls.append(event)
        raise RuntimeError("boom")

    store.subscribe(bad)
    nri(store).nri_pod_event(SandboxChange.RUN, sandbox(1))
    nri(store).nri_pod_event(SandboxChange.RUN, sandbox(2))
    assert len(calls) == 2 and len(rec.events) == 2


def test_unsubscribe_stops_events() -> None:
    store, _, _ = new_store()
    seen: list[PodEvent] = []
    unsubscribe = store.subscribe(seen.append)
    unsubscribe()
    unsubscribe()
    nri(store).nri_pod_event(SandboxChange.RUN, sandbox(1))
    assert seen == []


# ---- merging sources

def test_cri_and_nri_views_of_one_pod_merge_into_one_pod() -> None:
    store, rec, clock = new_store(expected=[Source.CRI])
    sb = sandbox(1)
    nri(store).nri_pod_event(SandboxChange.RUN, sb)
    listed_at = clock()
    store.cri_listed(*cri_listing((sb, [container(sb, "c1")])), listed_at)
    pod = store.pod(uid_of(1))
    assert pod.sources == {Source.NRI, Source.CRI}
    assert [c.id for c in pod.containers] == ["c1"]
    assert store.synced()


def test_a_cri_listing_taken_before_a_removal_does_not_bring_the_container_back() -> None:
    store, rec, clock = new_store()
    sb = sandbox(1)
    nri(store).nri_synchronized([sb], [container(sb, "c1")])
    listed_at = clock()  # the poll starts ...
    nri(store).nri_container_event(ContainerChange.REMOVED, sb, container(sb, "c1"))  # ... the container goes ...
    store.cri_listed(*cri_listing((sb, [container(sb, "c1")])), listed_at)  # ... the poll's answer still has it
    assert store.pod(uid_of(1)).containers == ()
    assert rec.gone == [container_dir(sb, "c1")]


def test_container_churn_keeps_only_the_tombstones_a_poll_in_flight_could_need() -> None:
    store, _, clock = new_store()
    sb = sandbox(1)
    nri(store).nri_synchronized([sb], [container(sb, "c1")])
    cycles = 3 * int(TOMBSTONE_SECONDS)  # the test clock moves 1 s a reading
    for k in range(cycles):
        probe = container(sb, "probe%d" % k, name="probe%d" % k)
        nri(store).nri_container_event(ContainerChange.CREATED, sb, probe)
        nri(store).nri_container_event(ContainerChange.REMOVED, sb, probe)
    kept = store.counts()[("tombstones", "merged")]
    assert 0 < kept <= TOMBSTONE_SECONDS + 1
    # a poll that began a moment before the last removal still cannot bring it back
    listed_at = clock.now - 1
    last = "probe%d" % (cycles - 1)
    store.cri_listed(*cri_listing((sb, [container(sb, "c1"), container(sb, last, name=last)])), listed_at)
    assert [c.id for c in store.pod(uid_of(1)).containers] == ["c1"]


def test_a_cri_listing_drops_what_nri_reported_earlier_and_the_runtime_no_longer_has() -> None:
    store, rec, clock = new_store()
    old, new = sandbox(1), sandbox(2)
    nri(store).nri_synchronized([old], [container(old, "c1")])  # NRI then disconnects and misses the removal
    store.cri_listed(*cri_listing((new, [])), clock())
    assert [p.uid for p in store.pods()] == [uid_of(2)]
    assert store.counts()[("pods", "nri")] == 0


def test_a_cri_poll_begun_before_a_synchronize_does_not_bring_back_what_it_dropped() -> None:
    store, _, clock = new_store()
    gone, kept = sandbox(1), sandbox(2)
    listing = cri_listing((gone, [container(gone, "c1")]), (kept, []))
    store.cri_listed(*listing, clock())
    listed_at = clock()  # a poll starts, and will still see pod 1 ...
    nri(store).nri_synchronized([kept], [])  # ... which the runtime no longer has when NRI resyncs
    assert [p.uid for p in store.pods()] == [uid_of(2)]
    store.cri_listed(*listing, listed_at)
    assert [p.uid for p in store.pods()] == [uid_of(2)]
    store.cri_listed(*listing, clock())  # a poll begun later that still lists it: it is there
    assert {p.uid for p in store.pods()} == {uid_of(1), uid_of(2)}


def test_a_pod_nri_reported_after_the_listing_began_survives_it() -> None:
    store, _, clock = new_store()
    listed_at = clock()
    nri(store).nri_pod_event(SandboxChange.RUN, sandbox(1))
    store.cri_listed([], [], listed_at)
    assert store.pod(uid_of(1)) is not None


def test_kubelet_adds_priority_spec_and_qos_but_no_pods_of_its_own() -> None:
    store, rec, _ = new_store(expected=[Source.KUBELET])
    sb = sandbox(1, "besteffort")
    nri(store).nri_synchronized([sb], [container(sb, "c1")])
    assert store.pod(uid_of(1)).qos.effective is KoordQoSClass.BE  # from the besteffort cgroup parent
    assert not store.synced()
    spec = Resources(requests={"cpu": 500}, limits={"cpu": 1000})
    store.kubelet_listed([
        KubeletPod(uid_of(1), "pod-1", "default", labels={"app": "web"}, priority=9500,
                   priority_class_name="koord-prod", k8s_qos=QoSTier.BESTEFFORT, container_specs={"main": spec}),
        KubeletPod(uid_of(7), "pending", "default", priority=9500),
    ])
    assert store.synced()
    pod = store.pod(uid_of(1))
    assert (pod.priority, pod.priority_class_name, pod.qos.effective) == (9500, "koord-prod", KoordQoSClass.LS)
    assert pod.labels["app"] == "web" and pod.containers[0].spec == spec
    assert Source.KUBELET in pod.sources
    assert store.pod(uid_of(7)) is None  # kubelet alone does not make a running pod
    assert rec.kinds() == [(PodEventKind.ADDED, uid_of(1)), (PodEventKind.UPDATED, uid_of(1))]
    store.kubelet_listed([])
    assert store.pod(uid_of(1)).qos.effective is KoordQoSClass.BE


def test_an_update_keeps_what_kubelet_adds_to_the_container() -> None:
    store, rec, _ = new_store()
    sb = sandbox(1)
    nri(store).nri_synchronized([sb], [container(sb, "c1", shares=100)])
    spec = Resources(requests={"cpu": 500})
    store.kubelet_listed([KubeletPod(uid_of(1), "pod-1", "default", container_specs={"main": spec})])
    ask = api_pb2.LinuxResources()
    ask.cpu.shares.value = 200
    nri(store).nri_container_event(ContainerChange.UPDATED, sb, container(sb, "c1", shares=100), ask)
    (merged,) = rec.events[-1].pod.containers
    assert (merged.linux.cpu_shares, merged.spec) == (200, spec)


def test_an_invalid_label_is_logged_once_per_pod(capsys) -> None:
    store, _, _ = new_store()
    sb = sandbox(1, labels={"koordinator.sh/qosClass": "GOLD"})
    for _ in range(3):
        nri(store).nri_synchronized([sb], [])
    out = capsys.readouterr()
    assert (out.out + out.err).count("pod_input_invalid") == 1
    assert store.pod(uid_of(1)).qos.effective is KoordQoSClass.LS


# ---- property: whatever the order of events, no removed pod stays, events mirror the store

EVENTS = st.lists(
    st.tuples(
        st.sampled_from(["run", "stop", "remove", "create", "start", "update", "update_exited", "stop_c", "remove_c",
                         "cri", "sync"]),
        st.integers(0, 3),  # pod
        st.integers(0, 2),  # container
        st.sampled_from([None, 1024, 2048]),  # an update's kubelet ask (cpu shares), if any
    ),
    max_size=40,
)


def merged_afresh(store: PodStore, uid: str) -> PodInfo | None:
    containers = {c.id: c for c in store._cri.pod_containers(uid)}
    containers.update((c.id, c) for c in store._nri.pod_containers(uid))
    views = store._nri.sandbox_views(uid) + store._cri.sandbox_views(uid)
    return merge_pod(views, containers.values(), store._kubelet.get(uid))[0]


def _shares_weight(pod: PodInfo) -> int:
    """A per-pod figure that changes with the pod's containers and their cpu shares (a kept sum's contribution)."""
    return 1 + sum(1 + (c.linux.cpu_shares or 0) for c in pod.containers)


@settings(max_examples=150, deadline=None)
@given(EVENTS)
def test_any_sequence_of_events_leaves_no_removed_pod(events) -> None:
    store, rec, clock = new_store()
    mirror: dict[str, PodInfo] = {}
    store.subscribe(lambda e: mirror.pop(e.pod.uid) if e.kind is PodEventKind.DELETED
                    else mirror.__setitem__(e.pod.uid, e.pod))
    kept = KeptPodSum(store, _shares_weight)  # a sum kept from the same events
    live: set[int] = set()
    running: dict[int, set[int]] = {}
    generation: dict[int, int] = {}  # a removed sandbox's id never comes back: kubelet makes a new one

    def sb_of(m: int) -> api_pb2.PodSandbox:
        return sandbox(m, sandbox_id="sb%d-%d" % (m, generation.get(m, 0)))

    for what, n, c, shares in events:
        sb = sb_of(n)
        ctr = container(sb, "c%d-%d" % (n, c), name="n%d" % c)
        ask = None
        if shares is not None and what in ("update", "update_exited"):
            ask = api_pb2.LinuxResources()
            ask.cpu.shares.value = shares
        if what == "run":
            nri(store).nri_pod_event(SandboxChange.RUN, sb)
            live.add(n)
        elif what == "stop":
            nri(store).nri_pod_event(SandboxChange.STOP, sb)
            live.add(n)
            running.pop(n, None)
        elif what == "remove":
            nri(store).nri_pod_event(SandboxChange.REMOVE, sb)
            live.discard(n)
            running.pop(n, None)
            generation[n] = generation.get(n, 0) + 1
        elif what in ("create", "start", "update"):
            kind = {"create": ContainerChange.CREATED, "start": ContainerChange.STARTED,
                    "update": ContainerChange.UPDATED}[what]
            nri(store).nri_container_event(kind, sb, ctr, ask)
            live.add(n)
            running.setdefault(n, set()).add(c)
        elif what == "update_exited":  # the message says it stopped: the pod no longer shows it
            ctr.state = api_pb2.CONTAINER_STOPPED
            nri(store).nri_container_event(ContainerChange.UPDATED, sb, ctr, ask)
            live.add(n)
            running.get(n, set()).discard(c)
        elif what in ("stop_c", "remove_c"):
            kind = ContainerChange.STOPPED if what == "stop_c" else ContainerChange.REMOVED
            nri(store).nri_container_event(kind, sb, ctr)
            live.add(n)
            running.get(n, set()).discard(c)
        elif what == "cri":  # a poll that lists exactly what the model says is there, taken now
            pairs = [(sb_of(m), [container(sb_of(m), "c%d-%d" % (m, k), name="n%d" % k)
                                   for k in sorted(running.get(m, ()))]) for m in sorted(live)]
            store.cri_listed(*cri_listing(*pairs), clock())
        else:
            nri(store).nri_synchronized(
                [sb_of(m) for m in live],
                [container(sb_of(m), "c%d-%d" % (m, k), name="n%d" % k) for m in live for k in running.get(m, ())])
        assert {p.uid for p in store.pods()} == {uid_of(m) for m in live}
        assert mirror == {p.uid: p for p in store.pods()}
        assert kept.total == sum(map(_shares_weight, store.pods()))
        assert all(e.pod != e.previous for e in rec.events if e.kind is PodEventKind.UPDATED)  # on real change only
        for m in live:
            assert {x.id for x in store.pod(uid_of(m)).containers} == {"c%d-%d" % (m, k) for k in running.get(m, ())}
            # an event that changed one container updated the pod in place: what a whole merge gives
            assert store.pod(uid_of(m)) == merged_afresh(store, uid_of(m))
    for m in list(live):
        nri(store).nri_pod_event(SandboxChange.REMOVE, sb_of(m))
    assert store.pods() == () and mirror == {}
    counts = store.counts()
    assert all(v == 0 for k, v in counts.items() if k[0] != "tombstones")
    # every dir handed out as gone belonged to a container or pod that was known
    known = {e.pod.cgroup_parent for e in rec.events} | {
        c.cgroup_dir for e in rec.events for c in e.pod.containers}
    assert set(rec.gone) <= known


def _frozen_instance_of(cls: type, value: object) -> bool:
    """`value` is a `cls` itself (not a builder's instance) and refuses a write, as the frozen class does."""
    import dataclasses

    try:
        setattr(value, dataclasses.fields(cls)[0].name, None)
    except dataclasses.FrozenInstanceError:
        return type(value) is cls
    return False


def test_the_fast_pod_copy_equals_dataclasses_replace() -> None:
    import dataclasses

    from koordlet.apis.qos import PodQoS

    # every field set to a value unlike its default, so a field out of order shows
    values = {f.name: f"v-{f.name}" for f in dataclasses.fields(PodInfo) if f.init}
    values.update(state=SandboxState.NOT_READY, qos=PodQoS(KoordQoSClass.BE), priority=7, created_at_ns=9,
                  labels={"a": "b"}, annotations={"c": "d"}, containers=(), sources=frozenset({Source.CRI}))
    pod = PodInfo(**values)
    containers = (container_info(container(sandbox(1), "c9"), pod.uid)[0],)
    sources = frozenset({Source.NRI, Source.CRI})
    assert pod.running_containers == ()  # cached on the pod: the copy must not carry it
    copied = pod.with_containers(containers, sources)
    assert copied == dataclasses.replace(pod, containers=containers, sources=sources)
    assert copied.running_containers == containers
    assert _frozen_instance_of(PodInfo, copied)


def test_the_fast_container_copies_equal_dataclasses_replace() -> None:
    import dataclasses

    from koordlet.statesinformer.model import ContainerInfo, ContainerKind, ContainerRole, LinuxResources, Resources

    # every field set to a value unlike its default, so a field out of order shows
    values = {f.name: f"v-{f.name}" for f in dataclasses.fields(ContainerInfo)}
    values.update(state=ContainerState.CREATED, linux=LinuxResources(cpu_shares=3), spec=Resources(), pid=5,
                  created_at_ns=9, role=ContainerRole(ContainerKind.SIDECAR, 2))
    info = ContainerInfo(**values)
    linux = LinuxResources(memory_limit=7)
    role = ContainerRole(ContainerKind.INIT, 1, True)
    spec = Resources(requests={"cpu": 1})
    assert info.with_state(ContainerState.RUNNING) == dataclasses.replace(info, state=ContainerState.RUNNING)
    assert info.with_linux(linux) == dataclasses.replace(info, linux=linux)
    assert info.with_spec(spec, role) == dataclasses.replace(info, spec=spec, role=role)
    assert all(_frozen_instance_of(ContainerInfo, copied) for copied in (
        info.with_state(ContainerState.RUNNING), info.with_linux(linux), info.with_spec(spec, role),
        container_info(container(sandbox(1), "c1"), "u")[0]))


def test_the_fast_pod_event_equals_the_constructor() -> None:
    from koordlet.statesinformer.model import PodEvent, pod_event

    sb = sandbox(1)
    pod, _ = merge_pod([sandbox_view(sb)], [container_info(container(sb, "c1"), sb.uid)[0]])
    assert pod is not None
    for kind in PodEventKind:
        assert pod_event(kind, pod) == PodEvent(kind, pod)
        assert pod_event(kind, pod, pod) == PodEvent(kind, pod, pod)
        assert _frozen_instance_of(PodEvent, pod_event(kind, pod))


def test_an_update_ask_overlays_what_it_sets_and_keeps_the_rest() -> None:
    from types import MappingProxyType

    from koordlet.statesinformer.model import LinuxResources

    asked = LinuxResources(cpu_shares=2, cpu_quota=3, cpu_period=4, cpuset_cpus="0-1", cpuset_mems="0",
                           memory_limit=5, unified=MappingProxyType({"memory.high": "6"}))
    assert asked.overlaid(LinuxResources()) is asked
    assert asked.overlaid(LinuxResources(cpu_shares=2)) is asked
    assert asked.overlaid(LinuxResources(cpu_shares=20, memory_limit=50)) == LinuxResources(
        cpu_shares=20, cpu_quota=3, cpu_period=4, cpuset_cpus="0-1", cpuset_mems="0", memory_limit=50,
        unified=asked.unified)
    unified = MappingProxyType({"memory.max": "7"})
    assert asked.overlaid(LinuxResources(cpu_quota=30, cpu_period=40, cpuset_cpus="2", cpuset_mems="1",
                                         unified=unified)) == LinuxResources(
        cpu_shares=2, cpu_quota=30, cpu_period=40, cpuset_cpus="2", cpuset_mems="1", memory_limit=5, unified=unified)


def test_a_kept_overlay_is_the_pairs_own_and_the_keeping_is_bounded() -> None:
    from koordlet.statesinformer import model
    from koordlet.statesinformer.model import LinuxResources, overlaid

    held = [LinuxResources(cpu_shares=2), LinuxResources(cpu_shares=3, memory_limit=4)]
    asks = [LinuxResources(), LinuxResources(cpu_shares=20), LinuxResources(memory_limit=40)]
    for _ in range(2):  # the second time from what was kept
        for value in held:
            for ask in asks:
                assert overlaid(value, ask) == value.overlaid(ask)
    for n in range(model._OVERLAID_MAX + 10):  # pairs made and dropped: ids come back for other values
        assert overlaid(LinuxResources(cpu_shares=n), LinuxResources(memory_limit=n)) == LinuxResources(
            cpu_shares=n, memory_limit=n)
    assert len(model._overlaid_by_ids) <= model._OVERLAID_MAX


def test_an_equal_sandbox_message_reuses_its_view_and_the_feed_keeps_no_message() -> None:
    import sys

    store, rec, _ = new_store()
    feed = nri(store)
    sb = sandbox(1)
    before = sys.getrefcount(sb)
    feed.nri_container_event(ContainerChange.CREATED, sb, container(sb, "c1"))
    assert sys.getrefcount(sb) == before  # a kept message would keep the whole request it came in
    labels = store.pod(sb.uid).labels
    again = api_pb2.PodSandbox()
    again.CopyFrom(sb)
    feed.nri_container_event(ContainerChange.STARTED, again, container(again, "c1"))
    assert store.pod(sb.uid).labels is labels  # not converted again
    again.labels["tier"] = "web"
    feed.nri_container_event(ContainerChange.STARTED, again, container(again, "c1"))
    assert store.pod(sb.uid).labels["tier"] == "web"
    assert [kind for kind, _ in rec.kinds()] == [PodEventKind.ADDED, PodEventKind.UPDATED, PodEventKind.UPDATED]


# ---- CRI standing down while NRI is live

def test_nri_is_live_only_while_connected_and_listed() -> None:
    store, _, _ = new_store()
    links: list[bool] = []
    store.on_nri_link(links.append)
    store.nri_link(True)
    assert not store.nri_live()  # connected, nothing listed yet
    nri(store).nri_synchronized([], [])
    assert store.nri_live()
    nri(store).nri_connection(False)  # containerd restarting
    assert not store.nri_live() and links == [True, False]


def test_standing_down_keeps_every_pod_nri_knows_and_drops_cris_copy() -> None:
    store, rec, clock = new_store()
    a, b = sandbox(1), sandbox(2)
    store.cri_listed(*cri_listing((a, [container(a, "c1")]), (b, [container(b, "c2")])), clock())
    nri(store).nri_synchronized([a, b], [container(a, "c1"), container(b, "c2")])
    store.nri_link(True)
    store.cri_stand_down()
    assert sorted((p.uid, p.sources, [c.id for c in p.containers]) for p in store.pods()) == [
        (uid_of(1), {Source.NRI}, ["c1"]), (uid_of(2), {Source.NRI}, ["c2"])]
    assert (store.counts()[("pods", "cri")], store.counts()[("containers", "cri")]) == (0, 0)
    assert rec.gone == [] and store.source_synced(Source.CRI)
    nri(store).nri_pod_event(SandboxChange.REMOVE, b)  # NRI removes a pod CRI had listed
    assert [p.uid for p in store.pods()] == [uid_of(1)]


def test_a_cri_poll_after_nri_dropped_lists_what_changed_while_it_was_away() -> None:
    store, _, clock = new_store()
    kept, went, came = sandbox(1), sandbox(2), sandbox(3)
    nri(store).nri_synchronized([kept, went], [])
    store.nri_link(True)
    store.cri_stand_down()
    store.nri_link(False)
    store.cri_listed(*cri_listing((kept, []), (came, [])), clock())
    assert sorted(p.uid for p in store.pods()) == [uid_of(1), uid_of(3)]


class _PodWhoseReadIsInterrupted:
    """A pod whose `containers` is read while the event loop (simulated here) adds a pod:
    what a thread switch between two steps of a scrape's loop over the pods can meet."""

    def __init__(self, store: PodStore) -> None:
        self._store = store

    @property
    def containers(self) -> tuple[()]:
        self._store._pods["added-meanwhile"] = self  # type: ignore[assignment]
        return ()


def test_counts_read_from_another_thread_survive_a_pod_added_meanwhile() -> None:
    store, _, _ = new_store()
    store._pods["first"] = _PodWhoseReadIsInterrupted(store)  # type: ignore[assignment]
    counts = store.counts()  # a loop over the live dict raised "dictionary changed size during iteration"
    assert counts[("pods", "merged")] == 1 and counts[("containers", "merged")] == 0
