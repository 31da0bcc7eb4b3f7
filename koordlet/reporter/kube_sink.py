"""The Kubernetes sink: the NodeMetric status and the CustomNodeResource annotations.

NodeMetric (slo.koordinator.sh/v1alpha1, cluster-scoped, named after the node): GET the
object, create it (spec from our policy) when it does not exist, then PUT the status
subresource carrying the object's resourceVersion, without its managedFields (the API
server keeps them; sending them back is ~0.5 KB a report for nothing). The status is sent as
the text the report was built as (nodemetric.status_text_steps), spliced into the object's;
of the PUT's answer the members before the status are read (util/json_members.py) and
kept: the next report PUTs over it without a GET, one request a report as koordlet's
informer cache gives it. A 409 means the object changed under us (a spec edited by the
slo-controller too): wait (client-go's retry.DefaultBackoff: 10 ms, x5 per step, 10 %
jitter, so two writers do not collide again in step), GET the fresh one and try again, a
bounded number of times. Updates are rate limited on the client like koordlet's (0.1 QPS,
burst 2); a limited round is skipped, not queued.

CustomNodeResource (node.katalyst.kubewharf.io/v1alpha1, `kcnr`): a JSON merge patch of
metadata.annotations. The agent does not create a KCNR (Katalyst's agent owns its spec);
a missing one is reported and retried next round.
"""

from __future__ import annotations

import asyncio
import random
from enum import Enum
from typing import TYPE_CHECKING, Any, Callable, Mapping

import structlog

from koordlet.util.json_members import MembersError, members_without
from koordlet.util.json_text import canonical_json, with_last_member
from koordlet.util.kube_client import put_text
from koordlet.util.token_bucket import TokenBucket

# koordlet limits NodeMetric status updates to 0.1 QPS, burst 2
STATUS_UPDATE_QPS = 0.1
STATUS_UPDATE_BURST = 2

if TYPE_CHECKING:
    from lightkube import AsyncClient

log = structlog.get_logger(__name__)

CONFLICT_RETRIES = 5
# what the next PUT needs of the object the API server answers (it writes a custom
# resource's keys sorted: the status after these, left undecoded)
ANSWER_MEMBERS_NEEDED = ("apiVersion", "kind", "metadata", "spec")
CONFLICT_FIRST_WAIT_SECONDS = 0.010
CONFLICT_WAIT_FACTOR = 5.0
CONFLICT_JITTER = 0.1


def conflict_wait(attempt: int, rand: Callable[[], float] = random.random) -> float:
    """The wait before retry number `attempt` (1-based) after a 409."""
    base = CONFLICT_FIRST_WAIT_SECONDS * CONFLICT_WAIT_FACTOR ** (attempt - 1)
    return base * (1 + CONFLICT_JITTER * rand())


