"""A runtime-side NRI test peer: behaves like containerd towards plugins.

It listens on a unix socket, accepts plugins one at a time, enforces the
registration timeout, validates name/index, calls Configure (checking the mask
against its NRI version), Synchronize (split into chunks like NRI >= 0.7), then
relays events under one global lock with a per-request deadline, applying the
plugins' adjustments and updates to model containers. It can misbehave on
demand (slow replies, dropped connections, garbage, restarts).
Behaviour from protocols.md §3.5-§3.7. For tests and benchmarks only.
"""

from __future__ import annotations

import asyncio
import os
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from nri.events import CONFIGURE_RPC, RUNTIME_SERVICE, SYNCHRONIZE_RPC, Event
from nri.masks import InvalidEventMask, NriVersion, check_event_mask
from nri.mux.trunk import PLUGIN_SERVICE_CONN, RUNTIME_SERVICE_CONN, Trunk
from nri.stub.identity import index_problem, name_problem
from nri.testing.model import apply_update
from nri.testing.peer_plugin import PeerPlugin
from nri.testing.relay import EventRelay, RuntimeOperationFailed
from nri.testing.sync_split import SplitSyncFailed, plan_sync_chunks
from nri.ttrpc.client import TtrpcClient
from nri.ttrpc.server import TtrpcServer
from nri.ttrpc.status import Code, TtrpcError
from proto.nri.pkg.api.v1alpha1 import api_pb2 as api

log = structlog.get_logger(__name__)

MAX_MESSAGE = 4 << 20


@dataclass(frozen=True, slots=True)
class PeerConfig:
    nri_version: NriVersion = NriVersion(0, 12, 0)
    runtime_name: str = "containerd"
    runtime_version: str = "v2.3.4"
    registration_timeout: float = 5.0
    request_timeout: float = 2.0
    max_sync_message: int = MAX_MESSAGE  # payload bytes the sender accepts per Synchronize
    config: str = ""  # ConfigureRequest.config (empty for external plugins)

    @property
    def sends_timeouts(self) -> bool:
        return self.nri_version.key >= (0, 7)

    @property
    def sends_nri_version(self) -> bool:
        return self.nri_version.key >= (0, 12)

    @property
    def splits_sync(self) -> bool:
        return self.nri_version.key >= (0, 7)


@dataclass(frozen=True, slots=True)
class Misbehaviour:
    """Knobs to make the peer a difficult runtime; replace `peer.misbehaviour`."""

    register_reply_delay: float = 0.0
    configure_delay: float = 0.0  # wait this long after registration before Configure
    update_reply_delay: float = 0.0
    drop_after_configure: bool = False
    refuse_registration: str | None = None  # answer RegisterPlugin with this error


@dataclass(slots=True)
class PeerState:
    pods: dict[str, api.PodSandbox] = field(default_factory=dict)
    containers: dict[str, api.Container] = field(default_factory=dict)


