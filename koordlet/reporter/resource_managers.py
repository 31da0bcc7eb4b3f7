"""Which CPU and memory manager policies the node runs, and how many CPUs are held
exclusively by Guaranteed pods: what Katalyst reports beside the overcommit ratios.

Source by default: kubelet's own checkpoints, /var/lib/kubelet/cpu_manager_state
({"policyName": "static", "defaultCpuSet": "...", "entries": {pod uid: {container: cpuset}}})
and memory_manager_state ({"policyName": "Static", ...}). A missing file means that manager
is off ("none" / "None", as Katalyst's constants spell them). The ORM (issue 9) can provide
the same facts through the `ResourceManagers` protocol when it owns exclusive CPUs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Collection, Protocol

import structlog

from koordlet.reporter.overcommit import CPU_MANAGER_NONE, MEMORY_MANAGER_NONE
from system.cpuset import parse_cpuset
from system.errors import InvalidValue

log = structlog.get_logger(__name__)

KUBELET_ROOT = Path("/var/lib/kubelet")
CPU_STATE_FILE = "cpu_manager_state"
MEMORY_STATE_FILE = "memory_manager_state"


@dataclass(frozen=True, slots=True)
class ManagerFacts:
    cpu_manager_policy: str = CPU_MANAGER_NONE
    memory_manager_policy: str = MEMORY_MANAGER_NONE
    guaranteed_cpus: int = 0


class ResourceManagers(Protocol):
    def facts(self, pod_uids: Collection[str] | None) -> ManagerFacts:
        """The policies and the exclusive CPUs of the given pods (all pods when None).
        Blocking file IO is allowed: the caller runs it in a worker thread."""
        ...


class StateFileError(ValueError):
    """A kubelet state file is not the JSON kubelet writes."""


def parse_cpu_manager_state(text: str, pod_uids: Collection[str] | None) -> tuple[str, int]:
    """(policyName, number of distinct CPUs assigned to the pods' containers)."""
    policy, cpus = parse_cpu_assignments(text, pod_uids)
    return policy, len(cpus)


def parse_cpu_assignments(text: str, pod_uids: Collection[str] | None) -> tuple[str, frozenset[int]]:
    """(policyName, the CPUs assigned to the pods' containers)."""
    state = _load_state(text, CPU_STATE_FILE)
    entries = state.get("entries") or {}
    if not isinstance(entries, dict):
        raise StateFileError("cpu_manager_state entries is not an object")
    cpus: set[int] = set()
    for uid, containers in entries.items():
        if pod_uids is not None and uid not in pod_uids:
            continue
        if not isinstance(containers, dict):
            raise StateFileError("cpu_manager_state entries[%s] is not an object" % uid)
        for cpuset in containers.values():
            try:
                cpus |= parse_cpuset(str(cpuset))
            except InvalidValue as exc:
                raise StateFileError("cpu_manager_state entries[%s]: %s" % (uid, exc)) from None
    return state["policyName"], frozenset(cpus)


def parse_memory_manager_state(text: str) -> str:
    return _load_state(text, MEMORY_STATE_FILE)["policyName"]


def _load_state(text: str, name: str) -> dict:
    """A kubelet checkpoint: a JSON object with a string policyName."""
    try:
        state = json.loads(text)
    except ValueError as exc:
        raise StateFileError("%s is not JSON: %s" % (name, exc)) from None
    if not isinstance(state, dict) or not isinstance(state.get("policyName"), str):
        raise StateFileError("%s has no policyName" % name)
    return state


class KubeletStateFiles:
    """ResourceManagers read from kubelet's checkpoint files under `root`."""

    def __init__(self, root: Path = KUBELET_ROOT) -> None:
        self._root = root

    def facts(self, pod_uids: Collection[str] | None) -> ManagerFacts:
        cpu_policy, guaranteed = CPU_MANAGER_NONE, 0
        memory_policy = MEMORY_MANAGER_NONE
        cpu_text = _read(self._root / CPU_STATE_FILE)
        if cpu_text is not None:
            cpu_policy, guaranteed = parse_cpu_manager_state(cpu_text, pod_uids)
        memory_text = _read(self._root / MEMORY_STATE_FILE)
        if memory_text is not None:
            memory_policy = parse_memory_manager_state(memory_text)
        if cpu_policy == CPU_MANAGER_NONE:
            guaranteed = 0
        return ManagerFacts(cpu_policy, memory_policy, guaranteed)

    def exclusive_cpus(self) -> frozenset[int]:
        """The CPUs kubelet's CPU manager assigned to containers (none without the file)."""
        cpu_text = _read(self._root / CPU_STATE_FILE)
        if cpu_text is None:
            return frozenset()
        policy, cpus = parse_cpu_assignments(cpu_text, None)
        return frozenset() if policy == CPU_MANAGER_NONE else cpus


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except FileNotFoundError:
        return None
