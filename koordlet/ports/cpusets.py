"""The exclusive-CPU port: an allocator that owns some containers' CPUs (the ORM) tells
the runtime hooks' CPUSetAllocator which CPUs a container is bound to, and when that
changes."""

from __future__ import annotations

from typing import Callable, Protocol


class CpusetProvider(Protocol):
    def cpuset_for(self, pod_uid: str, container_name: str) -> frozenset[int] | None:
        """The container's exclusive CPUs; None when this allocator does not pin it."""
        ...

    def on_allocations_changed(self, listener: Callable[[], None]) -> None:
        """Call `listener()` on the loop after every committed change of the answers."""
        ...


class NoExclusiveCpus:
    """No allocator on this node: nothing is pinned by it (the resource-status annotation
    still is, in the hooks)."""

    def cpuset_for(self, pod_uid: str, container_name: str) -> frozenset[int] | None:
        return None

    def on_allocations_changed(self, listener: Callable[[], None]) -> None:
        return None


NO_EXCLUSIVE_CPUS = NoExclusiveCpus()
