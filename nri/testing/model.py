"""Apply plugin adjustments and updates to a model container, as a runtime does.

Pure functions over protobuf messages (they mutate the container they are
given; callers pass a copy). Semantics from protocols.md §3.3 and §3.7: the
`-` removal markers, the first plugin to set a field owns it and a second
plugin setting it fails the creation, updates merge into linux.resources.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from proto.nri.pkg.api.v1alpha1 import api_pb2 as api


class ModelError(Exception):
    """An adjustment the runtime refuses."""


class OwnershipConflict(ModelError):
    """Two plugins set the same field of one container."""


@dataclass(slots=True)
class OwnershipLedger:
    """Which plugin claimed which field of which container (containerd's
    OwningPlugins). Keys are (container id, field name[, entry key])."""

    owners: dict[tuple[str, ...], str] = field(default_factory=dict)

    def claim(self, key: tuple[str, ...], plugin: str) -> None:
        owner = self.owners.get(key)
        if owner is not None and owner != plugin:
            raise OwnershipConflict('plugins "%s" and "%s" both tried to set %s' % (owner, plugin, key[1]))
        self.owners[key] = plugin

    def release(self, key: tuple[str, ...]) -> None:
        self.owners.pop(key, None)


Claim = Callable[..., None]


def _claimer(ledger: OwnershipLedger | None, container_id: str, plugin: str) -> tuple[Claim, Claim]:
    def claim(name: str, *entry: str) -> None:
        if ledger is not None:
            ledger.claim((container_id, name, *entry), plugin)

    def release(name: str, *entry: str) -> None:
        if ledger is not None:
            ledger.release((container_id, name, *entry))

    return claim, release


_MEMORY_FIELDS = (
    ("limit", "MemLimit"),
    ("reservation", "MemReservation"),
    ("swap", "MemSwapLimit"),
    ("kernel", "MemKernelLimit"),
    ("kernel_tcp", "MemTCPLimit"),
    ("swappiness", "MemSwappiness"),
    ("disable_oom_killer", "MemDisableOomKiller"),
    ("use_hierarchy", "MemUseHierarchy"),
)
_CPU_OPTIONAL_FIELDS = (
    ("shares", "CPUShares"),
    ("quota", "CPUQuota"),
    ("period", "CPUPeriod"),
    ("realtime_runtime", "CPURealtimeRuntime"),
    ("realtime_period", "CPURealtimePeriod"),
)


def merge_resources(target: api.LinuxResources, src: api.LinuxResources, claim: Claim | None = None) -> None:
    """Copy every field `src` sets into `target` (wrappers count when present)."""
    mark = claim or (lambda *a: None)
    if src.HasField("memory"):
        for name, owner_field in _MEMORY_FIELDS:
            if src.memory.HasField(name):
                mark(owner_field)
                getattr(target.memory, name).CopyFrom(getattr(src.memory, name))
    if src.HasField("cpu"):
        for name, owner_field in _CPU_OPTIONAL_FIELDS:
            if src.cpu.HasField(name):
                mark(owner_field)
                getattr(target.cpu, name).CopyFrom(getattr(src.cpu, name))
        if src.cpu.cpus:
            mark("CPUSetCPUs")
            target.cpu.cpus = src.cpu.cpus
        if src.cpu.mems:
            mark("CPUSetMems")
            target.cpu.mems = src.cpu.mems
    if src.hugepage_limits:
        mark("HugepageLimits")
        by_size = {h.page_size: h for h in target.hugepage_limits}
        for limit in src.hugepage_limits:
            by_size[limit.page_size] = limit
        del target.hugepage_limits[:]
        target.hugepage_limits.extend(by_size.values())
    if src.HasField("blockio_class"):
        mark("BlockioClass")
        target.blockio_class.CopyFrom(src.blockio_class)
    if src.HasField("rdt_class"):
        mark("RdtClass")
        target.rdt_class.CopyFrom(src.rdt_class)
    for key, value in src.unified.items():
        mark("CgroupsUnified", key)
        target.unified[key] = value
    if src.devices:
        target.devices.extend(src.devices)
    if src.HasField("pids"):
        mark("PidsLimit")
        target.pids.CopyFrom(src.pids)


def _env_map(env: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in env:
        key, _, value = item.partition("=")
        out[key] = value
    return out


def apply_adjustment(
    container: api.Container,
    adjust: api.ContainerAdjustment,
    plugin: str,
    ledger: OwnershipLedger | None = None,
) -> None:
    """Apply one plugin's CreateContainer adjustment to `container` in place."""
    claim, release = _claimer(ledger, container.id, plugin)

    for key, value in adjust.annotations.items():
        if key.startswith("-"):
            release("Annotations", key[1:])
            container.annotations.pop(key[1:], None)
        else:
            claim("Annotations", key)
            container.annotations[key] = value

    if adjust.mounts:
        mounts = {m.destination: m for m in container.mounts}
        for mount in adjust.mounts:
            if mount.destination.startswith("-"):
                release("Mounts", mount.destination[1:])
                mounts.pop(mount.destination[1:], None)
            else:
                claim("Mounts", mount.destination)
                mounts[mount.destination] = mount
        del container.mounts[:]
        container.mounts.extend(mounts.values())

    if adjust.env:
        env = _env_map(list(container.env))
        for kv in adjust.env:
            if kv.key.startswith("-"):
                release("Env", kv.key[1:])
                env.pop(kv.key[1:], None)
            else:
                claim("Env", kv.key)
                env[kv.key] = kv.value
        del container.env[:]
        container.env.extend(k + "=" + v for k, v in env.items())

    if adjust.HasField("hooks"):
        for name in ("prestart", "create_runtime", "create_container", "start_container", "poststart", "poststop"):
            getattr(container.hooks, name).extend(getattr(adjust.hooks, name))

    if adjust.rlimits:
        claim("Rlimits")
        by_type = {r.type: r for r in container.rlimits}
        for rlimit in adjust.rlimits:
            by_type[rlimit.type] = rlimit
        del container.rlimits[:]
        container.rlimits.extend(by_type.values())

    if adjust.CDI_devices:
        for device in adjust.CDI_devices:
            claim("CdiDevices", device.name)
        container.CDI_devices.extend(adjust.CDI_devices)

    if adjust.args:
        claim("Args")
        del container.args[:]
        container.args.extend(adjust.args)

    if adjust.HasField("linux"):
        _apply_linux(container, adjust.linux, claim, release)


