"""Wiring: from a Config to a running Daemon with its modules."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Callable

import structlog

from koordlet import __version__
from koordlet.config import Config, parse_addr
from koordlet.daemon import Daemon, StartupError
from koordlet.host_facts import log_host_facts
from koordlet.executor_module import ExecutorModule
from koordlet.http_endpoint import HttpEndpoint
from koordlet.metrics.registry import new_registry
from koordlet.sdnotify import notify
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


def build_daemon(config: Config) -> Daemon:
    registry = new_registry(config.node_name)
    daemon = Daemon()
    daemon.add(ExecutorModule(host_of(config), registry))
    bind_host, port = parse_addr(config.addr)
    daemon.add(HttpEndpoint(bind_host, port, registry, daemon.readiness))
    return daemon


async def run(config: Config) -> int:
    log.info("koordlet_starting", version=__version__, node=config.node_name,
             mode="standalone" if config.standalone else "cluster",
             feature_gates_overridden=config.feature_gates.overridden())
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
