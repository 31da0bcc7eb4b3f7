"""The composition root: from a Config to a running Daemon.

1. `build_hubs` makes every shared hub (see koordlet/hubs.py) before any agent exists.
2. The hubs' own modules come first in start order: the executor (its kept fds are
   closed at stop) and the metric cache (restored from disk before collectors write).
3. Each agent of `koordlet.agents.AGENTS` that the config turns on is built from the
   hubs; the ports it offers are laid on the hubs the agents after it receive.
4. The HTTP endpoint starts last, once every route is added.
Nothing below this module imports it.
"""

from __future__ import annotations

import asyncio
import signal
from typing import Any, Callable, Iterable

import structlog

from koordlet import __version__
from koordlet.agent import AgentSpec, Module, StartupError
from koordlet.agents import AGENTS
from koordlet.config import Config, parse_addr
from koordlet.daemon import gc_policy, glibc_heap
from koordlet.daemon.executor_module import ExecutorModule
from koordlet.daemon.fd_limit import ensure_open_files
from koordlet.daemon.lifecycle import Daemon
from koordlet.daemon.sdnotify import notify
from koordlet.daemon.state_dir import StateDirLock, prepare_state_dir
from koordlet.hubs import Hubs, Routes
from koordlet.metriccache.module import MetricCacheModule
from koordlet.metriccache.options import MetricCacheOptions
from koordlet.metriccache.retention import retention_for
from koordlet.metriccache.store import MetricStore
from koordlet.metrics.client import CollectorRegistry
from koordlet.metrics.histogram import Histogram
from koordlet.metrics.registry import new_registry, record_host_probe
from koordlet.metricsadvisor.options import AdvisorOptions
from koordlet.ports.be_suppress import BESuppressBoard
from koordlet.server.http_endpoint import HttpEndpoint
from koordlet.slo.agent import node_slo_for
from koordlet.slo.source import NodeSLOFile
from koordlet.statesinformer.node import node_from_facts
from koordlet.statesinformer.sources import expected_sources
from koordlet.statesinformer.store import PodStore
from koordlet.util.host_facts import HostFacts
from koordlet.util.kube_client import KubeApi
from resourceexecutor import KeptFdFileIO, ResourceExecutor
from system.file_io import KeptFdPool
from system.host import Host
from system.perf_access import raise_fd_limit

log = structlog.get_logger(__name__)


def host_of(config: Config) -> Host:
    return Host(config.common.cgroup_root_dir, config.common.proc_root_dir, config.common.sys_root_dir)


def daemon_fd_pool() -> KeptFdPool:
    """The daemon's one pool of kept fds (executor writes, collectors' usage reads): the soft
    RLIMIT_NOFILE raised towards the hard limit first (systemd starts services at 1024), then
    half of it, capped (system.file_io.fd_budget). Perf fds budget what the pool leaves."""
    raise_fd_limit()
    return KeptFdPool()


def build_hubs(config: Config, registry: CollectorRegistry, http: Routes,
               facts: HostFacts | None = None, fd_pool: KeptFdPool | None = None) -> Hubs:
    """Every shared hub, complete. `facts` and `fd_pool` default to probing this host and
    the daemon's raised fd limit; tests pass their own."""
    host = host_of(config)
    facts = facts if facts is not None else HostFacts(host)
    pool = fd_pool if fd_pool is not None else daemon_fd_pool()
    executor = ResourceExecutor(facts.files, registry=registry, io=KeptFdFileIO(pool=pool), histogram=Histogram)
    expected = expected_sources(config)
    log.info("states_informer_expects", sources=sorted(source.value for source in expected))
    states = PodStore(node_from_facts(config.common.node_name, facts), expected=expected,
                      on_cgroup_gone=executor.forget_cgroup_soon)
    kube = KubeApi(config)
    node_slo = node_slo_for(config, kube)
    node_slo.count_refusals_on(registry)
    advisor = config[AdvisorOptions]
    return Hubs(config=config, host=host, facts=facts, registry=registry, http=http, fd_pool=pool,
                executor=executor, states=states, metric_cache=MetricStore(retention_for(
                    config[MetricCacheOptions], advisor.collect_res_used_interval_seconds,
                    advisor.collect_container_res_used_interval_seconds)),
                node_slo=node_slo, be_suppress=BESuppressBoard(), kube=kube)


def hub_modules(hubs: Hubs) -> list[Module]:
    """The modules that own a hub's lifecycle, started before every agent."""
    return [ExecutorModule(hubs.executor, hubs.facts),
            MetricCacheModule(hubs.metric_cache, hubs.config.common.state_dir,
                              gc_interval=hubs.config[MetricCacheOptions].metric_gc_interval_seconds)]


