"""The ORM core: admit a pod (topology manager + providers), release it, restore from the
checkpoint, and keep the checkpoint in step with every change.

Providers per resource: a registered QRM plugin wins; otherwise the built-in CPU or
memory provider serves "cpu" / "memory". Resources nobody serves are not managed here.
Admissions are serialised: each sees the allocations of the ones before it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping

import structlog

from koordlet.orm.adoption import AdoptionConflict, adoptable, adopted_allocation
from koordlet.orm.allocation import BUILTIN, Allocation, AllocationTable, OrmAllocations
from koordlet.orm.builtin_cpu import BuiltinCpuProvider
from koordlet.orm.builtin_memory import BuiltinMemoryProvider
from koordlet.orm.checkpoint import CheckpointStore, encode_rows
from koordlet.orm.cpu_layout import CpuLayout
from koordlet.orm.plugin_codec import rows_from_listing
from koordlet.orm.plugin_endpoint import PluginEndpoint
from koordlet.orm.provider import AllocationError, ResourceProvider
from koordlet.topology.hint import DEFAULT_RESOURCE_KEY, ProviderHints, TopologyHint
from koordlet.topology.manager import Scope, TopologyAffinityError, TopologyManager
from koordlet.topology.policy import Policy
from koordlet.topology.request import ContainerRequest, PodRequest
from koordlet.util.board import Signal

log = structlog.get_logger(__name__)


class AdmissionError(Exception):
    """The pod is rejected; str() is the reason a runtime or a report can show."""


class AdmissionDeferred(Exception):
    """admit_now cannot decide without waiting (a QRM plugin serves a requested resource):
    use admit()."""


class Orm:
    def __init__(self, layout: CpuLayout, reserved: frozenset[int], policy: Policy,
                 store: CheckpointStore | None, scope: Scope = Scope.CONTAINER) -> None:
        unknown = reserved - layout.cpus
        if unknown:
            raise ValueError("reserved CPUs %s are not online" % sorted(unknown))
        self.layout = layout
        self.table = AllocationTable()
        self.store = store
        self.allocations = OrmAllocations(self.table, layout.cpus, reserved)
        self.builtins: tuple[ResourceProvider, ...] = (
            BuiltinCpuProvider(layout, reserved, self.table), BuiltinMemoryProvider(layout, self.table))
        self.plugins: dict[str, PluginEndpoint] = {}
        self.topology = TopologyManager(policy, [self], scope)
        self.rejections: dict[str, str] = {}  # pod uid -> last reason
        self._pending_removals: dict[str, set[str]] = {}  # plugin -> pod uids it has not heard about
        self._admitted: set[tuple[str, str]] = set()  # (pod uid, container): admitted, with or without rows
        self._changes = Signal("orm-allocations")
        self._lock = asyncio.Lock()

    # ------------------------------------------------------------ providers

    def provider_for(self, resource: str) -> ResourceProvider | None:
        plugin = self.plugins.get(resource)
        if plugin is not None:
            return plugin
        for builtin in self.builtins:
            if builtin.serves(resource):
                return builtin
        return None

    async def topology_hints(self, request: ContainerRequest) -> ProviderHints:
        """The ORM is the topology manager's one hint provider: every provider's hints, by resource."""
        merged: dict[str, list[TopologyHint] | None] = {}
        for resource in request.requests:
            provider = self.provider_for(resource)
            if provider is None:
                continue
            hints = await provider.topology_hints(request, resource)
            if hints:
                merged.update(hints)
        return merged or None

    async def register_plugin(self, endpoint: PluginEndpoint) -> None:
        old = self.plugins.get(endpoint.name)
        self.plugins[endpoint.name] = endpoint
        if old is not None and old is not endpoint:
            await old.stop()
        for pod_uid in sorted(self._pending_removals.pop(endpoint.name, set())):
            await self._tell_plugin_removed(endpoint, pod_uid)

    # ------------------------------------------------------------ admission

    def admitted(self, pod_uid: str, container: str | None = None) -> bool:
        """Whether the pod (any container of it), or that container, has been admitted."""
        if container is not None:
            return (pod_uid, container) in self._admitted
        return any(uid == pod_uid for uid, _ in self._admitted)

    async def admit(self, pod: PodRequest) -> tuple[Allocation, ...]:
        """Admit and allocate the pod's containers not admitted yet (in NRI mode they come one
        CreateContainer at a time); the pod's allocations, or AdmissionError to reject them."""
        async with self._lock:
            return await self._admit_locked(pod, sync=False)

    def admit_now(self, pod: PodRequest) -> tuple[Allocation, ...]:
        """admit() for callers that cannot await (a synchronous NRI CreateContainer handler):
        built-in providers never wait, so the admission runs to its end right here, between
        two steps of any admission in flight, the checkpoint written on the loop (about a
        millisecond; generations keep a slower background write from undoing it).
        AdmissionDeferred when a QRM plugin serves a requested resource."""
        for container in pod.containers:
            for resource in container.requests:
                if isinstance(self.provider_for(resource), PluginEndpoint):
                    raise AdmissionDeferred("resource plugin %s serves %s" % (resource, resource))
        coroutine = self._admit_locked(pod, sync=True)
        try:
            coroutine.send(None)
        except StopIteration as done:
            return done.value
        coroutine.close()
        raise RuntimeError("a built-in admission waited; it must not")

    async def _admit_locked(self, pod: PodRequest, sync: bool) -> tuple[Allocation, ...]:
        todo = tuple(c for c in pod.containers if (pod.pod_uid, c.container_name) not in self._admitted)
        if not todo:
            if sync:
                # admitted by a background admission whose checkpoint write may still be in
                # a worker thread: the runtime must not hear of CPUs a crash would lose
                self._make_durable()
            return self.table.for_pod(pod.pod_uid)
        names = {c.container_name for c in todo}
        try:
            await self.topology.admit(PodRequest(pod.pod_uid, pod.pod_namespace, pod.pod_name, todo),
                                      self._allocate_container)
        except (TopologyAffinityError, AllocationError) as exc:
            await self._release_containers(pod.pod_uid, names)
            self.rejections[pod.pod_uid] = str(exc)
            log.warning("orm_pod_rejected", pod=pod.pod_name, namespace=pod.pod_namespace,
                        uid=pod.pod_uid, containers=sorted(names), reason=str(exc))
            raise AdmissionError(str(exc)) from None
        self.rejections.pop(pod.pod_uid, None)
        self._admitted.update((pod.pod_uid, name) for name in names)
        allocated = [a for a in self.table.for_pod(pod.pod_uid) if a.container_name in names]
        if allocated:
            await self._commit(sync)
            log.info("orm_pod_admitted", pod=pod.pod_name, namespace=pod.pod_namespace, uid=pod.pod_uid,
                     allocations={"%s/%s" % (a.container_name, a.resource): a.result for a in allocated})
        return self.table.for_pod(pod.pod_uid)

    async def _allocate_container(self, container: ContainerRequest, hints: dict[str, TopologyHint]) -> None:
        for resource in container.requests:
            provider = self.provider_for(resource)
            if provider is None:
                continue
            hint = hints.get(resource, hints.get(DEFAULT_RESOURCE_KEY))
            for allocation in await provider.allocate(container, resource, hint):
                self.table.put(allocation)

    def adopt_now(self, pod: PodRequest, running: Mapping[str, frozenset[int]]) -> tuple[str, ...]:
        """Take the CPUs the runtime runs containers of `pod` on (container name -> cpuset)
        as their allocations, for containers not admitted yet whose cpuset is an exclusive
        allocation (see adoption.adoptable); synchronous, the checkpoint written before it
        returns. A conflict is logged and the container is left to admission. Returns the
        adopted container names."""
        adopted: list[str] = []
        if isinstance(self.provider_for("cpu"), PluginEndpoint):
            return ()  # a QRM plugin owns CPU allocations: it is asked, not overridden
        for request in pod.containers:
            cpus = running.get(request.container_name)
            if (cpus is None or (pod.pod_uid, request.container_name) in self._admitted
                    or not adoptable(request, cpus)):
                continue
            try:
                row = adopted_allocation(self.layout, self.allocations.reserved_cpus, self.table, request, cpus)
            except AdoptionConflict as exc:
                log.warning("orm_adoption_conflict", pod=pod.pod_name, namespace=pod.pod_namespace,
                            uid=pod.pod_uid, container=request.container_name, reason=str(exc))
                continue
            self.table.put(row)
            self._admitted.add((pod.pod_uid, request.container_name))
            adopted.append(request.container_name)
        if adopted:
            self.rejections.pop(pod.pod_uid, None)
            self._commit_now()
            rows = {name: self.table.get(pod.pod_uid, name, "cpu") for name in adopted}
            log.info("orm_containers_adopted", pod=pod.pod_name, namespace=pod.pod_namespace, uid=pod.pod_uid,
                     allocations={name: row.result for name, row in rows.items() if row is not None})
        return tuple(adopted)

    # ------------------------------------------------------------ release

    async def remove_pod(self, pod_uid: str) -> None:
        async with self._lock:
            self.rejections.pop(pod_uid, None)
            if await self._release(pod_uid):
                await self._commit()
                log.info("orm_pod_released", uid=pod_uid)

    async def _release_containers(self, pod_uid: str, containers: set[str]) -> None:
        """Undo a rejected admission: the whole pod when nothing else of it is held (plugins
        hear RemovePod), else only those containers' rows."""
        others = [a for a in self.table.for_pod(pod_uid) if a.container_name not in containers]
        if not others and not self.admitted(pod_uid):
            await self._release(pod_uid)
        else:
            self.table.remove_containers(pod_uid, containers)

    async def _release(self, pod_uid: str) -> tuple[Allocation, ...]:
        self._admitted = {key for key in self._admitted if key[0] != pod_uid}
        gone = self.table.remove_pod(pod_uid)
        for name in sorted({a.provider for a in gone} - {BUILTIN}):
            plugin = self.plugins.get(name)
            if plugin is None:
                self._pending_removals.setdefault(name, set()).add(pod_uid)
            else:
                await self._tell_plugin_removed(plugin, pod_uid)
        return gone

    async def _tell_plugin_removed(self, plugin: PluginEndpoint, pod_uid: str) -> None:
        try:
            await plugin.remove_pod(pod_uid)
        except AllocationError as exc:
            self._pending_removals.setdefault(plugin.name, set()).add(pod_uid)
            log.warning("orm_plugin_remove_pod_failed", plugin=plugin.name, uid=pod_uid, error=str(exc))

    # ------------------------------------------------------------ restart

    def restore(self, entries: Iterable[Allocation]) -> None:
        """Take the checkpointed allocations as they were (before reconciling with live pods)."""
        self.table.replace_all(entries)
        self._admitted = {(a.pod_uid, a.container_name) for a in self.table.entries()}
        doubled = self.table.double_booked_cpus()
        if doubled:
            log.error("orm_checkpoint_double_booked", cpus=sorted(doubled))
        self._notify()

    async def reconcile(self, live_pod_uids: Iterable[str]) -> tuple[str, ...]:
        """Release every allocation whose pod is gone; returns the released pod uids."""
        live = set(live_pod_uids)
        async with self._lock:
            known = self.table.pod_uids() | {uid for uid, _ in self._admitted}
            stale = sorted(known - live)
            removed = False
            for pod_uid in stale:
                removed |= bool(await self._release(pod_uid))
            if removed:
                await self._commit()
            if stale:
                log.info("orm_reconciled", released=stale)
        return tuple(stale)

    async def reconcile_plugins(self) -> int:
        """Re-read what plugins with need_reconcile say they allocated (GetResourcesAllocation)
        and take their word for pods we admitted; returns how many rows changed."""
        changed = 0
        async with self._lock:
            admitted = self.table.pod_uids()
            for plugin in list(self.plugins.values()):
                if plugin.stopped or not plugin.options.need_reconcile:
                    continue
                try:
                    response = await plugin.resources_allocation()
                except AllocationError as exc:
                    log.warning("orm_plugin_reconcile_failed", plugin=plugin.name, error=str(exc))
                    continue
                for row in rows_from_listing(plugin.name, response, self.table, admitted):
                    if self.table.get(*row.key) != row:
                        self.table.put(row)
                        changed += 1
            if changed:
                await self._commit()
                log.info("orm_plugin_allocations_reconciled", rows=changed)
        return changed

    def on_change(self, listener: Callable[[], None]) -> None:
        """`listener()` after every committed change (admission, release, restore, reconcile)."""
        self._changes.subscribe(listener)

    async def _commit(self, sync: bool = False) -> None:
        """Write the checkpoint (under the admission lock, so in order), off the loop unless
        `sync`: the caller is answered only once the state is durable. Then tell listeners."""
        if sync:
            self._commit_now()
            return
        if self.store is not None:
            blob = encode_rows(self.table.canonical_entries())
            await asyncio.to_thread(self.store.write_blob, blob, self.table.generation)
        self._notify()

    def _commit_now(self) -> None:
        """_commit on the loop, for synchronous callers (NRI handlers, informer listeners)."""
        if self.store is not None:
            self.store.write_blob(encode_rows(self.table.canonical_entries()), self.table.generation)
        self._notify()

    def make_durable(self) -> None:
        """Write the table now if the checkpoint lags it (after a failed write)."""
        self._make_durable()

    def _make_durable(self) -> None:
        """Write the table now unless the checkpoint already holds this generation (a write
        of it in flight in a worker thread finishes first: the store serialises writes)."""
        if self.store is not None and self.store.durable_generation < self.table.generation:
            self.store.write_blob(encode_rows(self.table.canonical_entries()), self.table.generation)

    def _notify(self) -> None:
        self._changes.fire()  # a listener's failure is logged there: it must not undo the change
