"""Wiring: from a Config to a running Daemon with its modules."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import structlog
from prometheus_client import CollectorRegistry

from koordlet import __version__
from koordlet.config import Config, parse_addr
from koordlet.daemon.lifecycle import Daemon, Module, StartupError
from koordlet.util.host_facts import log_host_facts
from koordlet.daemon.executor_module import ExecutorModule
from koordlet.server.http_endpoint import HttpEndpoint
from koordlet.metriccache.api import MetricCache
from koordlet.metrics.registry import new_registry
from koordlet.metricsadvisor.builder import build_metrics_advisor
from koordlet.reporter.builder import build_reports
from koordlet.orm.module import OrmModule
from koordlet.runtimehooks.allocations import CpusetProvider
from koordlet.runtimehooks.module import build_runtime_hooks
from koordlet.daemon.sdnotify import notify
from koordlet.qosmanager.builder import build_qos_manager
from koordlet.statesinformer.api import StatesInformer
from koordlet.ports.be_suppress import BESuppressBoard
from koordlet.statesinformer.module import build_states_informer
from koordlet.slo.module import build_node_slo
from koordlet.slo.source import NodeSLOSource
from system.file_io import KeptFdPool
from system.host import Host
from system.perf_access import raise_fd_limit

log = structlog.get_logger(__name__)


def prepare_state_dir(path: Path) -> None:
    """Create the state directory (0700) or fail with a clear error."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise StartupError(f"cannot create state dir {path}: {exc.strerror or exc}", exit_code=2) from exc
    if not os.access(path, os.W_OK | os.X_OK):
        raise StartupError(f"state dir {path} is not writable", exit_code=2)


def host_of(config: Config) -> Host:
    return Host(config.cgroup_root_dir, config.proc_root_dir, config.sys_root_dir)


def daemon_fd_pool() -> KeptFdPool:
    """The daemon's one pool of kept fds (executor writes, collectors' usage reads): the soft
    RLIMIT_NOFILE raised towards the hard limit first (systemd starts services at 1024), then
    half of it, capped (system.file_io.fd_budget). Perf fds budget what the pool leaves."""
    raise_fd_limit()
    return KeptFdPool()


@dataclass(slots=True)
class Hubs:
    """What the daemon's modules share, built once by build_daemon.

    Agents talk only through the two hubs (states informer, metric cache); a
    builder that provides one sets it here for the builders after it. The
    executor exists only once its module has started: read `executor.executor`
    in a module's start(), not in its builder.
    """

    config: Config
    host: Host
    registry: CollectorRegistry
    http: HttpEndpoint
    executor: ExecutorModule
    states: StatesInformer | None = None
    metric_cache: MetricCache | None = None
    node_slo: NodeSLOSource | None = None  # set by build_node_slo
    # The ORM when --topology-policy-name is set: `.allocations` is the read API (cpuset_for,
    # mems_for, shared_pool, subscribe), `admit_now` / `admit_pod` the admission entry points.
    orm: OrmModule | None = None
    # Who owns exclusive CPUs besides the resource-status annotation (the runtime hooks'
    # CPUSetAllocator asks it `cpuset_for`): the ORM when it runs.
    cpuset_provider: CpusetProvider | None = None
    # The BE tier's current CPU suppress decision: the QoS manager's CPU suppress publishes it,
    # the runtime hooks keep BE cpusets and quotas inside it.
    be_suppress: BESuppressBoard = field(default_factory=BESuppressBoard)
    # The one kept-fd budget of the daemon: the executor's KeptFdFileIO and the collectors'
    # UsageReader keep their fds here (LRU eviction across both), the CPI collector budgets
    # its perf fds against what it leaves. build_daemon hands the same pool to ExecutorModule.
    fd_pool: KeptFdPool = field(default_factory=daemon_fd_pool)


