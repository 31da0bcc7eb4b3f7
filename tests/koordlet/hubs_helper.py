"""Real hubs for tests: built by the daemon's own composition root, with a few of them
replaced by what a test needs (a StaticStates, a fed metric store...)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from prometheus_client import CollectorRegistry

from koordlet.agent import AgentSpec
from koordlet.agents import AGENTS
from koordlet.config import Config
from koordlet.daemon.lifecycle import Daemon
from koordlet.daemon.wiring import build_daemon, build_hubs, host_of
from koordlet.hubs import Hubs
from koordlet.server.http_endpoint import HttpEndpoint, RouteHandler
from koordlet.util.host_facts import HostFacts
from system.file_io import KeptFdPool
from tests.koordlet.daemon_process import no_runtime_nri_socket


@dataclass
class RecordedRoutes:
    """The HTTP routes agents added, callable by path, and the /metrics renderers."""

    routes: dict[str, RouteHandler] = field(default_factory=dict)
    metrics_text: list[Callable[[bool], bytes]] = field(default_factory=list)
    external_text: list[Callable[[bool], bytes]] = field(default_factory=list)
    metrics_parts: list[Callable[[bool, bool, bool], bytes]] = field(default_factory=list)

    def add_route(self, path: str, handler: RouteHandler) -> None:
        self.routes[path] = handler

    def add_metrics_text(self, render: Callable[[bool], bytes], external: bool = False) -> None:
        (self.external_text if external else self.metrics_text).append(render)

    def add_metrics_parts(self, render: Callable[[bool, bool, bool], bytes]) -> None:
        self.metrics_parts.append(render)


def hubs_for(config: Config, *, facts: HostFacts | None = None, registry: CollectorRegistry | None = None,
             http: Any = None, **replaced: Any) -> Hubs:
    """Hubs for `config` (its host roots probed unless `facts` is given), with any hub
    named in `replaced` swapped for the given value."""
    hubs = build_hubs(config, registry if registry is not None else CollectorRegistry(),
                      http if http is not None else RecordedRoutes(),
                      facts=facts if facts is not None else HostFacts(host_of(config)),
                      fd_pool=KeptFdPool(max_open=64))
    return replace(hubs, **replaced) if replaced else hubs


@contextmanager
def built_daemon(config: Config, agents: Iterable[AgentSpec] = AGENTS) -> Iterator[Daemon]:
    """build_daemon's daemon, never started, for a test that looks at how it was put together;
    the HTTP port build_daemon bound is let go on the way out."""
    daemon = build_daemon(config, agents)
    try:
        yield daemon
    finally:
        for module in daemon._modules:
            if isinstance(module, HttpEndpoint):
                module.unbind()


def config_of(**values: Any) -> Config:
    """A Config from option values by field name (`state_dir=tmp_path`), the rest defaulted:
    each value goes through its option's parser, as a flag would. The runtime is not the
    host's unless the test names one: an NRI socket in an empty directory, no CRI endpoint
    (with containerd's socket on the host, the informer waited for an NRI that never synced)."""
    from koordlet.daemon.cli import compose

    values.setdefault("runtime_hooks_nri_socket_path", no_runtime_nri_socket())
    values.setdefault("cri_endpoint", "")
    return compose({name.replace("_", "-"): str(value) for name, value in values.items()})
