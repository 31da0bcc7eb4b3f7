"""The ORM as a daemon module: reads the topology, restores the checkpoint, serves QRM
registration and PodResources, admits pods the states informer reports and releases
the ones it deletes, and reconciles every --orm-reconcile-period.

Other agents reach it only through the ports it offers (orm/agent.py): as CpusetProvider
(`cpuset_for`, `on_allocations_changed`) and as Admitter (`admit_now(pod, container)` for a
synchronous NRI CreateContainer, raising AdmissionError with the reason to hand back to the
runtime). `admit_pod(pod)` is the async entry point; `.allocations` (OrmAllocations) the
read API of its own servers.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import replace

import grpc
import structlog

from koordlet.agent import StartupError
from koordlet.config import Config
from koordlet.metrics.client import CollectorRegistry
from koordlet.orm.allocation import Allocation, OrmAllocations
from koordlet.orm.checkpoint import CheckpointStore
from koordlet.orm.cpu_layout import CpuLayout
from koordlet.orm.manager import AdmissionDeferred, AdmissionError, Orm
from koordlet.orm.metrics import OrmMetrics
from koordlet.orm.options import OrmOptions
from koordlet.orm.podresources.kubelet_devices import KubeletDevicesClient
from koordlet.orm.podresources.server import RATE_BURST, RATE_QPS, PodResourcesServicer, start_pod_resources_server
from koordlet.orm.registration import start_registration_server
from koordlet.orm.requests import pod_request
from koordlet.orm.zones import zones_summary
from koordlet.ports.zones import NumaZones
from koordlet.server.http_endpoint import Reply, json_reply
from koordlet.statesinformer.api import StatesInformer
from koordlet.statesinformer.model import ContainerInfo, ContainerState, PodEvent, PodEventKind, PodInfo
from koordlet.topology.manager import Scope
from koordlet.topology.policy import PolicyError, new_policy, parse_policy_name
from koordlet.util.host_facts import HostFacts
from koordlet.util.periodic import FirstRun, Periodic
from koordlet.util.token_bucket import TokenBucket
from system.cpuset import parse_cpuset
from system.errors import InvalidValue

log = structlog.get_logger(__name__)

CHECKPOINT_DIR = "orm"
# not EXITED: a runtime may list what it holds as UNKNOWN; the informer drops exited ones
_ADOPTABLE_STATES = frozenset({ContainerState.CREATED, ContainerState.RUNNING, ContainerState.UNKNOWN})


def _cpuset(text: str | None) -> frozenset[int]:
    """A runtime's cpuset text, or the empty set when unset or malformed."""
    if not text:
        return frozenset()
    try:
        return parse_cpuset(text)
    except InvalidValue:
        return frozenset()


