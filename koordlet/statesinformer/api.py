"""The states informer as its readers see it: one of the two hubs agents talk through.

Readers depend on this protocol, never on how the informer is fed, so tests can
hand any agent a `StaticStates` with the pods they need.
"""

from __future__ import annotations

from typing import Callable, Iterable, Protocol

from koordlet.statesinformer.model import NodeInfo, PodEvent, PodEventKind, PodInfo
from koordlet.util.board import Listeners

PodListener = Callable[[PodEvent], None]
Unsubscribe = Callable[[], None]


class StatesInformer(Protocol):
    def node(self) -> NodeInfo: ...

    def pods(self) -> tuple[PodInfo, ...]:
        """A snapshot of the known pods (sandboxes not yet removed), in no particular order."""
        ...

    def pod(self, uid: str) -> PodInfo | None: ...

    def subscribe(self, listener: PodListener) -> Unsubscribe:
        """Call `listener` on the event loop for every later add/update/delete. A listener
        that raises is logged and stays subscribed; it must not block."""
        ...

    def synced(self) -> bool:
        """True once the first full listing from every configured source is in."""
        ...


class PodTable:
    """The reading half every informer shares: the node, pods by uid, subscribers.
    A listener that raises is logged and stays subscribed."""

    def __init__(self, node: NodeInfo, pods: Iterable[PodInfo] = ()) -> None:
        self._node = node
        self._pods: dict[str, PodInfo] = {pod.uid: pod for pod in pods}
        self._version = 0  # counts the table's changes
        # pods() and the version it was made at: kept while the version stays
        self._snapshot: tuple[int, tuple[PodInfo, ...]] | None = None
        self._listeners: Listeners[PodEvent] = Listeners("pods")

    def node(self) -> NodeInfo:
        return self._node

    def pods(self) -> tuple[PodInfo, ...]:
        """The same tuple object while no pod changed: the per-second collectors keep what
        they derived from it (paths, series keys, turns) while ``pods() is`` their last one."""
        version, kept = self._version, self._snapshot
        if kept is not None and kept[0] == version:
            return kept[1]
        # /metrics' worker thread asks too: a tuple made before a change the loop makes
        # meanwhile carries the version read before it, so it is never kept past that change
        snapshot = tuple(self._pods.values())
        self._snapshot = (version, snapshot)
        return snapshot

    def _set_pod(self, uid: str, pod: PodInfo | None) -> None:
        """The one place the table changes (the version counts after the change)."""
        if pod is None:
            self._pods.pop(uid, None)
        else:
            self._pods[uid] = pod
        self._version += 1

    def pod(self, uid: str) -> PodInfo | None:
        return self._pods.get(uid)

    def subscribe(self, listener: PodListener) -> Unsubscribe:
        return self._listeners.add(listener)

    def _emit(self, event: PodEvent) -> None:
        self._listeners.notify(event)


class StaticStates(PodTable):
    """An informer whose pods are set by hand: for tests and for agents run standalone."""

    def synced(self) -> bool:
        return True

    def put(self, pod: PodInfo) -> None:
        previous = self._pods.get(pod.uid)
        self._set_pod(pod.uid, pod)
        kind = PodEventKind.ADDED if previous is None else PodEventKind.UPDATED
        self._emit(PodEvent(kind, pod, previous))

    def remove(self, uid: str) -> None:
        pod = self._pods.get(uid)
        if pod is not None:
            self._set_pod(uid, None)
            self._emit(PodEvent(PodEventKind.DELETED, pod))
