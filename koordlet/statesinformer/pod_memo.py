"""What a reader derives from one pod, kept while the pod is unchanged.

The informer hands out a new pods() tuple whenever any pod changes, and the very same
PodInfo object for each pod that did not (a PodInfo is frozen): identity says when to
derive again. A report or a QoS strategy that derives something from every pod (series
keys, rows, the containers it may scale, a pod's bound CPUs) then derives it only for the
pods that are new objects: at 1,000 pods, while pods start and one changes every second,
deriving every pod again held the loop for most of a QoS round (bench.qos_round --churn).
"""

from __future__ import annotations

from typing import Callable, Generic, Sequence, TypeVar

from koordlet.statesinformer.model import PodInfo

T = TypeVar("T")


class PodMemo(Generic[T]):
    """`derive(pod)` per pod uid, kept while the uid maps to that very object."""

    def __init__(self, derive: Callable[[PodInfo], T]) -> None:
        self._derive = derive
        self._by_uid: dict[str, tuple[PodInfo, T]] = {}
        self._listed: tuple[Sequence[PodInfo] | None, list[T]] = (None, [])

    def of(self, pod: PodInfo) -> T:
        known = self._by_uid.get(pod.uid)
        if known is None or known[0] is not pod:
            known = self._by_uid[pod.uid] = (pod, self._derive(pod))
        return known[1]

    def values(self, pods: Sequence[PodInfo]) -> list[T]:
        """[of(pod) for pod in pods], the pods not listed forgotten; the same list while
        `pods` is the same sequence (the caller must not change it)."""
        if pods is self._listed[0]:
            return self._listed[1]
        values = [self.of(pod) for pod in pods]
        self.keep_only(pods)
        self._listed = (pods, values)
        return values

    def clear(self) -> None:
        """Forget everything: what `derive` reads besides the pod (settings) changed."""
        self._by_uid, self._listed = {}, (None, [])

    def __len__(self) -> int:
        return len(self._by_uid)

    def keep_only(self, pods: Sequence[PodInfo]) -> None:
        """Forget the pods no longer listed."""
        if len(self._by_uid) > len(pods):
            listed = {pod.uid for pod in pods}
            for uid in [uid for uid in self._by_uid if uid not in listed]:
                del self._by_uid[uid]
