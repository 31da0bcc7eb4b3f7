"""What an agent is to the daemon.

A module is anything with a `name`, `async start()`, `async stop()` and `ready()`; the
daemon starts modules in order, stops them in reverse and serves their readiness on
/readyz. An agent package exports one `AgentSpec`: its name, whether the configuration
turns it on, and how to build its modules from the hubs. `koordlet.agents` lists the
specs in build order; the daemon iterates that list and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Callable, Mapping, Protocol, runtime_checkable

if TYPE_CHECKING:
    from koordlet.config import Config
    from koordlet.hubs import Hubs, Ports


class Module(Protocol):
    name: str

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    def ready(self) -> bool: ...


@runtime_checkable
class Degradable(Protocol):
    """A module that can work on in a degraded way says why (None while it is not)."""

    def degraded(self) -> str | None: ...


class StartupError(Exception):
    """A module could not start; `exit_code` is what the process should exit with."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass(frozen=True, slots=True)
class Readiness:
    """Modules not ready (by name), and modules working in a degraded way (name -> why:
    a full disk under the state dir, say): /readyz says both."""

    not_ready: tuple[str, ...]
    degraded: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def ready(self) -> bool:
        return not self.not_ready


@dataclass(frozen=True, slots=True)
class Built:
    """What building an agent gives the daemon: its modules, in start order, and the ports
    it offers the agents built after it (None: it offers none)."""

    modules: tuple[Module, ...] = ()
    offers: Ports | None = None


NOTHING = Built()


@dataclass(frozen=True, slots=True)
class AgentSpec:
    name: str
    enabled: Callable[[Config], bool]
    build: Callable[[Hubs], Built]
    # the agent's section of options (koordlet/<agent>/options.py); the daemon composes them
    options: type | None = None
