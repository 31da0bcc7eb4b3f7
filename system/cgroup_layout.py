"""Where kubelet and the runtimes put pod and container cgroups, both drivers.

cgroupfs driver::

    kubepods/pod<uid>                              guaranteed
    kubepods/burstable/pod<uid>/<container id>     burstable ("besteffort" likewise)

systemd driver (dashes in the uid become underscores; "-" nests slices)::

    kubepods.slice/kubepods-pod<uid_>.slice
    kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_>.slice/
        cri-containerd-<id>.scope | docker-<id>.scope | crio-<id>.scope

All functions here are pure; ``system.cgroup_driver.detect_host_driver`` looks at the host's tree.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

from system.errors import InvalidValue

KUBEPODS = "kubepods"


class QoSTier(Enum):
    GUARANTEED = "guaranteed"
    BURSTABLE = "burstable"
    BESTEFFORT = "besteffort"


class CgroupDriver(Enum):
    CGROUPFS = "cgroupfs"
    SYSTEMD = "systemd"


class Runtime(Enum):
    CONTAINERD = "containerd"
    DOCKER = "docker"
    CRIO = "crio"


# systemd scope prefix per runtime
_SCOPE_PREFIX = {
    Runtime.CONTAINERD: "cri-containerd-",
    Runtime.DOCKER: "docker-",
    Runtime.CRIO: "crio-",
}
# cgroupfs dir prefix per runtime (containerd and docker use the bare id)
_CGROUPFS_PREFIX = {Runtime.CONTAINERD: "", Runtime.DOCKER: "", Runtime.CRIO: "crio-"}

_UID_RE = re.compile(r"^[0-9A-Za-z][0-9A-Za-z_-]*$")
_ID_RE = re.compile(r"^[0-9A-Za-z][0-9A-Za-z._]*$")


@dataclass(frozen=True, slots=True)
class CgroupPathInfo:
    """What a cgroup path says about itself."""

    driver: CgroupDriver
    tier: QoSTier | None = None  # None: the kubepods root itself
    pod_uid: str | None = None  # with dashes, as the API server spells it
    container_id: str | None = None
    runtime: Runtime | None = None  # known only from a systemd scope or "crio-" prefix


def _check_uid(uid: str) -> str:
    if not _UID_RE.match(uid or ""):
        raise InvalidValue("bad pod uid %r" % uid)
    return uid


def _check_id(container_id: str) -> str:
    if not _ID_RE.match(container_id or ""):
        raise InvalidValue("bad container id %r" % container_id)
    return container_id


def _runtime(runtime: Runtime | str) -> Runtime:
    try:
        return runtime if isinstance(runtime, Runtime) else Runtime(runtime)
    except ValueError:
        raise InvalidValue("unknown runtime %r" % runtime) from None


def kubepods_dir(driver: CgroupDriver) -> str:
    return "kubepods.slice" if driver is CgroupDriver.SYSTEMD else KUBEPODS


def qos_dir(driver: CgroupDriver, tier: QoSTier) -> str:
    """The QoS tier's cgroup ("kubepods" itself for guaranteed)."""
    root = kubepods_dir(driver)
    if tier is QoSTier.GUARANTEED:
        return root
    if driver is CgroupDriver.SYSTEMD:
        return "%s/kubepods-%s.slice" % (root, tier.value)
    return "%s/%s" % (root, tier.value)


def pod_dir(driver: CgroupDriver, tier: QoSTier, uid: str) -> str:
    _check_uid(uid)
    parent = qos_dir(driver, tier)
    if driver is CgroupDriver.SYSTEMD:
        escaped = uid.replace("-", "_")
        slice_prefix = "kubepods" if tier is QoSTier.GUARANTEED else "kubepods-%s" % tier.value
        return "%s/%s-pod%s.slice" % (parent, slice_prefix, escaped)
    return "%s/pod%s" % (parent, uid)


