"""The Plugin service as a ttrpc handler table built from a plugin object.

Only the events the plugin has a handler for get a dedicated method; the rest
are left to the ttrpc server's Unimplemented answer, which makes an NRI >= 0.12
runtime fall back to StateChange. StateChange dispatches to the same handlers.
Every plugin handler runs under the deadline guard.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from types import CoroutineType
from typing import Any, Callable, Coroutine, Mapping

import structlog

from nri.events import (
    BEFORE_EVENT_HOOK,
    CONFIGURE_HANDLER,
    CONFIGURE_RPC,
    EVENT_SPECS,
    PLUGIN_SERVICE,
    SHUTDOWN_HANDLER,
    SHUTDOWN_RPC,
    SPEC_BY_EVENT,
    STATE_CHANGE_RPC,
    SYNCHRONIZE_HANDLER,
    SYNCHRONIZE_RPC,
    Event,
    EventSpec,
)
from nri.masks import NriVersion, handled_events, runtime_nri_version, subscription_mask
from nri.stub import results
from nri.stub.deadline import DeadlinePolicy, FirstStep, continue_guarded, first_step
from nri.stub.errors import AdjustmentRejected, InvalidPlugin
from nri.stub.plugin_api import public_methods, unmatched_handlers
from nri.stub.sync_collector import SyncCollector
from proto.nri.pkg.api.v1alpha1 import api_pb2 as api

log = structlog.get_logger(__name__)

RequestContext = Any  # the ttrpc server's per-request context: .deadline (loop time or None)
Handler = tuple[type, Callable[[Any, RequestContext], Any]]  # returns the response or an awaitable of it


@dataclass(frozen=True, slots=True)
class RuntimeInfo:
    """What Configure told us about the runtime."""

    name: str
    version: str
    nri_version: NriVersion
    config: str
    registration_timeout: float | None  # seconds; None when the runtime did not say (NRI < 0.7)
    request_timeout: float | None

    @classmethod
    def from_request(cls, req: api.ConfigureRequest) -> RuntimeInfo:
        return cls(
            name=req.runtime_name,
            version=req.runtime_version,
            nri_version=runtime_nri_version(req.runtime_name, req.runtime_version, req.NRI_version),
            config=req.config,
            registration_timeout=req.registration_timeout / 1000.0 if req.registration_timeout > 0 else None,
            request_timeout=req.request_timeout / 1000.0 if req.request_timeout > 0 else None,
        )


def _check_handler_names(plugin: object, strict: bool) -> None:
    """Warn about (strict: refuse) methods that look like handlers but match no event."""
    unmatched = unmatched_handlers(public_methods(plugin))
    for name, closest in unmatched:
        log.warning("nri_plugin_method_matches_no_event", plugin=type(plugin).__name__, method=name,
                    did_you_mean=closest)
    if strict and unmatched:
        raise InvalidPlugin(
            "plugin %s: %s look like event handlers but match none"
            % (type(plugin).__name__, ", ".join(name for name, _ in unmatched))
        )


# StateChange carries only the events that used to have no dedicated RPC.
_STATE_CHANGE_EVENTS = frozenset(s.event for s in EVENT_SPECS if s.dedicated_since == (0, 12))


def _rejection(exc: Exception) -> api.ValidateContainerAdjustmentResponse:
    """A validator's error is a rejection, as in containerd's stub."""
    reason = exc.args[0] if isinstance(exc, AdjustmentRejected) and exc.args else repr(exc)
    return api.ValidateContainerAdjustmentResponse(reject=True, reason=str(reason))


def _log_failure(event: str, exc: Exception) -> None:
    if not isinstance(exc, AdjustmentRejected):  # a validator's answer, not a failure
        log.warning("nri_handler_failed", method=event, error=repr(exc))


class PluginDispatcher:
    """Per-connection dispatcher state lives in `begin_connection()`; the handler
    table itself is built once from the plugin object."""

    def __init__(
        self,
        plugin: object,
        policy: DeadlinePolicy,
        on_configured: Callable[[RuntimeInfo, int], None],
        on_synchronized: Callable[[], None],
        strict_handlers: bool = False,
    ) -> None:
        self._plugin = plugin
        self._policy = policy
        self._on_configured = on_configured
        self._on_synchronized = on_synchronized
        self.handled = handled_events(plugin)
        _check_handler_names(plugin, strict_handlers)
        if not self.handled:
            raise InvalidPlugin(
                "plugin %s defines no event handler (e.g. create_container)" % type(plugin).__name__
            )
        self._configure = getattr(plugin, CONFIGURE_HANDLER, None)
        self._synchronize = getattr(plugin, SYNCHRONIZE_HANDLER, None)
        self._shutdown = getattr(plugin, SHUTDOWN_HANDLER, None)
        before_event = getattr(plugin, BEFORE_EVENT_HOOK, None)
        if asyncio.iscoroutinefunction(before_event):
            raise InvalidPlugin("plugin %s: %s must be a plain function (the stub does not await it)"
                                % (type(plugin).__name__, BEFORE_EVENT_HOOK))
        self._before_event: Callable[[], object] | None = before_event if callable(before_event) else None
        self._handlers_by_event: dict[Event, Callable[..., Any]] = {
            spec.event: getattr(plugin, spec.handler) for spec in EVENT_SPECS if spec.event in self.handled
        }
        self._collector = SyncCollector()
        self.runtime: RuntimeInfo | None = None
        self.late_tasks: set[asyncio.Task[Any]] = set()

    def begin_connection(self) -> None:
        """Forget per-connection state (a reconnect syncs from scratch)."""
        self._collector.reset()
        self.runtime = None

    # -- the table ---------------------------------------------------------------

    def handlers(self, dedicated_rpcs: bool = True) -> Mapping[tuple[str, str], Handler]:
        """The Plugin service table. With `dedicated_rpcs=False` events that have a
        StateChange form are served only through StateChange (a pre-0.12 plugin)."""
        table: dict[tuple[str, str], Handler] = {
            (PLUGIN_SERVICE, CONFIGURE_RPC): (api.ConfigureRequest, self._on_configure),
            (PLUGIN_SERVICE, SYNCHRONIZE_RPC): (api.SynchronizeRequest, self._on_synchronize),
            (PLUGIN_SERVICE, SHUTDOWN_RPC): (api.Empty, self._on_shutdown),
            (PLUGIN_SERVICE, STATE_CHANGE_RPC): (api.StateChangeEvent, self._on_state_change),
        }
        for spec in EVENT_SPECS:
            if spec.event in self.handled and (dedicated_rpcs or spec.event not in _STATE_CHANGE_EVENTS):
                table[(PLUGIN_SERVICE, spec.rpc)] = (results.REQUEST_TYPES[spec.rpc], self._event_method(spec))
        return table

    # -- guard ---------------------------------------------------------------------

    def _budget(self, ctx: RequestContext) -> float | None:
        loop = asyncio.get_running_loop()
        deadline = getattr(ctx, "deadline", None)
        request_timeout = self.runtime.request_timeout if self.runtime else None
        return self._policy.budget(loop.time(), deadline, request_timeout)

    def _start(
        self, event: str, fn: Callable[..., Any], args: tuple[Any, ...], ctx: RequestContext
    ) -> tuple[bool, Any] | Coroutine[Any, Any, tuple[bool, Any]]:
        """Call a handler, after the plugin's `before_event` hook when it has one, and take
        its first step now: (True, value) when it finished without suspending, else a
        coroutine that finishes it under the guard and gives (completed, value)."""
        try:
            if self._before_event is not None:
                self._before_event()
            result = fn(*args)
            if type(result) is not CoroutineType and not asyncio.iscoroutine(result):
                return True, result  # a plain function is fine too
            step = first_step(result, event)
        except Exception as exc:
            _log_failure(event, exc)
            raise
        if step.done:
            return True, step.value
        return self._finish(result, step, ctx)

    async def _finish(self, coro: Coroutine[Any, Any, Any], step: FirstStep, ctx: RequestContext) -> tuple[bool, Any]:
        event = step.scope.event
        try:
            outcome = await continue_guarded(coro, step, lambda: self._budget(ctx), self.late_tasks)
        except Exception as exc:
            _log_failure(event, exc)
            raise
        return outcome.completed, outcome.value

    async def _call(self, event: str, fn: Callable[..., Any], args: tuple[Any, ...], ctx: RequestContext) -> Any:
        """Run a handler under the guard; returns (completed, value)."""
        started = self._start(event, fn, args, ctx)
        if isinstance(started, tuple):
            return started
        return await started

    # -- Configure / Synchronize / Shutdown ----------------------------------------

    async def _on_configure(self, req: api.ConfigureRequest, ctx: RequestContext) -> api.ConfigureResponse:
        runtime = RuntimeInfo.from_request(req)
        requested: int | None = None
        if callable(self._configure):
            completed, value = await self._call(CONFIGURE_RPC, self._configure, (req.config, runtime), ctx)
            requested = results.requested_mask(value) if completed else None
        try:
            mask = subscription_mask(self.handled, runtime.nri_version, requested)
        except ValueError as exc:
            log.error("nri_configure_failed", error=str(exc), nri_version=str(runtime.nri_version))
            raise
        self.runtime = runtime
        log.info(
            "nri_configured",
            runtime=runtime.name,
            runtime_version=runtime.version,
            nri_version=str(runtime.nri_version),
            events="0x%x" % mask,
        )
        self._on_configured(runtime, mask)
        return api.ConfigureResponse(events=mask)

    async def _on_synchronize(self, req: api.SynchronizeRequest, ctx: RequestContext) -> api.SynchronizeResponse:
        snapshot = self._collector.add(req)
        if snapshot is None:
            return SyncCollector.interim_response()
        updates: list[api.ContainerUpdate] = []
        if callable(self._synchronize):
            completed, value = await self._call(
                SYNCHRONIZE_RPC, self._synchronize, (list(snapshot.pods), list(snapshot.containers)), ctx
            )
            if completed:
                updates = results.synchronize_updates(value)
        log.info(
            "nri_synchronized",
            pods=len(snapshot.pods),
            containers=len(snapshot.containers),
            chunks=snapshot.chunks,
            updates=len(updates),
        )
        asyncio.get_running_loop().call_soon(self._on_synchronized)
        return api.SynchronizeResponse(update=updates, more=False)

    async def _on_shutdown(self, req: api.Empty, ctx: RequestContext) -> api.Empty:
        if callable(self._shutdown):
            await self._call(SHUTDOWN_RPC, self._shutdown, (), ctx)
        return api.Empty()

    # -- events --------------------------------------------------------------------

    def _event_method(self, spec: EventSpec) -> Callable[[Any, RequestContext], Any]:
        """One generic method per event, driven by its EventSpec (handler arguments)
        and results.RESPONSE_BUILDERS (how its value becomes the response). It returns
        the response when the handler finished without suspending (the ttrpc server then
        answers without a task), else an awaitable of it."""
        fn = self._handlers_by_event[spec.event]
        if spec.event is Event.VALIDATE_CONTAINER_ADJUSTMENT:
            return self._validate_method(fn)
        rpc = spec.rpc
        empty = results.EMPTY_RESPONSES[rpc]
        build = results.RESPONSE_BUILDERS.get(rpc)
        arguments = spec.handler_args
        start = self._start

        def on_event(req: Any, ctx: RequestContext) -> Any:
            started = start(rpc, fn, arguments(req), ctx)
            if isinstance(started, tuple):  # finished without suspending: answered inline
                return build(started[1]) if build is not None else empty()
            return finish(started)

        async def finish(started: Coroutine[Any, Any, tuple[bool, Any]]) -> Any:
            completed, value = await started
            return build(value) if completed and build is not None else empty()

        return on_event

    def _validate_method(self, fn: Callable[..., Any]) -> Callable[[Any, RequestContext], Any]:
        rpc = "ValidateContainerAdjustment"
        build = results.RESPONSE_BUILDERS[rpc]
        start = self._start

        def on_validate(req: Any, ctx: RequestContext) -> Any:
            try:
                started = start(rpc, fn, (req,), ctx)
            except Exception as exc:
                return _rejection(exc)
            if isinstance(started, tuple):
                return build(started[1])
            return finish(started)

        async def finish(started: Coroutine[Any, Any, tuple[bool, Any]]) -> Any:
            try:
                completed, value = await started
            except Exception as exc:
                return _rejection(exc)
            if not completed:
                # Fail closed but stay connected: a dropped validator fails the
                # creation anyway, a rejection at least keeps us registered.
                return api.ValidateContainerAdjustmentResponse(
                    reject=True, reason="validator did not answer within its deadline"
                )
            return build(value)

        return on_validate

    async def _on_state_change(self, req: api.StateChangeEvent, ctx: RequestContext) -> api.Empty:
        try:
            event = Event(req.event)
        except ValueError:
            log.warning("nri_state_change_unknown_event", event_value=req.event)
            return api.Empty()
        fn = self._handlers_by_event.get(event)
        if fn is None or event not in _STATE_CHANGE_EVENTS:
            return api.Empty()
        spec = SPEC_BY_EVENT[event]
        await self._call(spec.rpc, fn, spec.handler_args(req), ctx)
        return api.Empty()
