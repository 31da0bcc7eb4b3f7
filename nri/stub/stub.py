"""The plugin stub: connection life around a plugin object.

Connect (dial the runtime's socket, or use the fd a launching runtime passed),
register, let the runtime Configure and Synchronize us, serve events, and on EOF
reconnect and go through registration and synchronization again. While the
socket is absent or refuses, the stub watches its path and dials as soon as it
comes back (socket_watch); other failures, and runtimes that accept and then
drop us, get capped backoff. `ready` says "connected and synchronized".
"""

from __future__ import annotations

import asyncio
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

import structlog

from nri.events import RUNTIME_SERVICE
from nri.masks import events_of
from nri.mux.trunk import PLUGIN_SERVICE_CONN, RUNTIME_SERVICE_CONN, Trunk
from nri.stub.backoff import BackoffPolicy
from nri.stub.deadline import DEFAULT_REGISTRATION_TIMEOUT, DeadlinePolicy, inside_handler
from nri.stub.dispatch import PluginDispatcher, RuntimeInfo
from nri.stub.errors import NotConnected, RegistrationFailed, UpdateInsideHandler
from nri.stub.identity import PluginIdentity, launched_socket_fd, resolve_identity
from nri.stub.socket_watch import RetryKind, SocketWatcher, WatchPolicy, retry_kind, watch_timeout
from nri.transport import DEFAULT_NRI_SOCKET, dial, from_inherited_fd
from nri.ttrpc.client import TtrpcClient
from nri.ttrpc.server import TtrpcServer
from nri.ttrpc.status import TtrpcError
from proto.nri.pkg.api.v1alpha1 import api_pb2 as api

log = structlog.get_logger(__name__)

# The NRI API revision this library speaks (sent in RegisterPlugin.NRI_version).
LIBRARY_NRI_VERSION = "v0.12.0"

ReadyCallback = Callable[[bool], None]


@dataclass(frozen=True, slots=True)
class StubConfig:
    socket_path: str = DEFAULT_NRI_SOCKET
    registration_timeout: float = DEFAULT_REGISTRATION_TIMEOUT
    # From a successful RegisterPlugin to the end of Synchronize; a runtime that
    # leaves us hanging longer is treated like a dropped connection.
    setup_timeout: float = 30.0
    deadline: DeadlinePolicy = field(default_factory=DeadlinePolicy)
    backoff: BackoffPolicy = field(default_factory=BackoffPolicy)
    watch: WatchPolicy = field(default_factory=WatchPolicy)
    reconnect: bool = True
    update_timeout: float = 5.0
    # False: answer Unimplemented for the events that have a StateChange form, so
    # an NRI >= 0.12 runtime falls back to StateChange (compatibility testing).
    dedicated_rpcs: bool = True
    # True: refuse a plugin with methods that look like handlers but match no event
    # (e.g. create_containr); False: log a warning for each.
    strict_handlers: bool = False