def build_agents(hubs: Hubs, agents: Iterable[AgentSpec] = AGENTS) -> list[Module]:
    """The modules of every enabled agent, in registry order."""
    modules: list[Module] = []
    for spec in agents:
        if not spec.enabled(hubs.config):
            log.debug("agent_disabled", agent=spec.name)
            continue
        built = spec.build(hubs)
        modules.extend(built.modules)
        if built.offers is not None:
            hubs = hubs.with_ports(built.offers)
    return modules


def build_daemon(config: Config, agents: Iterable[AgentSpec] = AGENTS,
                 facts: HostFacts | None = None) -> Daemon:
    registry = new_registry(config.common.node_name)
    daemon = Daemon()
    bind_host, port = parse_addr(config.common.addr)
    http = HttpEndpoint(bind_host, port, registry, daemon.readiness)
    http.bind()  # before anything starts: a port in use is found at once
    hubs = build_hubs(config, registry, http, facts=facts)
    topology = hubs.facts.topology
    record_host_probe(registry, config.common.node_name, topology is not None,
                      topology is not None and bool(topology.numa_nodes))
    for module in hub_modules(hubs) + build_agents(hubs, agents):
        daemon.add(module)
    daemon.add(http)  # last: routes are all added once it serves (it listens already)
    if isinstance(hubs.node_slo, NodeSLOFile):
        daemon.on_hangup(hubs.node_slo.reread)
    return daemon


async def run(config: Config) -> int:
    loop = asyncio.get_running_loop()
    # a stop asked for while the daemon is still being built (its port already bound) is
    # kept and honoured once it runs; the daemon's own handlers replace these
    early_stop: list[int] = []
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, early_stop.append, signum)
    try:
        return await _run(config, early_stop)
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)


async def _run(config: Config, early_stop: list[int]) -> int:
    log.info("koordlet_starting", version=__version__, node=config.common.node_name,
             mode="standalone" if config.common.standalone else "cluster",
             feature_gates_overridden=config.common.feature_gates.overridden())
    for notice in config.notices:
        log.warning("command_line_flag_ignored", notice=notice)
    unbuilt = config.common.feature_gates.enabled_unimplemented()
    if unbuilt:  # say so: an operator must not believe these features are running
        log.warning("feature_gates_not_implemented", gates=list(unbuilt))
    lock = StateDirLock(config.common.state_dir)
    try:
        ensure_open_files()  # main() checked before importing us; run() may be called alone
        prepare_state_dir(config.common.state_dir)
        lock.acquire()
    except StartupError as exc:
        log.error("startup_failed", error=str(exc))
        return exc.exit_code
    asyncio.get_running_loop().set_exception_handler(_log_loop_exception)
    facts = HostFacts(host_of(config))
    facts.log()
    try:
        daemon = build_daemon(config, facts=facts)
    except StartupError as exc:
        lock.release()
        log.error("startup_failed", error=str(exc))
        return exc.exit_code
    # at once, with no await in between: a signal that arrived while the daemon was being
    # built but that the loop has not dispatched yet must reach the daemon, not the list
    daemon.take_signals()
    if early_stop:
        log.info("stop_signal_received", signal=signal.Signals(early_stop[0]).name, during="start")
        daemon.request_stop()
    task = asyncio.ensure_future(daemon.run())
    undo_gc_policy = await _notify_when_started(daemon, task, config.common.gc_young_threshold)
    refresh = asyncio.ensure_future(gc_policy.refresh_frozen())
    trimming = asyncio.ensure_future(glibc_heap.trim_periodically())
    try:
        code = await task
    finally:
        refresh.cancel()
        trimming.cancel()
        if undo_gc_policy is not None:
            undo_gc_policy()
    notify("STOPPING=1")
    lock.release()
    log.info("koordlet_exiting", exit_code=code)
    return code


async def _notify_when_started(daemon: Daemon, task: asyncio.Future[int],
                               gc_young_threshold: int) -> Callable[[], None] | None:
    """Tell systemd READY=1 once every module has started (not if start failed), then apply
    the collector's policy (koordlet.daemon.gc_policy); what undoes it, if applied.

    Started, not ready: a module may wait long for a peer (containerd, the API
    server) and /readyz reports that; systemd only needs to know start-up is over.
    """
    started: asyncio.Future[Any] = asyncio.ensure_future(daemon.started.wait())
    waiting: list[asyncio.Future[Any]] = [started, task]
    await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
    started.cancel()
    if not daemon.started.is_set():
        return None
    notify("READY=1")
    return gc_policy.apply_after_start_up(gc_young_threshold)


def _log_loop_exception(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """What asyncio would print as a raw traceback (a task's exception nobody retrieved, a
    callback that raised): one structured event instead."""
    exc = context.get("exception")
    log.error("asyncio_unhandled", message=str(context.get("message", ""))[:200],
              error=repr(exc) if exc is not None else None, task=repr(context.get("task") or context.get("future"))[:200])


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop]:
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop
    return uvloop.new_event_loop
