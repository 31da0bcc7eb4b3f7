"""Where the NodeSLO comes from: a file in standalone mode, the cluster object later.

`NodeSLOSource` is what readers (QoS strategies, the GroupIdentity hook) depend on:
`current()` is always a valid NodeSLO (koordlet's defaults until a document is
accepted) and `subscribe()` tells about each accepted change.

`NodeSLOFile` watches `--node-slo-config FILE` (YAML or JSON, a bare spec or a whole
NodeSLO object) by polling its identity (inode, size, mtime) on the loop. An invalid
document is refused with an error naming the field; the last good NodeSLO stays in force.
Kubernetes mode (watching the NodeSLO named after the node) will be another
`NodeSLOSource` built on the API client the reports helper brings.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, Callable, Protocol

import structlog
import yaml

from koordlet.statesinformer.node_slo import NodeSLO, NodeSLOError, parse_node_slo_spec, spec_of_document

log = structlog.get_logger(__name__)

NodeSLOListener = Callable[[NodeSLO], None]


class NodeSLOSource(Protocol):
    def current(self) -> NodeSLO: ...

    def subscribe(self, listener: NodeSLOListener) -> Callable[[], None]: ...


class StaticNodeSLO:
    """A NodeSLO set by hand (tests, and the daemon when no source is configured)."""

    def __init__(self, slo: NodeSLO | None = None) -> None:
        self._slo = slo if slo is not None else NodeSLO()
        self._listeners: list[NodeSLOListener] = []

    def current(self) -> NodeSLO:
        return self._slo

    def subscribe(self, listener: NodeSLOListener) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def set(self, slo: NodeSLO) -> None:
        if slo == self._slo:
            return
        self._slo = slo
        for listener in list(self._listeners):
            try:
                listener(slo)
            except Exception:  # a listener's bug must not stop the others
                log.exception("node_slo_listener_failed")


def load_node_slo_text(text: str, source: str, json_only: bool = False) -> NodeSLO:
    """Parse a document; raises NodeSLOError (field "document" when it is not YAML/JSON)."""
    try:
        data: Any = json.loads(text) if json_only else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise NodeSLOError("document", f"{source} is not valid {'JSON' if json_only else 'YAML'}: {exc}") from None
    return parse_node_slo_spec(spec_of_document(data))


def _identity(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


class NodeSLOFile(StaticNodeSLO):
    """A daemon module: the NodeSLO of a file, reloaded when the file changes."""

    name = "nodeslo-file"

    def __init__(self, path: Path, poll_interval: float = 1.0) -> None:
        super().__init__()
        self.path = path
        self.poll_interval = poll_interval
        self.last_error: str | None = None
        self._seen: tuple[int, int, int] | None = None
        self._task: asyncio.Task[None] | None = None

    def reload(self) -> bool:
        """Read the file now. True when a new document was accepted."""
        identity = _identity(self.path)
        self._seen = identity
        try:
            text = self.path.read_text()
        except OSError as exc:
            return self._refuse("document", f"cannot read {self.path}: {exc.strerror or exc}")
        try:
            slo = load_node_slo_text(text, str(self.path), json_only=self.path.suffix == ".json")
        except NodeSLOError as exc:
            return self._refuse(exc.field, str(exc))
        self.last_error = None
        changed = slo != self.current()
        log.info("node_slo_loaded", path=str(self.path), changed=changed)
        self.set(slo)
        return changed

    def _refuse(self, field_path: str, message: str) -> bool:
        self.last_error = message
        log.error("node_slo_rejected", path=str(self.path), field=field_path, error=message,
                  kept="last good NodeSLO")
        return False

    def poll(self) -> bool:
        """Reload when the file's identity changed since the last read."""
        if _identity(self.path) == self._seen:
            return False
        return self.reload()

    async def start(self) -> None:
        self.reload()
        self._task = asyncio.get_running_loop().create_task(self._watch(), name="nodeslo-file")

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self.poll_interval)
            self.poll()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None

    def ready(self) -> bool:
        return True