class Stub:
    """Runs `plugin` (any object with handler methods named after NRI events).

    Use `await stub.run()` (returns after `stop()`, or when a launched plugin's
    connection ends), `stub.ready` / `stub.is_ready` / `add_ready_callback()` for
    readiness, and `await stub.update_containers(...)` for unsolicited updates
    (never from inside an event handler)."""

    def __init__(
        self,
        plugin: object,
        *,
        name: str | None = None,
        index: str | None = None,
        config: StubConfig | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        env = os.environ if environ is None else environ
        self.config = config or StubConfig()
        self.identity: PluginIdentity = resolve_identity(name, index, env, sys.argv[0] if sys.argv else "")
        self._launched_fd = launched_socket_fd(env)
        self.dial_attempts = 0  # every dial, for tests and diagnostics
        self._dispatcher = PluginDispatcher(
            plugin, self.config.deadline, self._on_configured, self._on_synchronized, self.config.strict_handlers
        )
        self._handlers = self._dispatcher.handlers(self.config.dedicated_rpcs)
        self._ready = asyncio.Event()
        self._ready_callbacks: list[ReadyCallback] = []
        self._client: TtrpcClient | None = None
        self._trunk: Trunk | None = None
        self._synced: asyncio.Future[None] | None = None
        self._stop = asyncio.Event()
        self.mask = 0
        self.connections = 0  # successful synchronizations so far (for tests and metrics)

    # -- readiness -------------------------------------------------------------------

    @property
    def ready(self) -> asyncio.Event:
        """Set while connected and synchronized; cleared on disconnect."""
        return self._ready

    @property
    def is_ready(self) -> bool:
        return self._ready.is_set()

    @property
    def runtime(self) -> RuntimeInfo | None:
        return self._dispatcher.runtime

    def add_ready_callback(self, callback: ReadyCallback) -> None:
        """callback(True) on every (re)synchronization, callback(False) on loss."""
        self._ready_callbacks.append(callback)

    def _set_ready(self, value: bool) -> None:
        if value == self._ready.is_set():
            return
        if value:
            self._ready.set()
        else:
            self._ready.clear()
        for callback in self._ready_callbacks:
            try:
                callback(value)
            except Exception as exc:  # a broken hook must not break the connection
                log.warning("nri_ready_callback_failed", error=repr(exc))

    def _on_configured(self, runtime: RuntimeInfo, mask: int) -> None:
        self.mask = mask

    def _on_synchronized(self) -> None:
        if self._synced is not None and not self._synced.done():
            self._synced.set_result(None)

    # -- life ------------------------------------------------------------------------

    async def run(self) -> None:
        """Connect and serve until stop(); reconnects unless launched by the runtime."""
        self._stop.clear()
        failures = 0
        outage = _Outage(self.config.socket_path)
        try:
            while not self._stop.is_set():
                try:
                    trunk = await self._open_trunk()
                except OSError as exc:
                    if self._launched_fd is not None:
                        log.error("nri_launched_socket_unusable", fd=self._launched_fd, error=repr(exc))
                        return
                    if retry_kind(exc) is RetryKind.WATCH:
                        await outage.wait_for_socket(exc, self.config.watch, self._stop)
                    else:
                        failures += 1
                        delay = self.config.backoff.delay(failures)
                        outage.note(exc, delay)
                        await self._sleep(delay)
                    continue
                outage.recovered()
                synchronized = await self._session(trunk)
                if self._launched_fd is not None or not self.config.reconnect:
                    return
                failures = 0 if synchronized else failures + 1
                await self._sleep(self.config.backoff.delay(max(failures, 1)))
        finally:
            outage.close()

    async def start(self, timeout: float) -> asyncio.Task[None]:
        """Run in a background task and wait until ready (TimeoutError otherwise)."""
        task = asyncio.get_running_loop().create_task(self.run())
        try:
            await asyncio.wait_for(self._ready.wait(), timeout)
        except BaseException:
            await self.stop()
            task.cancel()
            raise
        return task

    async def stop(self) -> None:
        """End run(): close the connection and cancel handlers the guard gave up on."""
        self._stop.set()
        if self._trunk is not None:
            self._trunk.close("plugin stopping")
        late = list(self._dispatcher.late_tasks)
        for task in late:
            task.cancel()
        if late:
            await asyncio.gather(*late, return_exceptions=True)

    async def _sleep(self, delay: float) -> None:
        try:
            await asyncio.wait_for(self._stop.wait(), delay)
        except TimeoutError:
            pass

    async def _open_trunk(self) -> Trunk:
        self.dial_attempts += 1
        if self._launched_fd is not None:
            return await from_inherited_fd(self._launched_fd)
        return await dial(self.config.socket_path)

    async def _session(self, trunk: Trunk) -> bool:
        """One connection, from registration to EOF. True if it got synchronized."""
        loop = asyncio.get_running_loop()
        self._trunk = trunk
        self._dispatcher.begin_connection()
        self._synced = loop.create_future()
        # Both ttrpc ends attach before the trunk starts reading (next iteration).
        server = TtrpcServer(trunk.conn(PLUGIN_SERVICE_CONN), self._handlers)
        client = TtrpcClient(trunk.conn(RUNTIME_SERVICE_CONN))
        serving = loop.create_task(server.serve())
        synchronized = False
        try:
            await self._register(client)
            if self._stop.is_set():
                return False
            await self._wait_synchronized(trunk)
            synchronized = True
            self._client = client
            self.connections += 1
            log.info(
                "nri_plugin_ready",
                plugin=self.identity.full_name,
                events=sorted(e.name for e in events_of(self.mask)),
            )
            self._set_ready(True)
            cause = await asyncio.shield(trunk.closed)
            log.info("nri_connection_lost", plugin=self.identity.full_name, cause=cause)
        except RegistrationFailed as exc:
            log.error("nri_registration_failed", plugin=self.identity.full_name, error=str(exc))
        except TimeoutError:
            log.error("nri_setup_timeout", plugin=self.identity.full_name, timeout_s=self.config.setup_timeout)
        except ConnectionError as exc:
            log.info("nri_connection_lost", plugin=self.identity.full_name, cause=repr(exc))
        except Exception as exc:  # never let one bad session end the plugin's life
            log.error("nri_session_failed", plugin=self.identity.full_name, error=repr(exc), exc_info=True)
        finally:
            self._client = None
            self._trunk = None
            self._set_ready(False)
            client.close()
            server.close()
            trunk.close("session ended")
            serving.cancel()
            await asyncio.gather(serving, return_exceptions=True)
        return synchronized

    async def _register(self, client: TtrpcClient) -> None:
        request = api.RegisterPluginRequest(
            plugin_name=self.identity.name, plugin_idx=self.identity.index, NRI_version=LIBRARY_NRI_VERSION
        )
        try:
            await client.call(
                RUNTIME_SERVICE, "RegisterPlugin", request, api.Empty, timeout=self.config.registration_timeout
            )
        except TtrpcError as exc:
            raise RegistrationFailed(str(exc)) from exc
        log.info("nri_registered", plugin=self.identity.full_name)

    async def _wait_synchronized(self, trunk: Trunk) -> None:
        assert self._synced is not None
        closed = asyncio.ensure_future(asyncio.shield(trunk.closed))
        try:
            done, _ = await asyncio.wait(
                (self._synced, closed), timeout=self.config.setup_timeout, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            closed.cancel()
        if self._synced in done:
            return
        if done:
            raise ConnectionError("connection closed before synchronization: %s" % (trunk.closed.result(),))
        raise TimeoutError()

    # -- unsolicited updates ---------------------------------------------------------

    async def update_containers(
        self,
        updates: Iterable[api.ContainerUpdate],
        evictions: Iterable[api.ContainerEviction] = (),
        timeout: float | None = None,
    ) -> list[api.ContainerUpdate]:
        """Ask the runtime to update containers now; returns the updates it failed.

        Raises UpdateInsideHandler when awaited inside an event handler (containerd
        would deadlock until the request timeout and drop us), NotConnected when not
        synchronized, TtrpcError for the runtime's error."""
        event = inside_handler()
        if event is not None:
            raise UpdateInsideHandler(
                "update_containers() awaited inside the %s handler would deadlock the runtime; "
                "return updates from the handler or call it from a separate task" % event
            )
        client = self._client
        if client is None or not self._ready.is_set():
            raise NotConnected("not connected to the runtime (or not synchronized yet)")
        request = api.UpdateContainersRequest(update=list(updates), evict=list(evictions))
        response: Any = await client.call(
            RUNTIME_SERVICE,
            "UpdateContainers",
            request,
            api.UpdateContainersResponse,
            timeout=timeout or self.config.update_timeout,
        )
        return list(response.failed)


class _Outage:
    """One stretch without a runtime connection: logged once when it starts and once
    when it ends, whatever the number of dials in between; owns the socket watcher."""

    def __init__(self, socket_path: str) -> None:
        self._path = socket_path
        self._since: float | None = None
        self._attempts = 0
        self._watcher: SocketWatcher | None = None

    def note(self, error: OSError, retry_in: float | None = None) -> None:
        loop = asyncio.get_running_loop()
        self._attempts += 1
        if self._since is None:
            self._since = loop.time()
            log.warning(
                "nri_runtime_unavailable",
                path=self._path,
                error=str(error),
                retry=retry_kind(error).value,
                retry_in_s=retry_in,
            )

    async def wait_for_socket(self, error: OSError, policy: WatchPolicy, stop: asyncio.Event) -> None:
        self.note(error)
        if self._watcher is None:
            self._watcher = SocketWatcher(self._path, asyncio.get_running_loop())
        waiting = asyncio.ensure_future(self._watcher.wait(watch_timeout(error, policy, self._watcher.active)))
        stopping = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait((waiting, stopping), return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiting.cancel()
            stopping.cancel()

    def recovered(self) -> None:
        """A dial succeeded: the outage, if there was one, is over."""
        if self._since is not None:
            log.info(
                "nri_runtime_available",
                path=self._path,
                down_s=round(asyncio.get_running_loop().time() - self._since, 3),
                attempts=self._attempts,
            )
        self.close()

    def close(self) -> None:
        """Stop watching (a stop, or the end of the outage); says nothing of a runtime that
        never came."""
        if self._watcher is not None:
            self._watcher.close()
            self._watcher = None
        self._since = None
        self._attempts = 0