class RuntimePeer:
    def __init__(self, path: str | os.PathLike[str], config: PeerConfig | None = None) -> None:
        self.path = Path(path)
        self.config = config or PeerConfig()
        self.misbehaviour = Misbehaviour()
        self.state = PeerState()
        self.plugins: list[PeerPlugin] = []  # active: registered, configured, synchronized
        self.rejected: list[tuple[str, str]] = []  # (plugin or "?", reason)
        self.event_lock = asyncio.Lock()  # containerd's NRI lock: one event at a time
        self._accept_lock = asyncio.Lock()  # external plugins are set up one at a time
        self._listener: socket.socket | None = None
        self._accept_task: asyncio.Task[None] | None = None
        self._sessions: set[asyncio.Task[None]] = set()
        self._serial = 0
        self.accepted = 0  # connections accepted so far
        self._plugin_joined = asyncio.Condition()
        self.relay = EventRelay(self)

    # -- listening -------------------------------------------------------------------

    async def start(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if self.path.exists():
            self.path.unlink()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(os.fspath(self.path))
        os.chmod(self.path, 0o600)
        sock.listen(16)
        sock.setblocking(False)
        self._listener = sock
        self._accept_task = asyncio.get_running_loop().create_task(self._accept_loop(sock))
        log.info("nri_peer_listening", path=str(self.path), nri_version=str(self.config.nri_version))

    async def stop(self) -> None:
        """Stop like a runtime that goes away: close the socket and every plugin."""
        if self._accept_task is not None:
            self._accept_task.cancel()
            await asyncio.gather(self._accept_task, return_exceptions=True)
            self._accept_task = None
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass
        for plugin in list(self.plugins):
            plugin.close("runtime stopped")
        for task in list(self._sessions):
            task.cancel()
        await asyncio.gather(*self._sessions, return_exceptions=True)
        self.plugins.clear()

    async def restart(self, down_for: float = 0.0) -> None:
        """Simulate a runtime restart: drop everybody, stay away a while, listen again."""
        await self.stop()
        if down_for:
            await asyncio.sleep(down_for)
        await self.start()

    async def __aenter__(self) -> RuntimePeer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def _accept_loop(self, listener: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            conn, _ = await loop.sock_accept(listener)
            raw_fd = os.dup(conn.fileno())
            trunk = await Trunk.open(conn, paused=True)
            self._serial += 1
            self.accepted += 1
            plugin = PeerPlugin(trunk, raw_fd, self.config.nri_version, self._serial)
            task = loop.create_task(self._session(plugin))
            self._sessions.add(task)
            task.add_done_callback(self._sessions.discard)

    # -- waiting for plugins (for tests) ---------------------------------------------

    async def wait_plugins(self, count: int = 1, timeout: float = 5.0) -> list[PeerPlugin]:
        """Wait until `count` plugins are active (synchronized)."""

        async def _enough() -> None:
            async with self._plugin_joined:
                await self._plugin_joined.wait_for(lambda: len(self.plugins) >= count)

        await asyncio.wait_for(_enough(), timeout)
        return list(self.plugins)

    # -- one plugin connection -------------------------------------------------------

    async def _session(self, plugin: PeerPlugin) -> None:
        try:
            async with self._accept_lock:
                try:
                    ok = await self._setup(plugin)
                except Exception as exc:  # anything unexpected: this plugin is out, the peer goes on
                    log.error("nri_peer_setup_failed", error=repr(exc), exc_info=True)
                    ok = self._reject(plugin, "setup failed: " + repr(exc))
                if not ok:
                    return
            async with self._plugin_joined:
                self.plugins.append(plugin)
                self.plugins.sort(key=PeerPlugin.sort_key)
                self._plugin_joined.notify_all()
            await asyncio.shield(plugin.trunk.closed)
            plugin.close(plugin.close_reason or "connection closed by plugin")
        finally:
            if plugin in self.plugins:
                self.plugins.remove(plugin)
            plugin.close(plugin.close_reason or "session ended")

    async def _setup(self, plugin: PeerPlugin) -> bool:
        cfg = self.config
        plugin.server = TtrpcServer(
            plugin.trunk.conn(RUNTIME_SERVICE_CONN),
            {
                (RUNTIME_SERVICE, "RegisterPlugin"): (api.RegisterPluginRequest, self._registrar(plugin)),
                (RUNTIME_SERVICE, "UpdateContainers"): (api.UpdateContainersRequest, self._updater(plugin)),
            },
        )
        plugin.client = TtrpcClient(plugin.trunk.conn(PLUGIN_SERVICE_CONN))
        plugin.trunk.resume_reading()
        try:
            await asyncio.wait_for(asyncio.shield(plugin.registered), cfg.registration_timeout)
        except TimeoutError:
            return self._reject(plugin, "plugin registration timed out")
        except (TtrpcError, ConnectionError) as exc:
            return self._reject(plugin, "registration failed: " + str(exc))
        if plugin.is_closed:
            return self._reject(plugin, "closed during registration")
        try:
            if self.misbehaviour.configure_delay:
                closed = asyncio.shield(plugin.trunk.closed)
                try:
                    await asyncio.wait_for(closed, self.misbehaviour.configure_delay)
                    return self._reject(plugin, "closed before configure")
                except TimeoutError:
                    pass
            await self._configure(plugin)
            if self.misbehaviour.drop_after_configure:
                return self._reject(plugin, "dropped after configure (misbehaviour)")
            async with self.event_lock:
                await self._synchronize(plugin)
        except (TtrpcError, InvalidEventMask, SplitSyncFailed, RuntimeOperationFailed) as exc:
            return self._reject(plugin, str(exc))
        plugin.synchronized.set()
        log.info("nri_peer_plugin_synchronized", plugin=plugin.full_name, events="0x%x" % plugin.mask)
        return True

    def _reject(self, plugin: PeerPlugin, reason: str) -> bool:
        self.rejected.append((plugin.full_name if plugin.name else "?", reason))
        plugin.close(reason)
        return False

    def _registrar(self, plugin: PeerPlugin) -> Any:
        async def on_register(req: api.RegisterPluginRequest, ctx: Any) -> api.Empty:
            if self.misbehaviour.register_reply_delay:
                await asyncio.sleep(self.misbehaviour.register_reply_delay)
            strict = self.config.nri_version.key >= (0, 12)
            problem = (
                self.misbehaviour.refuse_registration
                or name_problem(req.plugin_name, strict_charset=strict)
                or index_problem(req.plugin_idx)
            )
            if problem is not None:
                if not plugin.registered.done():
                    plugin.registered.set_exception(TtrpcError(Code.INVALID_ARGUMENT, problem))
                    plugin.registered.exception()  # retrieved: the session reports it
                raise TtrpcError(Code.INVALID_ARGUMENT, problem)
            plugin.name, plugin.index, plugin.nri_version = req.plugin_name, req.plugin_idx, req.NRI_version
            if not plugin.registered.done():
                plugin.registered.set_result(None)
            return api.Empty()

        return on_register

    def _updater(self, plugin: PeerPlugin) -> Any:
        async def on_update(req: api.UpdateContainersRequest, ctx: Any) -> api.UpdateContainersResponse:
            plugin.record.unsolicited.append(req)
            if self.misbehaviour.update_reply_delay:
                await asyncio.sleep(self.misbehaviour.update_reply_delay)
            async with self.event_lock:  # like containerd: deadlocks if called from a handler
                failed = []
                for update in req.update:
                    container = self.state.containers.get(update.container_id)
                    if container is None:
                        failed.append(update)
                    else:
                        apply_update(container, update)
            return api.UpdateContainersResponse(failed=failed)

        return on_update

    async def _configure(self, plugin: PeerPlugin) -> None:
        cfg = self.config
        req = api.ConfigureRequest(config=cfg.config, runtime_name=cfg.runtime_name, runtime_version=cfg.runtime_version)
        if cfg.sends_timeouts:
            req.registration_timeout = int(cfg.registration_timeout * 1000)
            req.request_timeout = int(cfg.request_timeout * 1000)
        if cfg.sends_nri_version:
            req.NRI_version = str(cfg.nri_version)
        resp = await plugin.call(CONFIGURE_RPC, req, api.ConfigureResponse, cfg.request_timeout)
        plugin.events = check_event_mask(resp.events, cfg.nri_version)
        plugin.mask = resp.events

    async def _synchronize(self, plugin: PeerPlugin) -> None:
        """One deadline covers every chunk (protocols.md §3.5)."""
        cfg = self.config
        loop = asyncio.get_running_loop()
        deadline = loop.time() + cfg.request_timeout
        chunks = plan_sync_chunks(
            list(self.state.pods.values()),
            list(self.state.containers.values()),
            cfg.max_sync_message,
            split_supported=cfg.splits_sync,
        )
        response: Any = None
        for chunk in chunks:
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise TtrpcError(Code.DEADLINE_EXCEEDED, "context deadline exceeded")
            response = await plugin.call(SYNCHRONIZE_RPC, chunk.request, api.SynchronizeResponse, remaining)
            if chunk.request.more and (len(response.update) > 0 or response.more != chunk.request.more):
                raise RuntimeOperationFailed("plugin does not handle split sync requests")
        for update in response.update if response is not None else ():
            container = self.state.containers.get(update.container_id)
            if container is not None:  # best effort, like containerd
                apply_update(container, update)

    # -- events (delegated) ------------------------------------------------------------

    def active_for(self, event: Event) -> list[PeerPlugin]:
        return [p for p in self.plugins if event in p.events and not p.is_closed]

    async def run_pod_sandbox(self, pod: api.PodSandbox) -> None:
        await self.relay.pod_event(Event.RUN_POD_SANDBOX, pod)

    async def stop_pod_sandbox(self, pod: api.PodSandbox) -> None:
        await self.relay.pod_event(Event.STOP_POD_SANDBOX, pod)

    async def remove_pod_sandbox(self, pod: api.PodSandbox) -> None:
        await self.relay.pod_event(Event.REMOVE_POD_SANDBOX, pod)

    async def update_pod_sandbox(
        self, pod: api.PodSandbox, overhead: api.LinuxResources, resources: api.LinuxResources
    ) -> None:
        request = api.UpdatePodSandboxRequest(pod=pod, overhead_linux_resources=overhead, linux_resources=resources)
        await self.relay.pod_event(Event.UPDATE_POD_SANDBOX, pod, request)

    async def post_update_pod_sandbox(self, pod: api.PodSandbox) -> None:
        await self.relay.pod_event(Event.POST_UPDATE_POD_SANDBOX, pod)

    async def create_container(self, pod: api.PodSandbox, container: api.Container) -> api.Container:
        return await self.relay.create_container(pod, container)

    async def update_container(
        self, pod: api.PodSandbox, container: api.Container, resources: api.LinuxResources
    ) -> api.Container:
        return await self.relay.update_container(pod, container, resources)

    async def stop_container(self, pod: api.PodSandbox, container: api.Container) -> None:
        await self.relay.stop_container(pod, container)

    async def container_event(self, event: Event, pod: api.PodSandbox, container: api.Container) -> None:
        await self.relay.container_event(event, pod, container)
