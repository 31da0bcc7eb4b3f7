"""What a strategy derives from each pod, kept while the informer hands out the same pod.

The informer hands out a new pods() tuple whenever any pod changes, and the very same
PodInfo objects for the pods that did not (a PodInfo is frozen). A strategy that derives
something from every pod (the series keys it reads, the containers it may scale, the tier
a pod's protection adds to) derives it again only for the pods that are new objects. At
1,000 pods, while pods start and one changes every second, deriving every pod again held
the loop for most of a round (bench.qos_round --churn).
"""

from __future__ import annotations

from typing import Callable, Generic, Sequence, TypeVar

from koordlet.statesinformer.model import PodInfo

V = TypeVar("V")


class PodMemo(Generic[V]):
    """`derive(pod)` per pod, kept by pod uid for as long as the uid maps to that very object
    and the context is equal."""

    __slots__ = ("_kept", "_pods", "_context", "_values")

    def __init__(self) -> None:
        self._kept: dict[str, tuple[PodInfo, V]] = {}
        self._pods: Sequence[PodInfo] | None = None
        self._context: object = None
        self._values: list[V] = []

    def values(self, pods: Sequence[PodInfo], derive: Callable[[PodInfo], V], context: object = None) -> list[V]:
        """[derive(pod) for pod in pods], derived again only for pods not seen as that object.
        `context`: what `derive` reads besides the pod (settings, a node figure); when it is
        not equal to the last call's, every pod is derived again. The list returned is the
        memo's: the caller must not change it."""
        same_context = context is self._context or context == self._context
        if pods is self._pods and same_context:
            return self._values
        kept = self._kept if same_context else {}
        fresh: dict[str, tuple[PodInfo, V]] = {}
        values: list[V] = []
        for pod in pods:
            entry = kept.get(pod.uid)
            if entry is None or entry[0] is not pod:
                entry = (pod, derive(pod))
            fresh[pod.uid] = entry
            values.append(entry[1])
        self._kept, self._pods, self._context, self._values = fresh, pods, context, values
        return values
