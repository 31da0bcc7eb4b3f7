"""Event relay of the test peer: deliver one lifecycle event to every subscribed
plugin in index order, the way the runtime's NRI version does it, and fold the
answers into the model (protocols.md §3.6, §3.7).

Fatal errors (deadline passed, connection closed) drop the plugin and the
operation goes on as if it had answered nothing; any other error status fails
the operation and the plugin stays.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import structlog

from nri.events import SPEC_BY_EVENT, Event
from nri.masks import Delivery, delivery, falls_back_to_state_change
from nri.stub import results
from nri.testing.model import ModelError, OwnershipLedger, apply_adjustment, apply_update, merge_updates
from nri.ttrpc.status import Code, ConnectionClosed, TtrpcError
from proto.nri.pkg.api.v1alpha1 import api_pb2 as api

if TYPE_CHECKING:
    from nri.testing.peer import RuntimePeer
    from nri.testing.peer_plugin import PeerPlugin

log = structlog.get_logger(__name__)


class RuntimeOperationFailed(Exception):
    """The CRI operation fails (a plugin error status, a conflict, a rejection)."""


_RESPONSE_TYPES = {
    "CreateContainer": api.CreateContainerResponse,
    "UpdateContainer": api.UpdateContainerResponse,
    "StopContainer": api.StopContainerResponse,
}


def _is_fatal(exc: TtrpcError) -> bool:
    return isinstance(exc, ConnectionClosed) or exc.code == Code.DEADLINE_EXCEEDED


class EventRelay:
    def __init__(self, peer: RuntimePeer) -> None:
        self._peer = peer

    async def _deliver(
        self, plugin: PeerPlugin, event: Event, request: Any, pod: api.PodSandbox, container: api.Container | None
    ) -> Any:
        """One event to one plugin. Returns the response, or None when there is
        nothing to use (state change, not delivered, or the plugin was dropped)."""
        peer = self._peer
        spec = SPEC_BY_EVENT[event]
        how = delivery(event, peer.config.nri_version)
        timeout = peer.config.request_timeout
        try:
            if how is Delivery.NONE:
                return None
            if how is Delivery.STATE_CHANGE:
                await plugin.state_change(event, pod, container, timeout)
                return None
            response_type = _RESPONSE_TYPES.get(spec.rpc) or results.EMPTY_RESPONSES[spec.rpc]
            try:
                return await plugin.call(spec.rpc, request, response_type, timeout)
            except TtrpcError as exc:
                if exc.code == Code.UNIMPLEMENTED and falls_back_to_state_change(event, peer.config.nri_version):
                    log.warning("nri_peer_state_change_fallback", plugin=plugin.full_name, rpc=spec.rpc)
                    await plugin.state_change(event, pod, container, timeout)
                    return None
                raise
        except TtrpcError as exc:
            if _is_fatal(exc):
                plugin.close("failed to handle %s request: %s" % (spec.rpc, exc))
                return None
            raise RuntimeOperationFailed("plugin %s: %s" % (plugin.full_name, exc)) from exc

    # -- pods --------------------------------------------------------------------------

    async def pod_event(self, event: Event, pod: api.PodSandbox, request: Any | None = None) -> None:
        peer = self._peer
        spec = SPEC_BY_EVENT[event]
        if request is None:
            request = results.REQUEST_TYPES[spec.rpc](pod=pod)
        async with peer.event_lock:
            for plugin in peer.active_for(event):
                await self._deliver(plugin, event, request, pod, None)
            if event is Event.RUN_POD_SANDBOX:
                peer.state.pods[pod.id] = pod
            elif event is Event.REMOVE_POD_SANDBOX:
                peer.state.pods.pop(pod.id, None)

    # -- containers --------------------------------------------------------------------

    async def create_container(self, pod: api.PodSandbox, container: api.Container) -> api.Container:
        """Returns the container as created: with every plugin's adjustment applied."""
        peer = self._peer
        event = Event.CREATE_CONTAINER
        created = api.Container()
        created.CopyFrom(container)
        request = api.CreateContainerRequest(pod=pod, container=container)
        ledger = OwnershipLedger()
        updates: list[tuple[str, api.ContainerUpdate]] = []
        async with peer.event_lock:
            for plugin in peer.active_for(event):
                response = await self._deliver(plugin, event, request, pod, container)
                if response is None:
                    continue
                for update in response.update:
                    if update.container_id == container.id:
                        raise RuntimeOperationFailed(
                            "plugin %s asked update of %s during creation" % (plugin.full_name, container.id)
                        )
                    updates.append((plugin.full_name, update))
                if response.HasField("adjust"):
                    try:
                        apply_adjustment(created, response.adjust, plugin.full_name, ledger)
                    except ModelError as exc:
                        raise RuntimeOperationFailed(str(exc)) from exc
            await self._validate(pod, container, created, updates)
            peer.state.containers[created.id] = created
            self._apply_updates(updates)
        return created

    async def _validate(
        self,
        pod: api.PodSandbox,
        original: api.Container,
        created: api.Container,
        updates: list[tuple[str, api.ContainerUpdate]],
    ) -> None:
        """Validators run in parallel on the merged result (0.10+)."""
        peer = self._peer
        event = Event.VALIDATE_CONTAINER_ADJUSTMENT
        validators = peer.active_for(event)
        if not validators or delivery(event, peer.config.nri_version) is Delivery.NONE:
            return
        request = api.ValidateContainerAdjustmentRequest(pod=pod, container=original, update=[u for _, u in updates])
        for plugin in peer.plugins:
            request.plugins.add(name=plugin.name, index=plugin.index)
        answers = await asyncio.gather(
            *(
                plugin.call(
                    "ValidateContainerAdjustment",
                    request,
                    api.ValidateContainerAdjustmentResponse,
                    peer.config.request_timeout,
                )
                for plugin in validators
            ),
            return_exceptions=True,
        )
        for plugin, answer in zip(validators, answers):
            if isinstance(answer, TtrpcError):
                if _is_fatal(answer):
                    plugin.close("failed to validate request: %s" % answer)
                raise RuntimeOperationFailed("validator plugin %s failed: %s" % (plugin.full_name, answer))
            if isinstance(answer, BaseException):
                raise answer
            if answer.reject:
                raise RuntimeOperationFailed("validator %s rejected: %s" % (plugin.full_name, answer.reason))

    async def update_container(
        self, pod: api.PodSandbox, container: api.Container, resources: api.LinuxResources
    ) -> api.Container:
        """A CRI UpdateContainerResources: plugins may replace the requested
        resources (an update for this container) and update others."""
        peer = self._peer
        event = Event.UPDATE_CONTAINER
        request = api.UpdateContainerRequest(pod=pod, container=container, linux_resources=resources)
        async with peer.event_lock:
            updates = await self._collect_updates(event, request, pod, container)
            requested = api.ContainerUpdate(container_id=container.id)
            requested.linux.resources.CopyFrom(resources)
            merged = merge_updates([("runtime", requested), *updates])
            self._apply_updates(list(merged.items()), by_id=True)
            return peer.state.containers.get(container.id, container)

    async def stop_container(self, pod: api.PodSandbox, container: api.Container) -> None:
        peer = self._peer
        event = Event.STOP_CONTAINER
        request = api.StopContainerRequest(pod=pod, container=container)
        async with peer.event_lock:
            self._apply_updates(await self._collect_updates(event, request, pod, container))

    async def _collect_updates(
        self, event: Event, request: Any, pod: api.PodSandbox, container: api.Container
    ) -> list[tuple[str, api.ContainerUpdate]]:
        """Deliver to every subscribed plugin in order; the updates they ask for, by plugin."""
        updates: list[tuple[str, api.ContainerUpdate]] = []
        for plugin in self._peer.active_for(event):
            response = await self._deliver(plugin, event, request, pod, container)
            if response is not None:
                updates.extend((plugin.full_name, u) for u in response.update)
        return updates

    async def container_event(self, event: Event, pod: api.PodSandbox, container: api.Container) -> None:
        """Post-create, start, post-start, post-update, remove: notifications."""
        peer = self._peer
        spec = SPEC_BY_EVENT[event]
        request = results.REQUEST_TYPES[spec.rpc](pod=pod, container=container)
        async with peer.event_lock:
            for plugin in peer.active_for(event):
                await self._deliver(plugin, event, request, pod, container)
            if event is Event.REMOVE_CONTAINER:
                peer.state.containers.pop(container.id, None)

    def _apply_updates(self, updates: list[Any], by_id: bool = False) -> None:
        merged = dict(updates) if by_id else merge_updates(updates)
        for container_id, update in merged.items():
            target = self._peer.state.containers.get(container_id)
            if target is not None:
                apply_update(target, update)
