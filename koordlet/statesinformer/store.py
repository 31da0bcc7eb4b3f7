"""PodStore: the states informer hub, fed by NRI, CRI and kubelet.

Readers use the `StatesInformer` protocol (node, pods, pod, subscribe, synced).
Feeders call the methods below, all on the event loop:

- NRI, through nri_feed.NriFeed (which converts the plugin's messages): `nri_listed` after
  every (re)Synchronize (replaces NRI's view wholesale), `nri_sandbox_seen`,
  `nri_sandbox_removed`, `nri_container_seen`, `nri_container_gone` per event;
- the NRI plugin's connection (its stub's ready callback, through the feed): `nri_link(up)`;
  `nri_live()` is true while NRI is connected and has listed, and then the CRI poll
  stands down (`cri_stand_down()`: CRI's last listing is dropped);
- the CRI poll: `cri_listed(sandboxes, containers, listed_at)` (replaces CRI's view);
- the kubelet poll: `kubelet_listed(pods)` (replaces kubelet's view).

Every change is merged per pod (merge.py) and an event is emitted only when the
merged pod really changed. Memory is bounded by what the runtime holds: removed
and stopped containers, removed sandboxes and kubelet pods that left the listing
are forgotten; `on_cgroup_gone(dir)` is called for the cgroup dir of every
container (and pod) that went, so the daemon can `ResourceExecutor.forget_cgroup`.
"""

from __future__ import annotations

import time
from bisect import insort
from collections import OrderedDict
from dataclasses import replace
from typing import Callable, Iterable, Mapping

import structlog

from koordlet.statesinformer.api import PodTable
from koordlet.statesinformer.from_kubelet import KubeletPod
from koordlet.statesinformer.merge import chosen_sandbox, container_order, merge_pod, merged_container
from koordlet.statesinformer.model import (
    ContainerInfo,
    ContainerState,
    LinuxResources,
    NodeInfo,
    PodEventKind,
    PodInfo,
    SandboxState,
    Source,
    overlaid,
    pod_event,
)
from koordlet.statesinformer.problems import ProblemLog
from koordlet.statesinformer.runtime_index import RuntimeIndex
from koordlet.statesinformer.runtime_view import SandboxView

log = structlog.get_logger(__name__)

# ids removed by an event are remembered this many at most, and this long, so that a poll
# that started before the removal cannot bring them back. A poll's calls each have a deadline
# of seconds, so an older tombstone only costs memory (~230 B: the id and its entry): without
# the age bound container churn kept the full 8,192 (~1.8 MiB) for good.
TOMBSTONE_CAPACITY = 8192
TOMBSTONE_SECONDS = 600.0

_UNKNOWN, _EXITED = ContainerState.UNKNOWN, ContainerState.EXITED  # see model.ContainerState
_NOT_READY = SandboxState.NOT_READY
_ADDED, _UPDATED, _DELETED = PodEventKind.ADDED, PodEventKind.UPDATED, PodEventKind.DELETED