def container_dir(
    driver: CgroupDriver,
    tier: QoSTier,
    uid: str,
    container_id: str,
    runtime: Runtime | str = Runtime.CONTAINERD,
) -> str:
    _check_id(container_id)
    rt = _runtime(runtime)
    parent = pod_dir(driver, tier, uid)
    if driver is CgroupDriver.SYSTEMD:
        return "%s/%s%s.scope" % (parent, _SCOPE_PREFIX[rt], container_id)
    return "%s/%s%s" % (parent, _CGROUPFS_PREFIX[rt], container_id)


def _parse_systemd(parts: list[str]) -> CgroupPathInfo:
    driver = CgroupDriver.SYSTEMD
    rest = parts[1:]
    if not rest:
        return CgroupPathInfo(driver)
    tier = QoSTier.GUARANTEED
    prefix = "kubepods-"
    if rest[0] in ("kubepods-burstable.slice", "kubepods-besteffort.slice"):
        tier = QoSTier(rest[0][len("kubepods-"):-len(".slice")])
        prefix = "kubepods-%s-" % tier.value
        rest = rest[1:]
        if not rest:
            return CgroupPathInfo(driver, tier)
    pod = rest[0]
    if not (pod.startswith(prefix + "pod") and pod.endswith(".slice")):
        raise InvalidValue("not a pod slice: %r" % pod)
    uid = _check_uid(pod[len(prefix) + 3:-len(".slice")].replace("_", "-"))
    rest = rest[1:]
    if not rest:
        return CgroupPathInfo(driver, tier, uid)
    scope = rest[0]
    if len(rest) > 1 or not scope.endswith(".scope"):
        raise InvalidValue("not a container scope: %r" % "/".join(rest))
    for rt, scope_prefix in _SCOPE_PREFIX.items():
        if scope.startswith(scope_prefix):
            cid = _check_id(scope[len(scope_prefix):-len(".scope")])
            return CgroupPathInfo(driver, tier, uid, cid, rt)
    raise InvalidValue("unknown container scope %r" % scope)


def _parse_cgroupfs(parts: list[str]) -> CgroupPathInfo:
    driver = CgroupDriver.CGROUPFS
    rest = parts[1:]
    if not rest:
        return CgroupPathInfo(driver)
    tier = QoSTier.GUARANTEED
    if rest[0] in ("burstable", "besteffort"):
        tier = QoSTier(rest[0])
        rest = rest[1:]
        if not rest:
            return CgroupPathInfo(driver, tier)
    if not rest[0].startswith("pod"):
        raise InvalidValue("not a pod dir: %r" % rest[0])
    uid = _check_uid(rest[0][3:])
    rest = rest[1:]
    if not rest:
        return CgroupPathInfo(driver, tier, uid)
    if len(rest) > 1:
        raise InvalidValue("too deep below a pod: %r" % "/".join(rest))
    name = rest[0]
    runtime = None
    if name.startswith("crio-"):
        runtime, name = Runtime.CRIO, name[len("crio-"):]
    return CgroupPathInfo(driver, tier, uid, _check_id(name), runtime)


def parse_cgroup_path(path: str) -> CgroupPathInfo:
    """Read (driver, tier, pod uid, container id) back from a cgroup path.

    Accepts relative dirs, /proc/<pid>/cgroup paths and full mount paths: the path is read
    from its "kubepods" / "kubepods.slice" component on. InvalidValue when the path is not
    below kubepods or does not follow either layout.
    """
    parts = [p for p in path.split("/") if p]
    for index, part in enumerate(parts):
        if part == "kubepods.slice":
            return _parse_systemd(parts[index:])
        if part == KUBEPODS:
            return _parse_cgroupfs(parts[index:])
    raise InvalidValue("not a kubepods cgroup path: %r" % path)


def driver_from_names(names_at_root: Iterable[str]) -> CgroupDriver | None:
    """The driver whose kubepods dir is among the names found at a hierarchy's root."""
    names = frozenset(names_at_root)
    if "kubepods.slice" in names:
        return CgroupDriver.SYSTEMD
    if KUBEPODS in names:
        return CgroupDriver.CGROUPFS
    return None
