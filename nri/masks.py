"""Event masks: which events a plugin handles, which a runtime accepts, and how
each event reaches the plugin on a given NRI version.

Pure functions; facts from protocols.md §3.4, §3.6 and §3.8.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import Iterable

from nri.events import EVENT_SPECS, SPEC_BY_EVENT, Event


class MaskError(ValueError):
    """A mask or version that cannot be used."""


class InvalidEventMask(MaskError):
    """A mask with bits outside what the runtime accepts (Configure then fails)."""


class NoUsableEvents(MaskError):
    """None of the plugin's handlers can be subscribed on this runtime.

    Answering Configure with mask 0 would subscribe the plugin to *every* event,
    so this is an error rather than an empty subscription."""


_VERSION_RE = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?")


@dataclass(frozen=True, slots=True, order=True)
class NriVersion:
    """An NRI module version such as v0.12.0."""

    major: int
    minor: int
    patch: int = 0

    @classmethod
    def parse(cls, text: str) -> NriVersion:
        match = _VERSION_RE.match(text.strip())
        if match is None:
            raise MaskError("not a version: " + repr(text))
        return cls(int(match.group(1)), int(match.group(2)), int(match.group(3) or 0))

    @property
    def key(self) -> tuple[int, int]:
        return (self.major, self.minor)

    def __str__(self) -> str:
        return "v%d.%d.%d" % (self.major, self.minor, self.patch)


# The oldest NRI version we assume when nothing tells us better: its mask (0x7FF)
# is accepted by every runtime in scope.
CONSERVATIVE_VERSION = NriVersion(0, 8, 0)

# containerd release -> NRI module it ships, for runtimes that do not send
# ConfigureRequest.NRI_version (anything before NRI 0.12). Ordered; first match wins.
# Each row: (lowest containerd version, highest containerd version inclusive, NRI version).
_CONTAINERD_NRI: tuple[tuple[tuple[int, int, int], tuple[int, int, int], NriVersion], ...] = (
    ((1, 7, 0), (1, 7, 6), NriVersion(0, 3, 0)),
    ((1, 7, 7), (1, 7, 13), NriVersion(0, 4, 0)),
    ((1, 7, 14), (1, 7, 15), NriVersion(0, 6, 0)),
    ((1, 7, 16), (1, 7, 25), NriVersion(0, 6, 1)),
    ((1, 7, 26), (1, 7, 999), NriVersion(0, 8, 0)),
    ((2, 0, 0), (2, 1, 999), NriVersion(0, 8, 0)),
    ((2, 2, 0), (2, 2, 0), NriVersion(0, 10, 0)),
    ((2, 2, 1), (2, 2, 999), NriVersion(0, 11, 0)),
    ((2, 3, 0), (2, 3, 999), NriVersion(0, 12, 0)),
)


def runtime_nri_version(runtime_name: str, runtime_version: str, nri_version: str) -> NriVersion:
    """The runtime's NRI version: its own word when sent (NRI >= 0.12), else
    inferred from a known containerd release, else the conservative guess."""
    if nri_version:
        try:
            return NriVersion.parse(nri_version)
        except MaskError:
            pass
    if runtime_name != "containerd":
        return CONSERVATIVE_VERSION
    try:
        release = NriVersion.parse(runtime_version)
    except MaskError:
        return CONSERVATIVE_VERSION
    triple = (release.major, release.minor, release.patch)
    for low, high, nri in _CONTAINERD_NRI:
        if low <= triple <= high:
            return nri
    return CONSERVATIVE_VERSION


def valid_event_mask(version: NriVersion) -> int:
    """All events a runtime of this version accepts: 0x7FF up to 0.9, 0x3FFF from 0.10."""
    last = 15 if version.key >= (0, 10) else 12
    return (1 << (last - 1)) - 1


def mask_of(events: Iterable[Event]) -> int:
    mask = 0
    for event in events:
        mask |= event.bit
    return mask


def events_of(mask: int) -> frozenset[Event]:
    return frozenset(spec.event for spec in EVENT_SPECS if mask & spec.event.bit)


def handled_events(plugin: object) -> frozenset[Event]:
    """Events whose handler method the plugin object defines (callable attribute
    named after the event, e.g. `create_container`)."""
    return frozenset(spec.event for spec in EVENT_SPECS if callable(getattr(plugin, spec.handler, None)))


def subscription_mask(handled: frozenset[Event], version: NriVersion, requested: int | None = None) -> int:
    """The mask to answer Configure with.

    `requested` (from the plugin's own configure handler) narrows the handled
    set; 0 or None means "everything I handle". Bits the runtime would reject are
    dropped. Raises NoUsableEvents when nothing is left, and MaskError when the
    plugin asks for events it has no handler for."""
    handled_mask = mask_of(handled)
    if requested:
        extra = requested & ~handled_mask
        if extra:
            raise MaskError("plugin requested events it does not handle: 0x%x" % extra)
        handled_mask = requested
    mask = handled_mask & valid_event_mask(version)
    if mask == 0:
        raise NoUsableEvents(
            "no handled event is supported by a runtime with NRI %s (handled mask 0x%x)" % (version, handled_mask)
        )
    return mask


def check_event_mask(mask: int, version: NriVersion) -> frozenset[Event]:
    """What a runtime does with a Configure reply: 0 means every valid event; any
    bit outside the valid set is an error."""
    valid = valid_event_mask(version)
    if mask < 0 or mask & ~valid:
        raise InvalidEventMask("invalid plugin events: 0x%x" % (mask & ~valid if mask >= 0 else mask))
    return events_of(mask or valid)


class Delivery(Enum):
    """How a runtime of some NRI version hands an event to a plugin."""

    DEDICATED = "dedicated"  # its own RPC (StateChange as fallback on Unimplemented from 0.12)
    STATE_CHANGE = "state_change"  # only through StateChange
    NONE = "none"  # the runtime does not have this event


def delivery(event: Event, version: NriVersion) -> Delivery:
    spec = SPEC_BY_EVENT[event]
    if version.key < spec.exists_since:
        return Delivery.NONE
    if version.key >= spec.dedicated_since:
        return Delivery.DEDICATED
    if event in (Event.UPDATE_POD_SANDBOX, Event.VALIDATE_CONTAINER_ADJUSTMENT):
        return Delivery.NONE  # these never travel through StateChange
    return Delivery.STATE_CHANGE


def falls_back_to_state_change(event: Event, version: NriVersion) -> bool:
    """From 0.12 a runtime retries an Unimplemented dedicated RPC as StateChange,
    for the events that used to travel only through StateChange."""
    spec = SPEC_BY_EVENT[event]
    return version.key >= (0, 12) and spec.dedicated_since == (0, 12)
