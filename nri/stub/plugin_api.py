"""What a plugin object may define, for editors and for the stub's own checks.

The stub finds handlers by name (like containerd's Go stub finds interfaces), so a
misspelt method (`create_containr`) would silently never be subscribed. The stub
calls `unmatched_handlers` on the plugin's public methods and warns about (or, with
`StubConfig(strict_handlers=True)`, refuses) those that look like handlers but match
none. The one-method Protocols below give editors the exact signatures; a plugin
class may list the ones it implements as bases (they add nothing at run time).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from nri.events import BEFORE_EVENT_HOOK, CONFIGURE_HANDLER, EVENT_SPECS, SHUTDOWN_HANDLER, SYNCHRONIZE_HANDLER
from nri.stub.results import EncodedResponse
from proto.nri.pkg.api.v1alpha1 import api_pb2 as api

KNOWN_HANDLERS: frozenset[str] = frozenset(
    {spec.handler for spec in EVENT_SPECS}
    | {CONFIGURE_HANDLER, SYNCHRONIZE_HANDLER, SHUTDOWN_HANDLER, BEFORE_EVENT_HOOK}
)

# <verb>_<subject>: the shape of every event handler name
_HANDLER_SHAPE = re.compile(
    r"^(post_)?(run|stop|remove|create|start|update|validate)_(pod_sandbox|pod|sandbox|container|"
    r"containers|ctr)(_adjustment)?$"
)
_TYPO_CUTOFF = 0.9  # create_containr: 0.97, synchronise: 0.91; update_containers_now: 0.86


def unmatched_handlers(names: Iterable[str]) -> list[tuple[str, str | None]]:
    """(name, closest handler name or None) for public names that look like handlers
    (a near-miss of a handler name, or a <verb>_<pod|container> name) but are none."""
    found: list[tuple[str, str | None]] = []
    for name in sorted(set(names)):
        if name.startswith("_") or name in KNOWN_HANDLERS:
            continue
        close = difflib.get_close_matches(name, KNOWN_HANDLERS, n=1, cutoff=_TYPO_CUTOFF)
        if close or _HANDLER_SHAPE.match(name):
            found.append((name, close[0] if close else None))
    return found


def public_methods(plugin: object) -> list[str]:
    return [name for name in dir(plugin) if not name.startswith("_") and callable(getattr(plugin, name, None))]


# -- one Protocol per handler (signatures as the stub calls them) ------------------------

Updates = Sequence[api.ContainerUpdate]


class Configure(Protocol):
    async def configure(self, config: str, runtime: Any) -> Any: ...


class Synchronize(Protocol):
    async def synchronize(self, pods: list[api.PodSandbox], containers: list[api.Container]) -> Updates | None: ...


class Shutdown(Protocol):
    async def shutdown(self) -> None: ...


class BeforeEvent(Protocol):
    def before_event(self) -> None: ...


class RunPodSandbox(Protocol):
    async def run_pod_sandbox(self, pod: api.PodSandbox) -> None: ...


class StopPodSandbox(Protocol):
    async def stop_pod_sandbox(self, pod: api.PodSandbox) -> None: ...


class RemovePodSandbox(Protocol):
    async def remove_pod_sandbox(self, pod: api.PodSandbox) -> None: ...


class UpdatePodSandbox(Protocol):
    async def update_pod_sandbox(
        self, pod: api.PodSandbox, overhead: api.LinuxResources, resources: api.LinuxResources
    ) -> None: ...


class PostUpdatePodSandbox(Protocol):
    async def post_update_pod_sandbox(self, pod: api.PodSandbox) -> None: ...


class CreateContainer(Protocol):
    async def create_container(self, pod: api.PodSandbox, container: api.Container) -> (
        api.ContainerAdjustment | tuple[Any, ...] | api.CreateContainerResponse | EncodedResponse | None
    ): ...


class PostCreateContainer(Protocol):
    async def post_create_container(self, pod: api.PodSandbox, container: api.Container) -> None: ...


class StartContainer(Protocol):
    async def start_container(self, pod: api.PodSandbox, container: api.Container) -> None: ...


class PostStartContainer(Protocol):
    async def post_start_container(self, pod: api.PodSandbox, container: api.Container) -> None: ...


class UpdateContainer(Protocol):
    async def update_container(
        self, pod: api.PodSandbox, container: api.Container, resources: api.LinuxResources
    ) -> Updates | api.UpdateContainerResponse | None: ...


class PostUpdateContainer(Protocol):
    async def post_update_container(self, pod: api.PodSandbox, container: api.Container) -> None: ...


class StopContainer(Protocol):
    async def stop_container(self, pod: api.PodSandbox, container: api.Container) -> (
        Updates | api.StopContainerResponse | None
    ): ...


class RemoveContainer(Protocol):
    async def remove_container(self, pod: api.PodSandbox, container: api.Container) -> None: ...


class ValidateContainerAdjustment(Protocol):
    async def validate_container_adjustment(
        self, request: api.ValidateContainerAdjustmentRequest
    ) -> api.ValidateContainerAdjustmentResponse | bool | tuple[bool, str] | None: ...
