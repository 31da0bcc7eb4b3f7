"""NRI events into the states informer: the one place that knows NRI's messages.

The NRI plugin (runtime hooks) hands every event here with containerd's protobufs; this
adapter checks that it names a pod, converts it with `from_nri` (a sandbox message equal
to the last one of its id is not converted again: every container event carries one) and
feeds the PodStore in the store's own, runtime-neutral terms. The CRI poll does the same
for CRI's listings (cri_poll.py).
"""

from __future__ import annotations

from enum import Enum
from typing import Iterable

import structlog

from koordlet.statesinformer.from_nri import (
    container_info,
    deterministic_bytes,
    known_container_info,
    linux_resources,
    sandbox_view,
)
from koordlet.statesinformer.model import ContainerState, PodEventKind
from koordlet.statesinformer.runtime_view import SandboxView
from koordlet.statesinformer.store import PodStore
from proto.nri.pkg.api.v1alpha1 import api_pb2

log = structlog.get_logger(__name__)


class SandboxChange(Enum):
    """NRI pod sandbox events."""

    RUN = "RunPodSandbox"
    UPDATE = "UpdatePodSandbox"
    STOP = "StopPodSandbox"
    REMOVE = "RemovePodSandbox"


class ContainerChange(Enum):
    """NRI container events, by what they mean for the container."""

    CREATED = "CreateContainer"
    STARTED = "StartContainer"
    UPDATED = "UpdateContainer"
    STOPPED = "StopContainer"
    REMOVED = "RemoveContainer"


_CREATED, _STARTED = ContainerChange.CREATED, ContainerChange.STARTED  # see model.ContainerState
_GONE = (ContainerChange.STOPPED, ContainerChange.REMOVED)  # the events after which the container is no more
_CREATED_STATE, _RUNNING_STATE = ContainerState.CREATED, ContainerState.RUNNING


def _event_state(kind: ContainerChange) -> ContainerState | None:
    """What the event itself says about the state: containerd's CreateContainer carries state
    UNKNOWN and its StartContainer still CREATED (seen on 2.3.4). Told by identity: an Enum's
    hash, for a dict lookup, is a Python-level call."""
    if kind is _CREATED:
        return _CREATED_STATE
    if kind is _STARTED:
        return _RUNNING_STATE
    return None


_POD_EVENT_CHANGE = {
    PodEventKind.ADDED: SandboxChange.RUN,
    PodEventKind.UPDATED: SandboxChange.UPDATE,
    PodEventKind.DELETED: SandboxChange.REMOVE,
}


class NriFeed:
    """What the NRI plugin feeds (runtimehooks.nri_plugin.NriFeed), over one PodStore."""

    def __init__(self, store: PodStore) -> None:
        self.store = store
        # sandbox id -> (hash of its last message serialized, its view): holding the message itself
        # would hold the whole request it was parsed from (upb keeps one arena per request; a
        # Synchronize of 1,000 pods is ~8 MiB) for as long as any of its pods sees no newer event,
        # and its bytes ~1.4 KB a pod; a 64-bit keyed hash (siphash, per-process key) tells a changed
        # message from the last one all the same. Serialized with sorted map keys: the runtime's map
        # order changes from one event to the next (Go randomizes it)
        self._views: dict[str, tuple[int, SandboxView]] = {}

    def nri_connection(self, up: bool) -> None:
        """The plugin's stub is connected and synchronized (True) or lost it (False): its
        `add_ready_callback`. While it is up the CRI poll stands down."""
        self.store.nri_link(up)

    def nri_synchronized(self, pods: Iterable[api_pb2.PodSandbox], containers: Iterable[api_pb2.Container]) -> None:
        """NRI's whole view after a (re)Synchronize: it replaces what NRI said before."""
        views = {}
        for sandbox in pods:
            sandbox_id = sandbox.id
            views[sandbox_id] = self._view(sandbox, sandbox_id)
        self._views = {sid: entry for sid, entry in self._views.items() if sid in views}
        listed = []
        for container in containers:
            view = views.get(container.pod_sandbox_id)
            if view is None:
                continue  # a container without a sandbox NRI listed: nothing to attach it to
            info, problems = container_info(container, view.pod.uid)
            self.store.problems.report(view.pod.uid, view.pod.name, problems)
            listed.append((view.pod.sandbox_id, info))  # the view's string: one per pod, not per container
        self.store.nri_listed(views.values(), listed)

    def nri_pod_event(self, kind: SandboxChange | PodEventKind, sandbox: api_pb2.PodSandbox) -> None:
        change = _POD_EVENT_CHANGE[kind] if isinstance(kind, PodEventKind) else kind
        sandbox_id, uid = sandbox.id, sandbox.uid
        if not _names_a_pod(change, sandbox_id, uid):
            return
        if change is SandboxChange.REMOVE:
            self._views.pop(sandbox_id, None)
            self.store.nri_sandbox_removed(sandbox_id, uid)
        else:
            self.store.nri_sandbox_seen(self._view(sandbox, sandbox_id), stopped=change is SandboxChange.STOP)

    def nri_container_event(self, kind: ContainerChange, sandbox: api_pb2.PodSandbox, container: api_pb2.Container,
                            linux_resources_update: api_pb2.LinuxResources | None = None) -> None:
        """One container event. `linux_resources_update`: UpdateContainerRequest.linux_resources,
        kubelet's new ask (the store keeps what kubelet asked for, see PodStore.nri_container_seen)."""
        # each read of a message's string field makes a new str: every field is read once here
        sandbox_id, uid = sandbox.id, sandbox.uid
        if not _names_a_pod(kind, sandbox_id, uid):
            return
        view = self._view(sandbox, sandbox_id)
        container_id = container.id
        if kind in _GONE:
            self.store.nri_container_gone(view, container_id)
            return
        created = kind is _CREATED
        known = None if created else self.store.nri_container(container_id)
        state = _event_state(kind)
        if known is None:
            info, problems = container_info(container, view.pod.uid, state=state)
        else:
            info, problems = known_container_info(container, view.pod.uid, known, state)
        if problems:
            self.store.problems.report(uid, sandbox.name, problems)
        ask = linux_resources(linux_resources_update) if linux_resources_update is not None else None
        container_sandbox = container.pod_sandbox_id or sandbox_id
        if container_sandbox == view.pod.sandbox_id:
            container_sandbox = view.pod.sandbox_id  # the string the view holds: one per pod, not one per container
        self.store.nri_container_seen(view, info, container_sandbox,
                                      created=created, state=state, ask=ask)

    def _view(self, sandbox: api_pb2.PodSandbox, sandbox_id: str) -> SandboxView:
        """`sandbox`'s view; `sandbox_id`: its id, read by the caller."""
        message = hash(deterministic_bytes(sandbox))
        known = self._views.get(sandbox_id)
        if known is not None and known[0] == message:
            return known[1]
        view = sandbox_view(sandbox)
        self._views[view.pod.sandbox_id] = (message, view)
        return view


def _names_a_pod(event: SandboxChange | ContainerChange, sandbox_id: str, uid: str) -> bool:
    if not sandbox_id or not uid:  # the event's name read only here: Enum.value is a property
        log.warning("nri_event_without_pod", nri_event=event.value, sandbox_id=sandbox_id, pod_uid=uid)
        return False
    return True