class OrmModule:
    name = "orm"

    def __init__(self, config: Config, facts: HostFacts, states: StatesInformer | None,
                 registry: CollectorRegistry | None = None) -> None:
        self._config = config
        self._change_listeners: list[Callable[[], None]] = []
        self._registry = registry
        self._metrics: OrmMetrics | None = None
        self._facts = facts
        self._states = states
        self.orm: Orm | None = None
        self._servers: list[grpc.aio.Server] = []
        self._kubelet: KubeletDevicesClient | None = None
        self._tasks: set[asyncio.Task] = set()
        self._reconciler: Periodic | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._ready = False
        self._load_error: str | None = None

    @property
    def allocations(self) -> OrmAllocations:
        if self.orm is None:
            raise RuntimeError("the ORM has not started")
        return self.orm.allocations

    def build_orm(self) -> Orm:
        """The ORM from the config and the host's topology; StartupError when it cannot be used."""
        config = self._config
        topology = self._facts.topology
        if topology is None:
            raise StartupError("orm: cannot read the CPU topology: %s" % self._facts.topology_error, exit_code=2)
        layout = CpuLayout.of(topology)
        try:
            policy = new_policy(parse_policy_name(config[OrmOptions].topology_policy_name), layout.numa_nodes,
                                config[OrmOptions].numeric_align_resources)
            return Orm(layout, config[OrmOptions].reserved_cpus, policy,
                       CheckpointStore(config.common.state_dir / CHECKPOINT_DIR), Scope(config[OrmOptions].topology_manager_scope))
        except (PolicyError, ValueError) as exc:
            raise StartupError("orm: %s" % exc, exit_code=2) from None

    async def start(self) -> None:
        config = self._config
        orm = self.orm = self.build_orm()
        for listener in self._change_listeners:
            orm.on_change(listener)
        if self._registry is not None and self._metrics is None:
            self._metrics = OrmMetrics(
                self._registry, lambda: len(orm.allocations.online_cpus - orm.allocations.shared_pool()),
                lambda: sum(1 for p in orm.plugins.values() if not p.stopped))
        assert orm.store is not None
        try:
            orm.restore(orm.store.load())
        except OSError as exc:  # there, but unreadable: kept as it is; the runtime's cpusets are adopted
            self._load_error = "checkpoint %s unreadable: %s" % (orm.store.path, exc.strerror or exc)
            log.error("orm_checkpoint_unreadable", path=str(orm.store.path), error=exc.strerror or str(exc))
        if self._states is not None and self._states.synced():
            await orm.reconcile(p.uid for p in self._states.pods())
        try:
            for socket_dir in config[OrmOptions].qrm_socket_dirs:
                self._servers.append(await start_registration_server(socket_dir, orm.register_plugin))
            if config[OrmOptions].orm_devices_provider == "kubelet":
                self._kubelet = KubeletDevicesClient(config[OrmOptions].orm_kubelet_pod_resources_endpoints)
            servicer = PodResourcesServicer(orm.allocations, orm.layout.node_memory, self._states,
                                            self._kubelet, TokenBucket(RATE_QPS, RATE_BURST))
            self._servers.append(await start_pod_resources_server(
                config[OrmOptions].pod_resources_server_endpoint, servicer, config[OrmOptions].pod_resources_socket_group))
        except (OSError, RuntimeError) as exc:
            await self.stop()
            raise StartupError("orm: cannot serve its sockets: %s" % exc, exit_code=2) from None
        if self._states is not None:
            self._unsubscribe = self._states.subscribe(self._on_pod_event)
            for pod in self._states.pods():
                self._adopt_running(pod)
                self._spawn(self._admit_quietly(pod))
        self._reconciler = Periodic("orm-reconcile", self.reconcile_once, self._config[OrmOptions].orm_reconcile_period,
                                    first_run=FirstRun.AFTER_INTERVAL, event="orm_reconcile_failed",
                                    registry=self._registry)
        self._reconciler.start()
        self._ready = True
        log.info("orm_started", policy=orm.topology.policy.name.value, scope=orm.topology.scope.value,
                 numa_nodes=list(orm.layout.numa_nodes), reserved=sorted(config[OrmOptions].reserved_cpus),
                 restored_pods=len(orm.table.pod_uids()),
                 pod_resources=str(config[OrmOptions].pod_resources_server_endpoint))

    async def stop(self) -> None:
        self._ready = False
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._reconciler is not None:
            await self._reconciler.stop()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for server in self._servers:
            await server.stop(grace=0.5)
        self._servers.clear()
        if self.orm is not None:
            for plugin in list(self.orm.plugins.values()):
                await plugin.stop()
        if self._kubelet is not None:
            await self._kubelet.close()

    def ready(self) -> bool:
        """Running, and able to keep what it decides: a checkpoint it cannot write means
        admissions fail, and the node must say so."""
        store = self.orm.store if self.orm is not None else None
        writable = store is None or store.write_error is None
        return self._ready and writable and self._reconciler is not None and self._reconciler.alive()

    def degraded(self) -> str | None:
        store = self.orm.store if self.orm is not None else None
        return (store.write_error if store is not None else None) or self._load_error

    # ------------------------------------------------------------ what other agents call

    def cpuset_for(self, pod_uid: str, container_name: str) -> frozenset[int] | None:
        """The runtime hooks' CpusetProvider: a container's exclusive CPUs, None when not pinned."""
        return None if self.orm is None else self.orm.allocations.cpuset_for(pod_uid, container_name)

    def on_allocations_changed(self, listener: Callable[[], None]) -> None:
        """`listener()` after every committed change of the allocations (on the loop)."""
        self._change_listeners.append(listener)
        if self.orm is not None:
            self.orm.on_change(listener)

    def admit_now(self, pod: PodInfo, container: ContainerInfo | None = None) -> None:
        """Admit `container` (added to `pod` when the informer does not list it yet) before the
        runtime creates it, from a synchronous NRI handler: AdmissionError (with the reason
        for containerd) to refuse it. When the decision would have to wait (a QRM plugin), the
        admission runs in the background instead and the runtime hooks hear of the result."""
        if self.orm is None:
            return
        if container is not None and pod.container_by_id(container.id) is None:
            pod = replace(pod, containers=pod.containers + (container,))
        request = pod_request(pod, self._config[OrmOptions].orm_resource_names_map, self._config[OrmOptions].cpu_manager_policy == "static")
        start = time.perf_counter()
        try:
            self.orm.admit_now(request)
        except AdmissionDeferred:
            self._spawn(self._admit_quietly(pod))
            return
        except AdmissionError:
            self._count(False, start)
            raise
        self._count(True, start)

    def _count(self, admitted: bool, start: float) -> None:
        if self._metrics is None:
            return
        if admitted:
            self._metrics.admitted.inc()
            self._metrics.seconds.observe(time.perf_counter() - start)
        else:
            self._metrics.rejected.inc()

    # ------------------------------------------------------------ pods

    async def admit_pod(self, pod: PodInfo) -> tuple[Allocation, ...]:
        """Admit (idempotently) and return the pod's allocations; AdmissionError to reject."""
        if self.orm is None:
            raise RuntimeError("the ORM has not started")
        start = time.perf_counter()
        try:
            rows = await self.orm.admit(pod_request(pod, self._config[OrmOptions].orm_resource_names_map,
                                                    self._config[OrmOptions].cpu_manager_policy == "static"))
        except AdmissionError:
            self._count(False, start)
            raise
        self._count(True, start)
        return rows

    async def _admit_quietly(self, pod: PodInfo) -> None:
        orm = self.orm
        if orm is None or pod.uid in orm.rejections:
            return  # a rejected pod is retried by the runtime (NRI) or once it changes nothing here
        if all(orm.admitted(pod.uid, c.name) for c in pod.containers):
            return
        with contextlib.suppress(AdmissionError):  # logged and kept in orm.rejections
            await self.admit_pod(pod)

    def _on_pod_event(self, event: PodEvent) -> None:
        if event.kind is PodEventKind.DELETED:
            if self.orm is not None:
                self._spawn(self.orm.remove_pod(event.pod.uid))
        else:
            # synchronously: on an NRI (re)Synchronize the runtime hooks decide each
            # container's cpuset right after the informer's listeners ran
            self._adopt_running(event.pod)
            self._spawn(self._admit_quietly(event.pod))

    def _adopt_running(self, pod: PodInfo) -> None:
        """Adopt the exclusive CPUs the runtime already runs the pod's containers on when
        the ORM holds nothing for them (see adoption.py)."""
        orm = self.orm
        if orm is None:
            return
        running = {c.name: cpus for c in pod.containers
                   if c.state in _ADOPTABLE_STATES and not orm.admitted(pod.uid, c.name)
                   and (cpus := _cpuset(c.linux.cpuset_cpus))}
        if not running:
            return
        request = pod_request(pod, self._config[OrmOptions].orm_resource_names_map, self._config[OrmOptions].cpu_manager_policy == "static")
        orm.adopt_now(request, running)

    def _spawn(self, coroutine) -> None:
        task = asyncio.create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def reconcile_once(self) -> None:
        """Release gone pods and admit unseen ones (once the informer has synced), then
        refresh the allocations of plugins that asked to be reconciled."""
        if self.orm is None:
            return
        store = self.orm.store
        if store is not None and store.write_error is not None:
            await asyncio.to_thread(self.orm.make_durable)  # retried every round until the disk takes it
        if self._states is not None and self._states.synced():
            pods = self._states.pods()
            await self.orm.reconcile(p.uid for p in pods)
            for pod in pods:
                await self._admit_quietly(pod)
        await self.orm.reconcile_plugins()

    # ------------------------------------------------------------ HTTP

    def zones_route(self, query: str) -> Reply:
        if self.orm is None:
            return json_reply({"error": "orm not started"}, status=503)
        return json_reply(zones_summary(self.orm.layout, self.orm.allocations, self.orm.rejections))

    def topology_zones(self) -> NumaZones | None:
        if self.orm is None:
            return None
        options = self._config[OrmOptions]
        return NumaZones(zones_summary(self.orm.layout, self.orm.allocations, self.orm.rejections)["zones"],
                         options.topology_policy_name, options.topology_manager_scope)
