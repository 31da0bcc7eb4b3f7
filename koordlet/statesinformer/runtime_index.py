"""One runtime source's view (NRI or CRI): its sandboxes and containers, indexed by pod uid.

Plain bookkeeping for the store: every entry remembers when its source last
reported it (`seen_at`), so that a complete listing from the other source can
drop what this one has not confirmed since.
"""

from __future__ import annotations

from typing import Iterator

from koordlet.statesinformer.model import ContainerInfo, Source
from koordlet.statesinformer.runtime_view import SandboxView


class RuntimeIndex:
    __slots__ = ("source", "synced", "sandboxes", "containers", "seen_at",
                 "_uid_sandboxes", "_uid_containers", "_container_sandbox")

    def __init__(self, source: Source) -> None:
        self.source = source
        self.synced = False
        self.sandboxes: dict[str, SandboxView] = {}
        self.containers: dict[str, ContainerInfo] = {}
        self.seen_at: dict[str, float] = {}  # sandbox or container id -> clock reading
        # ids by pod uid, as tuples: a pod has one or two of each, and a set costs 216 bytes
        self._uid_sandboxes: dict[str, tuple[str, ...]] = {}
        self._uid_containers: dict[str, tuple[str, ...]] = {}
        self._container_sandbox: dict[str, str] = {}

    def put_sandbox(self, view: SandboxView, now: float) -> str:
        sandbox_id, uid = view.pod.sandbox_id, view.pod.uid
        old = self.sandboxes.get(sandbox_id)
        if old is not None and old.pod.uid != uid:
            self.drop_sandbox(sandbox_id)
        self.sandboxes[sandbox_id] = view
        self.seen_at[sandbox_id] = now
        _add(self._uid_sandboxes, uid, sandbox_id)
        return uid

    def drop_sandbox(self, sandbox_id: str) -> str | None:
        """Forget the sandbox; its containers go with it. Returns the pod uid, if known."""
        view = self.sandboxes.pop(sandbox_id, None)
        self.seen_at.pop(sandbox_id, None)
        if view is None:
            return None
        uid = view.pod.uid
        _discard(self._uid_sandboxes, uid, sandbox_id)
        for container_id in [c for c in self._uid_containers.get(uid, ()) if self.sandbox_of(c) == sandbox_id]:
            self.drop_container(container_id)
        return uid

    def put_container(self, container: ContainerInfo, sandbox_id: str, now: float) -> str:
        container_id, uid = container.id, container.pod_uid
        old = self.containers.get(container_id)
        if old is not None and old.pod_uid != uid:
            self.drop_container(container_id)
            old = None
        self.containers[container_id] = container
        self._container_sandbox[container_id] = sandbox_id
        self.seen_at[container_id] = now
        if old is None:  # one it holds is listed under its pod already
            _add(self._uid_containers, uid, container_id)
        return uid

    def drop_container(self, container_id: str) -> str | None:
        container = self.containers.pop(container_id, None)
        self.seen_at.pop(container_id, None)
        self._container_sandbox.pop(container_id, None)
        if container is None:
            return None
        _discard(self._uid_containers, container.pod_uid, container_id)
        return container.pod_uid

    def sandbox_views(self, uid: str) -> list[SandboxView]:
        ids = self._uid_sandboxes.get(uid)  # none, for CRI while NRI is live; one, nearly always for NRI
        if not ids:
            return []
        if len(ids) == 1:  # no comprehension (a function call) then
            return [self.sandboxes[ids[0]]]
        return [self.sandboxes[s] for s in ids]

    def pod_containers(self, uid: str) -> Iterator[ContainerInfo]:
        return (self.containers[c] for c in self._uid_containers.get(uid, ()))

    def uids(self) -> set[str]:
        return set(self._uid_sandboxes) | set(self._uid_containers)

    def stale(self, keep: set[str], before: float) -> list[str]:
        """Ids (sandbox or container) not in `keep` and last reported before `before`."""
        return [key for key, seen in self.seen_at.items() if seen < before and key not in keep]

    def drop(self, key: str) -> str | None:
        """Drop a sandbox or container by id; the pod uid it belonged to, if any."""
        if key in self.sandboxes:
            return self.drop_sandbox(key)
        return self.drop_container(key)

    def clear(self) -> set[str]:
        uids = self.uids()
        for table in (self.sandboxes, self.containers, self.seen_at, self._uid_sandboxes,
                      self._uid_containers):
            table.clear()
        self._container_sandbox.clear()
        return uids

    def sandbox_of(self, container_id: str) -> str | None:
        return self._container_sandbox.get(container_id)


def _add(index: dict[str, tuple[str, ...]], uid: str, key: str) -> None:
    keys = index.get(uid, ())
    if key not in keys:
        index[uid] = (*keys, key)


def _discard(index: dict[str, tuple[str, ...]], uid: str, key: str) -> None:
    keys = index.get(uid, ())
    if key in keys:  # once at most: _add lists a key once
        if len(keys) == 1:
            del index[uid]
        else:
            at = keys.index(key)
            index[uid] = keys[:at] + keys[at + 1:]
