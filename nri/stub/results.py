"""Turn what a plugin handler returns into the response message the runtime expects.

Handlers may return the convenient Python shape (None, an adjustment, a list of
updates, a tuple) or the full response message. Anything else is a clear error,
not a silently empty answer. Pure functions.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from nri.events import Event
from nri.stub.errors import StubError
from proto.nri.pkg.api.v1alpha1 import api_pb2 as api


class HandlerResultError(StubError, TypeError):
    """A handler returned something that does not fit its event."""


class EncodedResponse(bytes):
    """A handler's answer already encoded as its event's response message (e.g. a
    CreateContainerResponse kept from an earlier answer): the ttrpc server writes these
    bytes as they are. Building the message and encoding it again at every answer cost
    ~10 us of a CreateContainer answer with the CPU caches cold."""

    __slots__ = ()


def _updates(value: Any, event: str) -> list[api.ContainerUpdate]:
    if value is None:
        return []
    if isinstance(value, api.ContainerUpdate):
        return [value]
    if isinstance(value, (list, tuple)):
        for item in value:
            if not isinstance(item, api.ContainerUpdate):
                raise HandlerResultError("%s: expected ContainerUpdate items, got %s" % (event, type(item).__name__))
        return list(value)
    raise HandlerResultError("%s: expected a list of ContainerUpdate, got %s" % (event, type(value).__name__))


def _evictions(value: Any, event: str) -> list[api.ContainerEviction]:
    if value is None:
        return []
    items = list(value)
    for item in items:
        if not isinstance(item, api.ContainerEviction):
            raise HandlerResultError("%s: expected ContainerEviction items, got %s" % (event, type(item).__name__))
    return items


def create_container_response(value: Any) -> api.CreateContainerResponse | EncodedResponse:
    """None | ContainerAdjustment | (adjust, updates[, evictions]) | CreateContainerResponse
    (or its EncodedResponse, handed on as it is)."""
    if value is None:
        return api.CreateContainerResponse()
    if type(value) is EncodedResponse:
        return value
    if isinstance(value, api.CreateContainerResponse):
        return value
    if isinstance(value, api.ContainerAdjustment):
        return api.CreateContainerResponse(adjust=value)
    if isinstance(value, tuple) and 1 <= len(value) <= 3:
        adjust = value[0]
        if adjust is not None and not isinstance(adjust, api.ContainerAdjustment):
            raise HandlerResultError("CreateContainer: first item must be a ContainerAdjustment or None")
        return api.CreateContainerResponse(
            adjust=adjust,
            update=_updates(value[1] if len(value) > 1 else None, "CreateContainer"),
            evict=_evictions(value[2] if len(value) > 2 else None, "CreateContainer"),
        )
    raise HandlerResultError("CreateContainer: unexpected result %s" % type(value).__name__)


def update_container_response(value: Any) -> api.UpdateContainerResponse:
    if isinstance(value, api.UpdateContainerResponse):
        return value
    return api.UpdateContainerResponse(update=_updates(value, "UpdateContainer"))


def stop_container_response(value: Any) -> api.StopContainerResponse:
    if isinstance(value, api.StopContainerResponse):
        return value
    return api.StopContainerResponse(update=_updates(value, "StopContainer"))


def synchronize_updates(value: Any) -> list[api.ContainerUpdate]:
    return _updates(value, "Synchronize")


def validation_response(value: Any) -> api.ValidateContainerAdjustmentResponse:
    """None/True accept; False rejects; (False, reason) rejects with a reason."""
    if value is None or value is True:
        return api.ValidateContainerAdjustmentResponse()
    if isinstance(value, api.ValidateContainerAdjustmentResponse):
        return value
    if value is False:
        return api.ValidateContainerAdjustmentResponse(reject=True, reason="rejected by plugin")
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], bool):
        accepted, reason = value
        return api.ValidateContainerAdjustmentResponse(reject=not accepted, reason="" if accepted else str(reason))
    raise HandlerResultError("ValidateContainerAdjustment: unexpected result %s" % type(value).__name__)


def requested_mask(value: Any) -> int | None:
    """What a configure handler returned: None/0 (everything handled), an int
    mask, or an iterable of Event."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise HandlerResultError("configure: expected an event mask or events, got bool")
    if isinstance(value, int):
        return value
    if isinstance(value, Iterable):
        mask = 0
        for item in value:
            if not isinstance(item, Event):
                raise HandlerResultError("configure: expected Event items, got %s" % type(item).__name__)
            mask |= item.bit
        return mask
    raise HandlerResultError("configure: unexpected result %s" % type(value).__name__)


# Empty responses per event RPC: the deadline guard's no-op answer.
EMPTY_RESPONSES: dict[str, type] = {
    "RunPodSandbox": api.RunPodSandboxResponse,
    "UpdatePodSandbox": api.UpdatePodSandboxResponse,
    "PostUpdatePodSandbox": api.PostUpdatePodSandboxResponse,
    "StopPodSandbox": api.StopPodSandboxResponse,
    "RemovePodSandbox": api.RemovePodSandboxResponse,
    "CreateContainer": api.CreateContainerResponse,
    "PostCreateContainer": api.PostCreateContainerResponse,
    "StartContainer": api.StartContainerResponse,
    "PostStartContainer": api.PostStartContainerResponse,
    "UpdateContainer": api.UpdateContainerResponse,
    "PostUpdateContainer": api.PostUpdateContainerResponse,
    "StopContainer": api.StopContainerResponse,
    "RemoveContainer": api.RemoveContainerResponse,
    "ValidateContainerAdjustment": api.ValidateContainerAdjustmentResponse,
}

# What turns a completed handler's value into the response, per event RPC; events
# whose response carries nothing answer their empty response whatever the handler returns.
RESPONSE_BUILDERS: dict[str, Callable[[Any], Any]] = {
    "CreateContainer": create_container_response,
    "UpdateContainer": update_container_response,
    "StopContainer": stop_container_response,
    "ValidateContainerAdjustment": validation_response,
}

REQUEST_TYPES: dict[str, type] = {
    "RunPodSandbox": api.RunPodSandboxRequest,
    "UpdatePodSandbox": api.UpdatePodSandboxRequest,
    "PostUpdatePodSandbox": api.PostUpdatePodSandboxRequest,
    "StopPodSandbox": api.StopPodSandboxRequest,
    "RemovePodSandbox": api.RemovePodSandboxRequest,
    "CreateContainer": api.CreateContainerRequest,
    "PostCreateContainer": api.PostCreateContainerRequest,
    "StartContainer": api.StartContainerRequest,
    "PostStartContainer": api.PostStartContainerRequest,
    "UpdateContainer": api.UpdateContainerRequest,
    "PostUpdateContainer": api.PostUpdateContainerRequest,
    "StopContainer": api.StopContainerRequest,
    "RemoveContainer": api.RemoveContainerRequest,
    "ValidateContainerAdjustment": api.ValidateContainerAdjustmentRequest,
}
