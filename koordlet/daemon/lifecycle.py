"""Module lifecycle on one asyncio loop.

A module (koordlet.agent.Module) has a `name`, `async start()`, `async stop()` and
`ready() -> bool`. The daemon starts modules in order, stops them in reverse,
and turns SIGTERM/SIGINT into an orderly stop. SIGHUP stops nothing: it is logged and
handed to the callbacks registered with `on_hangup` (the NodeSLO file is re-read).
"""

from __future__ import annotations

import asyncio
import signal
from types import MappingProxyType
from typing import Callable, Sequence

import structlog

from koordlet.agent import Degradable, Module, Readiness, StartupError
from koordlet.config import defaults

log = structlog.get_logger(__name__)


class Daemon:
    def __init__(self, modules: Sequence[Module] = (), shutdown_grace: float = defaults.SHUTDOWN_GRACE_SECONDS,
                 start_timeout: float = defaults.MODULE_START_TIMEOUT_SECONDS) -> None:
        self._modules: list[Module] = list(modules)
        self._started: list[Module] = []
        self._stop_requested = asyncio.Event()
        self.started = asyncio.Event()  # set once every module has started
        self._grace = shutdown_grace
        self._start_timeout = start_timeout
        self._hangup: list[Callable[[], object]] = []

    def add(self, module: Module) -> None:
        self._modules.append(module)

    def readiness(self) -> Readiness:
        degraded = {m.name: why for m in self._started if isinstance(m, Degradable) and (why := m.degraded())}
        return Readiness(tuple(m.name for m in self._started if not _is_ready(m))
                         + tuple(m.name for m in self._modules if m not in self._started),
                         MappingProxyType(degraded))

    def on_hangup(self, callback: Callable[[], object]) -> None:
        """`callback()` on every SIGHUP (on the loop)."""
        self._hangup.append(callback)

    def request_stop(self) -> None:
        self._stop_requested.set()

    def take_signals(self) -> None:
        """From now on SIGTERM/SIGINT stop this daemon and SIGHUP goes to its callbacks.

        The loop looks a handler up when it dispatches a signal, not when the signal
        arrives: a signal delivered just before this call still reaches the daemon.
        """
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, self._on_signal, signum)
        loop.add_signal_handler(signal.SIGHUP, self._on_hangup)

    async def run(self) -> int:
        """Start everything, wait for a stop request, stop everything. Returns the exit code."""
        loop = asyncio.get_running_loop()
        self.take_signals()
        try:
            code = await self._start_all()
            if code != 0:
                return code
            log.info("daemon_started", modules=[m.name for m in self._started])
            self.started.set()
            await self._stop_requested.wait()
            return 0
        finally:
            await self._stop_all()
            for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                loop.remove_signal_handler(signum)

    def _on_signal(self, signum: int) -> None:
        log.info("stop_signal_received", signal=signal.Signals(signum).name)
        self._stop_requested.set()

    def _on_hangup(self) -> None:
        log.info("hangup_signal_received", action="re-read files" if self._hangup else "none")
        for callback in self._hangup:
            try:
                callback()
            except Exception as exc:  # a reload that fails must not stop the daemon
                log.error("hangup_callback_failed", error=repr(exc))

    async def _start_all(self) -> int:
        for module in self._modules:
            try:
                await asyncio.wait_for(module.start(), self._start_timeout)
            except TimeoutError:
                log.error("module_start_timed_out", module=module.name, timeout_s=self._start_timeout)
                return 1
            except StartupError as exc:
                log.error("module_start_failed", module=module.name, error=str(exc))
                return exc.exit_code
            except Exception as exc:  # a module bug must still end in a clear line
                log.error("module_start_failed", module=module.name, error=repr(exc), exc_info=True)
                return 1
            self._started.append(module)
            log.info("module_started", module=module.name)
        return 0

    async def _stop_all(self) -> None:
        stopping = list(reversed(self._started))
        self._started.clear()
        for module in stopping:
            try:
                await asyncio.wait_for(module.stop(), timeout=self._grace / max(len(stopping), 1))
            except asyncio.TimeoutError:
                log.warning("module_stop_timed_out", module=module.name)
            except Exception as exc:
                log.error("module_stop_failed", module=module.name, error=repr(exc))
            else:
                log.info("module_stopped", module=module.name)


def _is_ready(module: Module) -> bool:
    try:
        return bool(module.ready())
    except Exception as exc:
        log.warning("module_ready_check_failed", module=module.name, error=repr(exc))
        return False
