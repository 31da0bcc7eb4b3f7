"""What a report derives from one pod, kept while the pod is unchanged: the informer hands
out the same PodInfo object until something in it changes, so identity says when to derive
again."""

from __future__ import annotations

from typing import Callable, Generic, Sequence, TypeVar

from koordlet.statesinformer.model import PodInfo

T = TypeVar("T")


class PodMemo(Generic[T]):
    def __init__(self, derive: Callable[[PodInfo], T]) -> None:
        self._derive = derive
        self._by_uid: dict[str, tuple[PodInfo, T]] = {}

    def of(self, pod: PodInfo) -> T:
        known = self._by_uid.get(pod.uid)
        if known is None or known[0] is not pod:
            known = self._by_uid[pod.uid] = (pod, self._derive(pod))
        return known[1]

    def __len__(self) -> int:
        return len(self._by_uid)

    def keep_only(self, pods: Sequence[PodInfo]) -> None:
        """Forget the pods no longer listed."""
        if len(self._by_uid) > len(pods):
            listed = {pod.uid for pod in pods}
            for uid in [uid for uid in self._by_uid if uid not in listed]:
                del self._by_uid[uid]