def build_orm(hubs: Hubs) -> list[Module]:
    """The out-of-band resource manager, when a topology policy is named. Before the runtime
    hooks: their CPUSetAllocator takes its exclusive CPUs from here. The informer is read at
    start (the runtime hooks' builder may provide it after this one ran)."""
    if not hubs.config.topology_policy_name:
        return []
    hubs.orm = OrmModule(hubs.config, hubs.host, lambda: hubs.states, hubs.registry)
    hubs.cpuset_provider = hubs.orm
    hubs.http.add_route("/api/v1/topology", hubs.orm.zones_route)
    return [hubs.orm]


def build_runtime_hooks_with_orm(hubs: Hubs) -> list[Module]:
    """The runtime hooks, told when the ORM's allocations change and asking it to admit each
    container at NRI CreateContainer (a rejection fails the container with the reason)."""
    modules = build_runtime_hooks(hubs)
    if hubs.orm is not None:
        for module in modules:
            hubs.orm.on_allocations_changed(module.engine.allocations_changed)
            module.admitter = hubs.orm
    return modules


# Each builder looks at the config and returns the modules to run (none when its
# feature is off). Order is start order: providers of a hub before its readers.
ModuleBuilder = Callable[[Hubs], Iterable[Module]]
MODULE_BUILDERS: tuple[ModuleBuilder, ...] = (
    build_states_informer,  # provides hubs.states
    build_metrics_advisor,  # provides hubs.metric_cache
    build_node_slo,  # provides hubs.node_slo: before the runtime hooks (GroupIdentity reads NodeSLO.cpu_qos)
    build_orm,
    build_runtime_hooks_with_orm,
    build_reports,  # reads both hubs
    build_qos_manager,  # last: reads both hubs and the NodeSLO
)


def new_hubs(config: Config, registry: CollectorRegistry, http: HttpEndpoint) -> Hubs:
    """The hubs with the executor module, both holding the daemon's one fd pool."""
    pool = daemon_fd_pool()
    return Hubs(config, host_of(config), registry, http, ExecutorModule(host_of(config), registry, pool),
                fd_pool=pool)


def build_daemon(config: Config, builders: Iterable[ModuleBuilder] | None = None) -> Daemon:
    registry = new_registry(config.node_name)
    daemon = Daemon()
    bind_host, port = parse_addr(config.addr)
    http = HttpEndpoint(bind_host, port, registry, daemon.readiness)
    hubs = new_hubs(config, registry, http)
    daemon.add(hubs.executor)
    for builder in MODULE_BUILDERS if builders is None else builders:
        for module in builder(hubs):
            daemon.add(module)
    daemon.add(http)  # last: routes are all added once it listens
    return daemon


async def run(config: Config) -> int:
    log.info("koordlet_starting", version=__version__, node=config.node_name,
             mode="standalone" if config.standalone else "cluster",
             feature_gates_overridden=config.feature_gates.overridden())
    unbuilt = config.feature_gates.enabled_unimplemented()
    if unbuilt:  # say so: an operator must not believe these features are running
        log.warning("feature_gates_not_implemented", gates=list(unbuilt))
    try:
        prepare_state_dir(config.state_dir)
    except StartupError as exc:
        log.error("startup_failed", error=str(exc))
        return exc.exit_code
    log_host_facts(host_of(config))
    daemon = build_daemon(config)
    task = asyncio.ensure_future(daemon.run())
    await _notify_when_started(daemon, task)
    code = await task
    notify("STOPPING=1")
    log.info("koordlet_exiting", exit_code=code)
    return code


async def _notify_when_started(daemon: Daemon, task: asyncio.Future) -> None:
    """Tell systemd READY=1 once every module has started (not if start failed).

    Started, not ready: a module may wait long for a peer (containerd, the API
    server) and /readyz reports that; systemd only needs to know start-up is over.
    """
    started = asyncio.ensure_future(daemon.started.wait())
    await asyncio.wait({started, task}, return_when=asyncio.FIRST_COMPLETED)
    if daemon.started.is_set():
        notify("READY=1")
    started.cancel()


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop]:
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop
    return uvloop.new_event_loop
