"""The admission port: an out-of-band allocator (the ORM) admits each container before
the runtime creates it; the runtime hooks ask it at NRI CreateContainer."""

from __future__ import annotations

from typing import Protocol

from koordlet.statesinformer.model import ContainerInfo, PodInfo


class Admitter(Protocol):
    def admit_now(self, pod: PodInfo, container: ContainerInfo | None = None) -> None:
        """Admit `container` of `pod` (the whole pod when None); raise an exception whose
        str() is the reason to refuse it (the runtime fails the container with it)."""
        ...


class AdmitAll:
    """No allocator on this node: every container is admitted."""

    def admit_now(self, pod: PodInfo, container: ContainerInfo | None = None) -> None:
        return None


ADMIT_ALL = AdmitAll()
