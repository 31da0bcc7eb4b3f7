"""Which pods a reconciling strategy must look at this round.

A strategy that writes per-pod values (memory QoS, static burst, resctrl tasks, the BE
cpuset of new pods) only needs the pods that are new or changed since the last round,
plus everything again on a full pass: when its settings change, and every `resync`
seconds so drift made by others is repaired (the executor re-verifies files on the same
60 s period). Pod values are frozen, so "changed" is an identity test.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from koordlet.statesinformer.model import PodInfo

RESYNC_SECONDS = 60.0


@dataclass(slots=True)
class PodChanges:
    resync: float = RESYNC_SECONDS
    _seen: dict[str, PodInfo] = field(default_factory=dict)
    _settings: Any = None
    _last_full: float | None = None
    removed: bool = False  # whether the last select saw pods go away
    _last_pods: Sequence[PodInfo] | None = None  # the informer hands out the same tuple while nothing changed

    def select(self, pods: Sequence[PodInfo], now: float, settings: Any) -> tuple[list[PodInfo], bool]:
        """(pods to act on, whether this is a full pass)."""
        if self._last_full is None or now - self._last_full >= self.resync or settings != self._settings:
            self._last_full = now
            self._settings = settings
            self._seen = {pod.uid: pod for pod in pods}
            self._last_pods = pods
            return list(pods), True
        self.removed = False
        if pods is self._last_pods:
            return [], False
        self._last_pods = pods
        seen = self._seen
        changed = [pod for pod in pods if seen.get(pod.uid) is not pod]
        for pod in changed:
            seen[pod.uid] = pod
        if len(seen) > len(pods):
            live = {pod.uid for pod in pods}
            for uid in [uid for uid in seen if uid not in live]:
                del seen[uid]
                self.removed = True
        return changed, False

    def forget(self) -> None:
        """Make the next round a full pass."""
        self._last_full = None
