"""Wiring: from a Config to a running Daemon with its modules."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

import structlog
from prometheus_client import CollectorRegistry

from koordlet import __version__
from koordlet.config import Config, parse_addr
from koordlet.daemon import Daemon, Module, StartupError
from koordlet.host_facts import log_host_facts
from koordlet.executor_module import ExecutorModule
from koordlet.http_endpoint import HttpEndpoint
from koordlet.metriccache.api import MetricCache
from koordlet.metrics.registry import new_registry
from koordlet.sdnotify import notify
from koordlet.statesinformer.api import StatesInformer
from system.host import Host

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


# Each builder looks at the config and returns the modules to run (none when its
# feature is off). Order is start order: providers of a hub before its readers.
ModuleBuilder = Callable[[Hubs], Iterable[Module]]
MODULE_BUILDERS: tuple[ModuleBuilder, ...] = ()


def build_daemon(config: Config, builders: Iterable[ModuleBuilder] | None = None) -> Daemon:
    registry = new_registry(config.node_name)
    daemon = Daemon()
    bind_host, port = parse_addr(config.addr)
    http = HttpEndpoint(bind_host, port, registry, daemon.readiness)
    hubs = Hubs(config, host_of(config), registry, http, ExecutorModule(host_of(config), registry))
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