def _apply_linux(container: api.Container, linux: api.LinuxContainerAdjustment, claim: Claim, release: Claim) -> None:
    target = container.linux
    if linux.devices:
        devices = {d.path: d for d in target.devices}
        for device in linux.devices:
            if device.path.startswith("-"):
                release("Devices", device.path[1:])
                devices.pop(device.path[1:], None)
            else:
                claim("Devices", device.path)
                devices[device.path] = device
        del target.devices[:]
        target.devices.extend(devices.values())
    if linux.HasField("resources"):
        merge_resources(target.resources, linux.resources, claim)
    if linux.cgroups_path:
        claim("CgroupsPath")
        target.cgroups_path = linux.cgroups_path
    if linux.HasField("oom_score_adj"):
        claim("OomScoreAdj")
        target.oom_score_adj.CopyFrom(linux.oom_score_adj)
    if linux.HasField("io_priority"):
        claim("IoPriority")
        target.io_priority.CopyFrom(linux.io_priority)
    if linux.HasField("seccomp_policy"):
        claim("SeccompPolicy")
        target.seccomp_policy.CopyFrom(linux.seccomp_policy)
    if linux.namespaces:
        spaces = {n.type: n for n in target.namespaces}
        for ns in linux.namespaces:
            if ns.type.startswith("-"):
                release("Namespace", ns.type[1:])
                spaces.pop(ns.type[1:], None)
            else:
                claim("Namespace", ns.type)
                spaces[ns.type] = ns
        del target.namespaces[:]
        target.namespaces.extend(spaces.values())
    for key, value in linux.sysctl.items():
        if key.startswith("-"):
            release("Sysctl", key[1:])
            target.sysctl.pop(key[1:], None)
        else:
            claim("Sysctl", key)
            target.sysctl[key] = value
    if linux.HasField("scheduler"):
        claim("LinuxSched")
        target.scheduler.CopyFrom(linux.scheduler)
    if linux.HasField("rdt"):
        claim("RdtClosID")
        if linux.rdt.remove:
            target.ClearField("rdt")
        else:
            target.rdt.CopyFrom(linux.rdt)


def apply_update(container: api.Container, update: api.ContainerUpdate) -> None:
    """Apply a ContainerUpdate (resources only) to a running container's model."""
    if update.HasField("linux") and update.linux.HasField("resources"):
        merge_resources(container.linux.resources, update.linux.resources)


def merge_updates(updates: list[tuple[str, api.ContainerUpdate]]) -> dict[str, api.ContainerUpdate]:
    """Merge updates for the same container from several plugins; ignore_failure
    stays true only if every plugin asking for that container set it."""
    merged: dict[str, api.ContainerUpdate] = {}
    for _plugin, update in updates:
        current = merged.get(update.container_id)
        if current is None:
            current = api.ContainerUpdate(container_id=update.container_id, ignore_failure=update.ignore_failure)
            merged[update.container_id] = current
        else:
            current.ignore_failure = current.ignore_failure and update.ignore_failure
        if update.HasField("linux") and update.linux.HasField("resources"):
            merge_resources(current.linux.resources, update.linux.resources)
    return merged
