"""Where the NodeSLO comes from: a file in standalone mode, the cluster object later.

`NodeSLOSource` is what readers (QoS strategies, the GroupIdentity hook) depend on:
`current()` is always a valid NodeSLO (koordlet's defaults until a document is
accepted) and `subscribe()` tells about each accepted change.

`ValidatedNodeSLO.apply(document)` takes a NodeSLO object or a bare spec: an invalid one
is refused with an error naming the field and the last good NodeSLO stays in force.
`NodeSLOFile` feeds it from `--node-slo-config FILE` (YAML or JSON), polling the file's
identity (inode, size, mtime) on the loop; `NodeSLOWatch` (node_slo_watch.py) feeds the
same `apply` with the node's NodeSLO object in Kubernetes mode.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, Callable, Protocol

import structlog

from koordlet.config import defaults, safe_yaml
from koordlet.config.reading import FileRefused, bounded, read_text_file
from koordlet.metrics.client import CollectorRegistry, Counter
from koordlet.slo.node_slo import NodeSLO, NodeSLOError
from koordlet.slo.spec import parse_node_slo_spec, spec_of_document
from koordlet.util.board import Board
from koordlet.util.periodic import FirstRun, Periodic

log = structlog.get_logger(__name__)

NodeSLOListener = Callable[[NodeSLO], None]


class NodeSLOSource(Protocol):
    def current(self) -> NodeSLO: ...

    def in_force(self) -> bool:
        """Whether a NodeSLO was given or accepted (False: koordlet's defaults only)."""
        ...

    def subscribe(self, listener: NodeSLOListener) -> Callable[[], None]: ...


class StaticNodeSLO:
    """A NodeSLO set by hand (tests, and the daemon when no source is configured)."""

    def __init__(self, slo: NodeSLO | None = None) -> None:
        self._board: Board[NodeSLO] = Board("nodeslo", slo if slo is not None else NodeSLO())
        self._in_force = slo is not None

    def current(self) -> NodeSLO:
        return self._board.current()

    def in_force(self) -> bool:
        return self._in_force

    def subscribe(self, listener: NodeSLOListener) -> Callable[[], None]:
        return self._board.subscribe(listener)

    def set(self, slo: NodeSLO) -> None:
        self._in_force = True
        self._board.publish(slo)


def parse_node_slo_text(text: str, origin: str, json_only: bool = False) -> Any:
    """YAML (or JSON) text to data; NodeSLOError (field "document") when it is neither, when
    its aliases would expand it beyond a bound, or when it is empty (an empty document is
    a mistake, not "every default": the last good NodeSLO stays)."""
    try:
        data = json.loads(text) if json_only else safe_yaml.load(text)
    except (ValueError, RecursionError) as exc:
        kind = "JSON" if json_only else "YAML"
        raise NodeSLOError("document", bounded(f"{origin} is not valid {kind}: {exc}")) from None
    if data is None:
        raise NodeSLOError("document", f"{origin} is empty (no NodeSLO in it)")
    return data


def read_node_slo_file(path: Path) -> Any:
    """The document in the file (a regular file of at most NODE_SLO_MAX_BYTES, UTF-8),
    parsed; NodeSLOError naming why not. Blocking: run it off the event loop."""
    try:
        text = read_text_file(path, defaults.NODE_SLO_MAX_BYTES)
    except FileRefused as exc:
        raise NodeSLOError("document", str(exc)) from None
    return parse_node_slo_text(text, str(path), json_only=path.suffix == ".json")


class ValidatedNodeSLO(StaticNodeSLO):
    """A NodeSLO fed whole documents: a refused one leaves the last good NodeSLO in force.

    The file source feeds it, and in Kubernetes mode the node's NodeSLO object
    (`apply(obj, origin="NodeSLO/<node>")`)."""

    def __init__(self) -> None:
        super().__init__()
        self.last_error: str | None = None
        self.refusals = 0
        self._refused: Counter | None = None

    def source(self) -> str:
        """Where the NodeSLO in force comes from, for people (GET /api/v1/nodeslo)."""
        return "defaults"

    def count_refusals_on(self, registry: CollectorRegistry) -> None:
        """koordlet_node_slo_refused_total on the daemon's registry."""
        self._refused = Counter("koordlet_node_slo_refused", "NodeSLO documents refused (the last good one stayed).",
                                registry=registry)

    def apply(self, document: Any, origin: str) -> bool:
        """Validate a NodeSLO object or bare spec; True when it changed the NodeSLO in force."""
        try:
            slo = parse_node_slo_spec(spec_of_document(document))
        except NodeSLOError as exc:
            return self.refuse(exc, origin)
        self.last_error = None
        changed = slo != self.current()
        log.info("node_slo_loaded", origin=origin, changed=changed)
        self.set(slo)
        return changed

    def refuse(self, error: NodeSLOError, origin: str) -> bool:
        self.last_error = bounded(str(error), defaults.NODE_SLO_ERROR_CHARS)
        self.refusals += 1
        if self._refused is not None:
            self._refused.inc()
        log.error("node_slo_rejected", origin=origin, field=bounded(error.field), error=self.last_error,
                  kept="last good NodeSLO")
        return False


def _identity(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


class NodeSLOFile(ValidatedNodeSLO):
    """A daemon module: the NodeSLO of a file, reloaded when the file changes."""

    name = "nodeslo-file"

    def __init__(self, path: Path, poll_interval: float = 1.0) -> None:
        super().__init__()
        self.path = path
        self.poll_interval = poll_interval
        self._seen: tuple[int, int, int] | None = None
        self._watch = Periodic("nodeslo-file", self._poll_round, poll_interval, first_run=FirstRun.AFTER_INTERVAL,
                               event="node_slo_poll_failed")

    async def reload(self) -> bool:
        """Read the file now (read and parsed in a worker thread). True when a new document
        was accepted."""
        self._seen = _identity(self.path)
        origin = str(self.path)
        try:
            data = await asyncio.to_thread(read_node_slo_file, self.path)
        except NodeSLOError as exc:
            return self.refuse(exc, origin)
        return self.apply(data, origin)

    async def poll(self) -> bool:
        """Reload when the file's identity changed since the last read."""
        if _identity(self.path) == self._seen:
            return False
        return await self.reload()

    def source(self) -> str:
        return "file %s" % self.path

    async def _poll_round(self) -> None:
        await self.poll()

    async def start(self) -> None:
        await self.reload()
        self._watch.start()

    def reread(self) -> None:
        """Read the file again at once, changed or not (SIGHUP)."""
        self._seen = None
        self._watch.wake()

    async def stop(self) -> None:
        await self._watch.stop()

    def ready(self) -> bool:
        return self._watch.alive()
