"""NRI lifecycle events: their wire numbers, RPC names and plugin handler names.

One frozen table (`EVENT_SPECS`) declares every event once; everything else
(event masks, dispatch, StateChange fallback) is derived from it. Wire facts
from protocols.md §3.2-§3.4.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, IntEnum
from types import MappingProxyType
from typing import Mapping


class Event(IntEnum):
    """The `nri.pkg.api.v1alpha1.Event` enum (wire values)."""

    UNKNOWN = 0
    RUN_POD_SANDBOX = 1
    STOP_POD_SANDBOX = 2
    REMOVE_POD_SANDBOX = 3
    CREATE_CONTAINER = 4
    POST_CREATE_CONTAINER = 5
    START_CONTAINER = 6
    POST_START_CONTAINER = 7
    UPDATE_CONTAINER = 8
    POST_UPDATE_CONTAINER = 9
    STOP_CONTAINER = 10
    REMOVE_CONTAINER = 11
    UPDATE_POD_SANDBOX = 12
    POST_UPDATE_POD_SANDBOX = 13
    VALIDATE_CONTAINER_ADJUSTMENT = 14

    @property
    def bit(self) -> int:
        """The event's bit in a subscription mask: event e is bit e-1."""
        if self is Event.UNKNOWN:
            raise ValueError("Event.UNKNOWN has no mask bit")
        return 1 << (self.value - 1)


class Subject(Enum):
    """What an event is about; decides the handler's arguments."""

    POD = "pod"
    CONTAINER = "container"
    VALIDATION = "validation"


@dataclass(frozen=True, slots=True)
class EventSpec:
    """One event: its enum value, the Plugin service RPC, the Python handler name,
    and the NRI version (major, minor) whose runtime first calls the dedicated RPC.
    Before that version the event arrives as StateChange (when it exists at all)."""

    event: Event
    rpc: str
    handler: str
    subject: Subject
    dedicated_since: tuple[int, int]
    exists_since: tuple[int, int]
    # the request fields handed to the handler, in order; () hands the whole request
    args: tuple[str, ...] = ()

    def handler_args(self, request: object) -> tuple[object, ...]:
        """The handler's arguments taken from the event's request (or StateChangeEvent)."""
        if not self.args:
            return (request,)
        return tuple(getattr(request, name) for name in self.args)


_POD = ("pod",)
_CTR = ("pod", "container")
_ALWAYS = (0, 0)
_V010 = (0, 10)
_V012 = (0, 12)

EVENT_SPECS: tuple[EventSpec, ...] = (
    EventSpec(Event.RUN_POD_SANDBOX, "RunPodSandbox", "run_pod_sandbox", Subject.POD, _V012, _ALWAYS, _POD),
    EventSpec(Event.STOP_POD_SANDBOX, "StopPodSandbox", "stop_pod_sandbox", Subject.POD, _V012, _ALWAYS, _POD),
    EventSpec(Event.REMOVE_POD_SANDBOX, "RemovePodSandbox", "remove_pod_sandbox", Subject.POD, _V012, _ALWAYS, _POD),
    EventSpec(Event.CREATE_CONTAINER, "CreateContainer", "create_container", Subject.CONTAINER, _ALWAYS, _ALWAYS, _CTR),
    EventSpec(
        Event.POST_CREATE_CONTAINER, "PostCreateContainer", "post_create_container", Subject.CONTAINER, _V012, _ALWAYS,
        _CTR,
    ),
    EventSpec(Event.START_CONTAINER, "StartContainer", "start_container", Subject.CONTAINER, _V012, _ALWAYS, _CTR),
    EventSpec(
        Event.POST_START_CONTAINER, "PostStartContainer", "post_start_container", Subject.CONTAINER, _V012, _ALWAYS,
        _CTR,
    ),
    EventSpec(
        Event.UPDATE_CONTAINER, "UpdateContainer", "update_container", Subject.CONTAINER, _ALWAYS, _ALWAYS,
        ("pod", "container", "linux_resources"),
    ),
    EventSpec(
        Event.POST_UPDATE_CONTAINER, "PostUpdateContainer", "post_update_container", Subject.CONTAINER, _V012, _ALWAYS,
        _CTR,
    ),
    EventSpec(Event.STOP_CONTAINER, "StopContainer", "stop_container", Subject.CONTAINER, _ALWAYS, _ALWAYS, _CTR),
    EventSpec(Event.REMOVE_CONTAINER, "RemoveContainer", "remove_container", Subject.CONTAINER, _V012, _ALWAYS, _CTR),
    EventSpec(
        Event.UPDATE_POD_SANDBOX, "UpdatePodSandbox", "update_pod_sandbox", Subject.POD, _V010, _V010,
        ("pod", "overhead_linux_resources", "linux_resources"),
    ),
    EventSpec(
        Event.POST_UPDATE_POD_SANDBOX, "PostUpdatePodSandbox", "post_update_pod_sandbox", Subject.POD, _V012, _V010,
        _POD,
    ),
    EventSpec(
        Event.VALIDATE_CONTAINER_ADJUSTMENT,
        "ValidateContainerAdjustment",
        "validate_container_adjustment",
        Subject.VALIDATION,
        _V010,
        _V010,
    ),
)

SPEC_BY_EVENT: Mapping[Event, EventSpec] = MappingProxyType({s.event: s for s in EVENT_SPECS})
SPEC_BY_RPC: Mapping[str, EventSpec] = MappingProxyType({s.rpc: s for s in EVENT_SPECS})

# Plugin-service methods that are not events.
CONFIGURE_RPC = "Configure"
SYNCHRONIZE_RPC = "Synchronize"
SHUTDOWN_RPC = "Shutdown"
STATE_CHANGE_RPC = "StateChange"

# Handler names a plugin object may define besides the event handlers.
CONFIGURE_HANDLER = "configure"
SYNCHRONIZE_HANDLER = "synchronize"
SHUTDOWN_HANDLER = "shutdown"
# Not an event: called with no arguments before each handler the stub runs.
BEFORE_EVENT_HOOK = "before_event"

PLUGIN_SERVICE = "nri.pkg.api.v1alpha1.Plugin"
RUNTIME_SERVICE = "nri.pkg.api.v1alpha1.Runtime"
