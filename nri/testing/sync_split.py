"""How a runtime splits Synchronize into chunks (protocols.md §3.5), pure.

NRI >= 0.7: try everything in one message; if the sender refuses it as
oversized, scale the objects per message by min(0.9, max/rejected) and retry,
with a floor of 8 objects (4 pods + 4 containers); below that, give up.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from proto.nri.pkg.api.v1alpha1 import api_pb2 as api

MIN_OBJECTS_PER_MESSAGE = 8


class SplitSyncFailed(Exception):
    """The state cannot be sent even in the smallest chunks."""

    def __init__(self) -> None:
        super().__init__("failed to synchronize plugin with split messages")


def shrink_objects_per_message(pods: int, containers: int, rejected_length: int, max_length: int) -> tuple[int, int]:
    """New (pods, containers) per message after a message of `rejected_length`
    bytes was refused with limit `max_length`."""
    if pods + containers <= MIN_OBJECTS_PER_MESSAGE:
        raise SplitSyncFailed()
    if rejected_length <= 0 or max_length <= 0 or rejected_length <= max_length:
        raise SplitSyncFailed()
    factor = min(0.9, max_length / rejected_length)
    pods = int(pods * factor)
    containers = int(containers * factor)
    if pods + containers < MIN_OBJECTS_PER_MESSAGE:
        pods = containers = MIN_OBJECTS_PER_MESSAGE // 2
    return pods, containers


@dataclass(frozen=True, slots=True)
class SyncChunk:
    request: api.SynchronizeRequest
    pods: int
    containers: int


def plan_sync_chunks(
    pods: Sequence[api.PodSandbox],
    containers: Sequence[api.Container],
    max_length: int,
    split_supported: bool = True,
) -> list[SyncChunk]:
    """The messages a runtime sends, in order, when each message's payload may be
    at most `max_length` bytes. Without split support (NRI 0.6) there is always
    exactly one message, whatever its size."""
    if not split_supported:
        req = api.SynchronizeRequest(pods=pods, containers=containers)
        return [SyncChunk(req, len(pods), len(containers))]
    pods_per, ctrs_per = len(pods), len(containers)
    pod_rest, ctr_rest = list(pods), list(containers)
    chunks: list[SyncChunk] = []
    while True:
        more = len(pod_rest) > pods_per or len(ctr_rest) > ctrs_per
        req = api.SynchronizeRequest(pods=pod_rest[:pods_per], containers=ctr_rest[:ctrs_per], more=more)
        size = req.ByteSize()
        if size > max_length:
            pods_per, ctrs_per = shrink_objects_per_message(pods_per, ctrs_per, size, max_length)
            continue
        chunks.append(SyncChunk(req, len(req.pods), len(req.containers)))
        if not more:
            return chunks
        pod_rest, ctr_rest = pod_rest[pods_per:], ctr_rest[ctrs_per:]
        pods_per = min(pods_per, len(pod_rest))
        ctrs_per = min(ctrs_per, len(ctr_rest))
        if pods_per == 0 and ctrs_per == 0:
            # Scaling can round one kind down to zero; never send empty chunks forever.
            pods_per = min(len(pod_rest), MIN_OBJECTS_PER_MESSAGE // 2)
            ctrs_per = min(len(ctr_rest), MIN_OBJECTS_PER_MESSAGE // 2)