class PodStore(PodTable):
    def __init__(
        self,
        node: NodeInfo,
        *,
        expected: Iterable[Source] = (),
        on_cgroup_gone: Callable[[str], object] | None = None,
        clock: Callable[[], float] = time.monotonic,
        problem_log: ProblemLog | None = None,
    ) -> None:
        super().__init__(node)
        self._expected = set(expected)
        self.on_cgroup_gone = on_cgroup_gone
        self._clock = clock
        self._problems = problem_log or ProblemLog()
        self._nri = RuntimeIndex(Source.NRI)
        self._cri = RuntimeIndex(Source.CRI)
        self._kubelet: dict[str, KubeletPod] = {}
        self._kubelet_synced = False
        self._nri_link = False  # the plugin's connection, as its stub reports it (nri_link)
        self._nri_link_listeners: list[Callable[[bool], object]] = []
        self._tombstones: OrderedDict[str, float] = OrderedDict()

    # ---- StatesInformer (node, pods, pod, subscribe: from PodTable)

    def set_node(self, node: NodeInfo) -> None:
        """The node as the cluster's Node object has it now (Kubernetes mode)."""
        self._node = node

    def synced(self) -> bool:
        """Every expected source has delivered its first complete listing (see
        `koordlet.statesinformer.sources` for which are expected). With none expected
        there is nothing to wait for."""
        return all(self.source_synced(source) for source in self._expected)

    @property
    def expected(self) -> frozenset[Source]:
        return frozenset(self._expected)

    def source_synced(self, source: Source) -> bool:
        """Whether `source` has delivered a complete listing."""
        return {Source.NRI: self._nri.synced, Source.CRI: self._cri.synced,
                Source.KUBELET: self._kubelet_synced}[source]

    @property
    def problems(self) -> ProblemLog:
        """The log of invalid input, for feeders that convert before they feed (the CRI
        poll): one log, so each problem is logged once and forgotten with its pod."""
        return self._problems

    def expect(self, source: Source) -> None:
        """Count `source` in synced() (a feeder says it exists)."""
        self._expected.add(source)

    # ---- NRI's connection, and CRI standing down while NRI is live

    def nri_link(self, up: bool) -> None:
        """The NRI plugin is connected and synchronized (True) or lost its connection (False,
        e.g. containerd restarting). What NRI listed stays until a listing replaces it."""
        if up == self._nri_link:
            return
        self._nri_link = up
        for listener in list(self._nri_link_listeners):
            listener(up)

    def on_nri_link(self, listener: Callable[[bool], object]) -> None:
        """listener(up) on every change of `nri_link`."""
        self._nri_link_listeners.append(listener)

    def nri_live(self) -> bool:
        """NRI is connected and has delivered its listing: its events keep every pod current."""
        return self._nri_link and self._nri.synced

    def cri_stand_down(self) -> None:
        """CRI stops polling while NRI is live: its last listing is dropped. NRI's own listing
        holds every pod CRI had; a CRI copy left behind could only go stale (keep what NRI
        then removes, hold an older state). CRI stays synced; its next poll lists afresh."""
        self._refresh(self._cri.clear())

    # ---- feeding: NRI's event stream (converted by nri_feed.NriFeed)

    def nri_listed(self, sandboxes: Iterable[SandboxView], containers: Iterable[tuple[str, ContainerInfo]]) -> None:
        """NRI's whole view after a (re)Synchronize: sandboxes and (sandbox id, container) pairs."""
        now = self._clock()
        known = dict(self._nri.containers)
        touched = self._nri.clear()
        for view in sandboxes:
            touched.add(self._nri.put_sandbox(view, now))
        for sandbox_id, info in containers:
            if info.state is not _EXITED:
                info = _keep_ask(info, known.get(info.id), created=False, ask=None)
                touched.add(self._nri.put_container(info, sandbox_id, now))
        touched |= self._drop_unconfirmed(self._cri, self._nri, now)
        self._nri.synced = True
        self._refresh(touched)

    def nri_sandbox_seen(self, view: SandboxView, stopped: bool = False) -> None:
        """A sandbox ran or changed; `stopped`: it stopped (not ready; its containers are gone)."""
        if self._removed(view.pod.sandbox_id):
            return
        now = self._clock()
        view = self._as_known(view)
        if stopped:
            view = _not_ready(view)
            for index in (self._nri, self._cri):
                for container in list(index.pod_containers(view.pod.uid)):
                    self._tombstone(container.id, now)
                    index.drop_container(container.id)
        self._refresh({self._nri.put_sandbox(view, now)})

    def nri_sandbox_removed(self, sandbox_id: str, uid: str) -> None:
        if self._removed(sandbox_id):
            return
        self._refresh({self._forget_sandbox(sandbox_id, uid, self._clock())})

    def nri_container_seen(self, sandbox: SandboxView, info: ContainerInfo, sandbox_id: str, *, created: bool,
                           state: ContainerState | None, ask: LinuxResources | None) -> None:
        """A container event. `state`: what the event itself says (created, started), over the
        message's own. `ask`: kubelet's new ask from an update. ContainerInfo.linux keeps what
        kubelet asked for: taken at creation (before any plugin adjusted it), changed only by
        an update's ask; later events carry the adjusted values and do not overwrite it."""
        if self._removed(sandbox.pod.sandbox_id):
            return
        now = self._clock()
        nri = self._nri
        view, same_view = self._put_nri_sandbox(sandbox, now)
        known = nri.containers.get(info.id)
        # the feed hands back `known` itself for a message that repeats it; each step below makes a
        # new value only for a field that differs, so a new one made from `known` is a change
        from_known = info is known
        if state is None and info.state is _UNKNOWN and known is not None:
            state = known.state
        if state is not None and state is not info.state:
            info = info.with_state(state)
        info = _keep_ask(info, known, created=created, ask=ask)
        # a dataclass's == with None is a Python-level call that says False: not made for a new container
        unchanged = info is known or (known is not None and not from_known and info == known)
        if same_view and known is not None and unchanged and nri.sandbox_of(info.id) == sandbox_id:
            nri.seen_at[info.id] = now  # nothing changed: the table stays as it is
            return
        nri.put_container(info, sandbox_id, now)
        if same_view and info.pod_uid == view.pod.uid:
            self._refresh_container(view.pod.uid, info.id, info, known if from_known and not unchanged else None)
        else:
            self._refresh({view.pod.uid, info.pod_uid})

    def nri_container(self, container_id: str) -> ContainerInfo | None:
        """The container as NRI last reported it. Its `linux` is what kubelet asked for, which a
        later event's own (adjusted) values do not replace: the feed need not convert those."""
        return self._nri.containers.get(container_id)

    def nri_container_gone(self, sandbox: SandboxView, container_id: str) -> None:
        """The container stopped or was removed."""
        if self._removed(sandbox.pod.sandbox_id):
            return
        now = self._clock()
        view, same_view = self._put_nri_sandbox(sandbox, now)
        self._tombstone(container_id, now)
        touched = set()
        for index in (self._nri, self._cri):  # a loop, not a set comprehension: one frame fewer per event
            uid = index.drop_container(container_id)
            if uid is not None:
                touched.add(uid)
        if not same_view or touched - {view.pod.uid}:
            self._refresh(touched | {view.pod.uid})
        elif touched:
            self._refresh_container(view.pod.uid, container_id)

    # ---- feeding: CRI and kubelet

    def cri_listed(
        self, sandboxes: Iterable[SandboxView], containers: Iterable[tuple[str, ContainerInfo]], listed_at: float
    ) -> None:
        """CRI's complete listing, requested at `listed_at` (clock reading taken before the
        first call): sandbox views and (sandbox id, container) pairs. Ids removed by an
        NRI event after `listed_at` stay removed. Only pods whose entries changed (by
        identity: the poll hands back the same objects for what it did not re-read) are
        merged again."""
        before: dict[str, SandboxView | ContainerInfo] = {**self._cri.sandboxes, **self._cri.containers}
        self._cri.clear()
        touched: set[str] = set()
        for view in sandboxes:
            if not self._buried(view.pod.sandbox_id, listed_at):
                self._cri.put_sandbox(view, listed_at)
                if before.pop(view.pod.sandbox_id, None) is not view:
                    touched.add(view.pod.uid)
        for sandbox_id, container in containers:
            if container.state is not _EXITED and not self._buried(container.id, listed_at):
                self._cri.put_container(container, sandbox_id, listed_at)
                if before.pop(container.id, None) is not container:
                    touched.add(container.pod_uid)
        touched |= {entry.pod.uid if isinstance(entry, SandboxView) else entry.pod_uid for entry in before.values()}
        touched |= self._drop_unconfirmed(self._nri, self._cri, listed_at)
        self._cri.synced = True
        self._refresh(touched)

    def kubelet_listed(self, pods: Iterable[KubeletPod]) -> None:
        fresh = {pod.uid: pod for pod in pods}
        touched = {uid for uid in set(fresh) | set(self._kubelet) if fresh.get(uid) != self._kubelet.get(uid)}
        self._kubelet = fresh
        self._kubelet_synced = True
        self._refresh(touched)

    # ---- introspection

    def counts(self) -> Mapping[tuple[str, str], int]:
        """(kind, source) -> how many are known; source "merged" is what readers see. Called
        from /metrics' worker thread: the pods are taken in one C call (no thread switch inside
        it), as a loop over the live dict could meet the event loop adding or removing a pod."""
        pods = tuple(self._pods.values())
        return {
            ("pods", Source.NRI.value): len(self._nri.sandboxes),
            ("containers", Source.NRI.value): len(self._nri.containers),
            ("pods", Source.CRI.value): len(self._cri.sandboxes),
            ("containers", Source.CRI.value): len(self._cri.containers),
            ("pods", Source.KUBELET.value): len(self._kubelet),
            ("pods", "merged"): len(pods),
            ("containers", "merged"): sum(len(p.containers) for p in pods),
            ("tombstones", "merged"): len(self._tombstones),
        }

    # ---- internals

    def _removed(self, sandbox_id: str) -> bool:
        """A late event must not bring a removed sandbox back."""
        if sandbox_id in self._tombstones:
            log.debug("nri_event_for_removed_pod", sandbox_id=sandbox_id)
            return True
        return False

    def _as_known(self, view: SandboxView) -> SandboxView:
        """A sandbox already stopped stays stopped (its id is never run again)."""
        known = self._nri.sandboxes.get(view.pod.sandbox_id)
        if known is not None and known.pod.state is _NOT_READY and view.pod.state is not known.pod.state:
            return _not_ready(view)
        return view

    def _put_nri_sandbox(self, sandbox: SandboxView, now: float) -> tuple[SandboxView, bool]:
        """Record NRI's sandbox (as `_as_known` makes it); also whether NRI held that very view
        already (nri_feed hands back the same one for an unchanged message): then the pod's
        own fields, merged from its sandboxes, cannot have changed."""
        sandbox_id = sandbox.pod.sandbox_id
        if self._nri.sandboxes.get(sandbox_id) is sandbox:  # held as it is: `_as_known` would keep it so
            self._nri.seen_at[sandbox_id] = now
            return sandbox, True
        view = self._as_known(sandbox)  # a new value when it changes it: never the one held
        self._nri.put_sandbox(view, now)
        return view, False

    def _forget_sandbox(self, sandbox_id: str, uid: str, now: float) -> str:
        self._tombstone(sandbox_id, now)
        for index in (self._nri, self._cri):
            for container in list(index.pod_containers(uid)):
                if index.sandbox_of(container.id) == sandbox_id:
                    self._tombstone(container.id, now)
            index.drop_sandbox(sandbox_id)
        return uid

    def _drop_unconfirmed(self, other: RuntimeIndex, listing: RuntimeIndex, listed_at: float) -> set[str]:
        """A complete listing from one runtime source drops what the other source holds
        that the listing lacks and the other has not reported since the listing began
        (and buries it, so that a CRI poll begun earlier cannot bring it back)."""
        keep = set(listing.sandboxes) | set(listing.containers)
        touched: set[str] = set()
        for key in other.stale(keep, listed_at):
            self._tombstone(key, listed_at)
            uid = other.drop(key)
            if uid is not None:
                touched.add(uid)
        return touched

    def _tombstone(self, key: str, now: float) -> None:
        tombstones = self._tombstones
        tombstones[key] = now
        tombstones.move_to_end(key)
        oldest_kept = now - TOMBSTONE_SECONDS
        # oldest first (a listing's time may be a little older than an event's before it)
        while len(tombstones) > TOMBSTONE_CAPACITY or next(iter(tombstones.values())) < oldest_kept:
            tombstones.popitem(last=False)

    def _buried(self, key: str, listed_at: float) -> bool:
        removed_at = self._tombstones.get(key)
        return removed_at is not None and removed_at >= listed_at

    def _refresh(self, uids: Iterable[str]) -> None:
        for uid in uids:
            containers = {c.id: c for c in self._cri.pod_containers(uid)}
            containers.update((c.id, c) for c in self._nri.pod_containers(uid))
            pod, problems = merge_pod(
                self._nri.sandbox_views(uid) + self._cri.sandbox_views(uid),
                containers.values(),
                self._kubelet.get(uid),
            )
            if pod is not None and problems:
                self._problems.report(uid, pod.name, problems)
            self._apply(uid, pod)

    def _refresh_container(self, uid: str, container_id: str, nri_copy: ContainerInfo | None = None,
                           made_from: ContainerInfo | None = None) -> None:
        """`_refresh({uid})` when only this container may have changed in the pod: the other
        containers and the pod's own fields are kept from the merged pod, not merged again.
        `nri_copy`: NRI's copy of the container under `uid`, when the caller has just put it (the
        copy merged then). `made_from`: the copy the merged pod was made from, when `nri_copy` is a
        new value made from it in a field the merge keeps (state or linux): the merged copies then
        differ unless both are absent, and where the merge gave `made_from` back as it was, it gives
        `nri_copy` back alike (the merge reads only name, spec and role, which are the same)."""
        previous = self._pods.get(uid)
        if previous is None:
            self._refresh({uid})
            return
        containers = previous.containers
        old, at = None, 0
        for position, container in enumerate(containers):
            if container.id == container_id:
                old, at = container, position
                break
        if made_from is not None and old is made_from and nri_copy is not None and nri_copy.state is not _EXITED:
            merged: ContainerInfo | None = nri_copy
        else:
            runtime = nri_copy
            if runtime is None:
                for index in (self._nri, self._cri):  # NRI's copy first, as in _refresh
                    runtime = index.containers.get(container_id)
                    if runtime is not None and runtime.pod_uid == uid:
                        break
                else:
                    runtime = None
            merged = None
            if runtime is not None:
                views = self._nri.sandbox_views(uid) + self._cri.sandbox_views(uid)
                merged = merged_container(runtime, chosen_sandbox(views).container_specs, self._kubelet.get(uid))
        if merged is old or (merged is not None and old is not None and made_from is None and merged == old):
            return
        if merged is not None and old is not None and merged.name == old.name:
            changed = (*containers[:at], merged, *containers[at + 1:])  # same id and name: same place
        else:
            others = [container for container in containers if container is not old]
            if merged is not None:
                insort(others, merged, key=container_order)
            changed = tuple(others)
        gone = (old,) if merged is None and old is not None else ()
        self._replace(uid, previous.with_containers(changed, previous.sources), previous, gone)

    def _apply(self, uid: str, pod: PodInfo | None) -> None:
        previous = self._pods.get(uid)
        if pod == previous:
            return
        self._replace(uid, pod, previous)

    def _replace(self, uid: str, pod: PodInfo | None, previous: PodInfo | None,
                 gone: tuple[ContainerInfo, ...] | None = None) -> None:
        """Put the changed pod (None: gone) in the table, release the cgroups that went and tell the
        listeners. `gone`: the containers of `previous` that `pod` lacks, when the caller knows them."""
        self._set_pod(uid, pod)
        if gone is not None:
            for container in gone:
                self._cgroup_gone(container.cgroup_dir)
        elif previous is not None:
            kept = {c.id for c in pod.containers} if pod is not None else set()
            for container in previous.containers:
                if container.id not in kept:
                    self._cgroup_gone(container.cgroup_dir)
        if pod is None:
            assert previous is not None
            self._problems.forget(uid)
            self._cgroup_gone(previous.cgroup_parent)
        if self._listeners:  # with nobody listening no event is built
            if pod is None:
                assert previous is not None
                event = pod_event(_DELETED, previous)
            else:
                event = pod_event(_ADDED if previous is None else _UPDATED, pod, previous)
            self._emit(event)

    def _cgroup_gone(self, cgroup_dir: str) -> None:
        if not cgroup_dir or self.on_cgroup_gone is None:
            return
        try:
            self.on_cgroup_gone(cgroup_dir)
        except Exception:  # a failing callback must not stop the informer
            log.exception("cgroup_gone_callback_failed", cgroup_dir=cgroup_dir)


def _not_ready(view: SandboxView) -> SandboxView:
    return replace(view, pod=replace(view.pod, state=SandboxState.NOT_READY))


def _keep_ask(info: ContainerInfo, known: ContainerInfo | None, *, created: bool,
              ask: LinuxResources | None) -> ContainerInfo:
    """`info` with the Linux resources kubelet asked for (see PodStore.nri_container_seen)."""
    if created or known is None:
        return info  # at creation, or first sight later: the values carried are all we have
    asked = known.linux if ask is None else overlaid(known.linux, ask)
    if asked is info.linux:
        return info
    if info.linux is known.linux:  # overlaid() hands back the very value it was given unless the ask changes it
        return info.with_linux(asked)
    return info if asked == info.linux else info.with_linux(asked)