def without_managed_fields(obj: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(obj)
    metadata = out.get("metadata")
    if isinstance(metadata, Mapping) and "managedFields" in metadata:
        out["metadata"] = {k: v for k, v in metadata.items() if k != "managedFields"}
    return out


class SinkError(RuntimeError):
    """One write failed; the message says which call and why."""


class Outcome(Enum):
    WRITTEN = "written"
    RATE_LIMITED = "rate_limited"
    NOT_FOUND = "not_found"


def _resources():
    from lightkube.generic_resource import create_global_resource

    node_metric = create_global_resource("slo.koordinator.sh", "v1alpha1", "NodeMetric", "nodemetrics")
    kcnr = create_global_resource("node.katalyst.kubewharf.io", "v1alpha1", "CustomNodeResource",
                                  "customnoderesources")
    return node_metric, kcnr


def status_code(exc: Exception) -> int | None:
    response = getattr(exc, "response", None)
    return getattr(response, "status_code", None)


class KubeSink:
    def __init__(self, client: "AsyncClient", node_name: str, limiter: TokenBucket | None = None,
                 sleep: Callable[[float], Any] = asyncio.sleep) -> None:
        self._client = client
        self._sleep = sleep
        self._node = node_name
        self._limiter = limiter or TokenBucket(STATUS_UPDATE_QPS, STATUS_UPDATE_BURST)
        self._node_metric, self._kcnr = _resources()
        self.last_spec: Mapping[str, Any] | None = None  # the NodeMetric spec seen by the last write
        self._written: dict[str, Any] | None = None  # the object the last status PUT answered, but its status

    @property
    def client(self) -> "AsyncClient":
        """The API client, for the reporter's other writers (nrt_sink.py)."""
        return self._client

    async def node_metric_spec(self) -> Mapping[str, Any] | None:
        """The cluster's NodeMetric spec, or None when the object does not exist yet."""
        from lightkube import ApiError

        try:
            obj = await self._client.get(self._node_metric, self._node)
        except ApiError as exc:
            if status_code(exc) == 404:
                return None
            raise SinkError("get nodemetric %s: %s" % (self._node, exc)) from exc
        return obj.get("spec") or {}

    async def write_status(self, status_text: str, new_object: Mapping[str, Any]) -> Outcome:
        """Put the status whose canonical JSON is `status_text` on the node's NodeMetric;
        `new_object` is what to create if it is missing."""
        from lightkube import ApiError

        if not self._limiter.allow():
            return Outcome.RATE_LIMITED
        for attempt in range(CONFLICT_RETRIES):
            if attempt:
                await self._sleep(conflict_wait(attempt))
            current = self._written if self._written is not None else await self._current_or_created(new_object)
            desired = without_managed_fields(current)
            desired.pop("status", None)
            # the status goes as the text the report was built as: no dicts of it, and no
            # encoding of them in one call that holds the loop
            body = with_last_member(canonical_json(desired), "status", status_text)
            try:
                answer = await put_text(self._client, self._node_metric.Status, self._node, body)
            except ApiError as exc:
                self._written = None
                if status_code(exc) in (409, 404):  # stale resourceVersion, or deleted meanwhile
                    log.info("nodemetric_status_retry", node=self._node, code=status_code(exc), attempt=attempt + 1)
                    continue
                raise SinkError("update nodemetric %s status: %s" % (self._node, exc)) from exc
            # kept without its status: the next PUT replaces it, and at 1,000 pods the parsed
            # podsMetric of the answer would be ~0.9 MB of objects held for nothing between reports
            try:
                kept = members_without(answer, "status", ANSWER_MEMBERS_NEEDED)
            except MembersError as exc:
                self._written = None
                raise SinkError("update nodemetric %s status: the answer is not an object: %s"
                                % (self._node, exc)) from exc
            self._written = kept
            self.last_spec = kept.get("spec") or {}
            return Outcome.WRITTEN
        raise SinkError("update nodemetric %s status: still conflicting after %d attempts"
                        % (self._node, CONFLICT_RETRIES))

    async def _current_or_created(self, new_object: Mapping[str, Any]) -> dict[str, Any]:
        from lightkube import ApiError

        try:
            current = dict(await self._client.get(self._node_metric, self._node))
            self.last_spec = current.get("spec") or {}
            return current
        except ApiError as exc:
            if status_code(exc) != 404:
                raise SinkError("get nodemetric %s: %s" % (self._node, exc)) from exc
        body = {key: value for key, value in new_object.items() if key != "status"}
        try:
            created = await self._client.create(self._node_metric(body))
            log.info("nodemetric_created", node=self._node)
            return dict(created)
        except ApiError as exc:
            if status_code(exc) == 409:  # someone created it first (the slo-controller)
                return dict(await self._client.get(self._node_metric, self._node))
            raise SinkError("create nodemetric %s: %s" % (self._node, exc)) from exc

    async def patch_annotations(self, annotations: Mapping[str, str]) -> Outcome:
        from lightkube import ApiError
        from lightkube.types import PatchType

        patch = {"metadata": {"annotations": dict(annotations)}}
        try:
            await self._client.patch(self._kcnr, self._node, patch, patch_type=PatchType.MERGE)
        except ApiError as exc:
            if status_code(exc) == 404:
                return Outcome.NOT_FOUND
            raise SinkError("patch customnoderesource %s: %s" % (self._node, exc)) from exc
        return Outcome.WRITTEN
