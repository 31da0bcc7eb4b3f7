"""Split Synchronize on the plugin side (protocols.md §3.5).

A runtime with NRI >= 0.7 may send its state in chunks: every chunk but the last
has `more=true` and must be answered `SynchronizeResponse{more: true}` with no
updates; the last chunk (`more=false`) is when the plugin sees the whole state
and may return updates. Pure: the stub feeds requests, this says what to do.
"""

from __future__ import annotations

from dataclasses import dataclass

from proto.nri.pkg.api.v1alpha1 import api_pb2 as api


@dataclass(frozen=True, slots=True)
class SyncSnapshot:
    """The runtime's complete state, once the last chunk has arrived."""

    pods: tuple[api.PodSandbox, ...]
    containers: tuple[api.Container, ...]
    chunks: int


class SyncCollector:
    """Accumulates chunks of one Synchronize sequence.

    `add(request)` returns None while more chunks are due (answer with
    `interim_response()`), and the full snapshot on the last chunk, after which
    the collector is empty again (a reconnect starts a fresh sequence)."""

    __slots__ = ("_pods", "_containers", "_chunks")

    def __init__(self) -> None:
        self._pods: list[api.PodSandbox] = []
        self._containers: list[api.Container] = []
        self._chunks = 0

    @property
    def pending_chunks(self) -> int:
        return self._chunks

    def reset(self) -> None:
        self._pods.clear()
        self._containers.clear()
        self._chunks = 0

    def add(self, request: api.SynchronizeRequest) -> SyncSnapshot | None:
        self._pods.extend(request.pods)
        self._containers.extend(request.containers)
        self._chunks += 1
        if request.more:
            return None
        snapshot = SyncSnapshot(tuple(self._pods), tuple(self._containers), self._chunks)
        self.reset()
        return snapshot

    @staticmethod
    def interim_response() -> api.SynchronizeResponse:
        return api.SynchronizeResponse(more=True)
