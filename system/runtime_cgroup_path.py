"""The cgroup directory a runtime means by the cgroup parent / cgroups path it reports.

Runtimes hand these strings around (NRI PodSandbox.linux.cgroup_parent and
cgroups_path, Container.linux.cgroups_path, the OCI spec's linux.cgroupsPath)
in two spellings:

cgroupfs driver: a path, "/kubepods/burstable/pod<uid>/<id>";
systemd driver:  a slice, "kubepods-burstable-pod<uid_>.slice", or a
                 "slice:prefix:name" triple, "kubepods-besteffort-pod<uid_>.slice:cri-containerd:<id>",
                 which names the scope "<prefix>-<name>.scope" inside that slice.

systemd nests slices by their dashes: "a-b-c.slice" lives at
"a.slice/a-b.slice/a-b-c.slice". The result is relative to a controller's mount
point, as the resource executor takes it. Pure.
"""

from __future__ import annotations

from system.errors import InvalidValue

_SLICE = ".slice"
_ROOT_SLICE = "-.slice"


def expand_slice(name: str) -> str:
    """A systemd slice unit name -> its cgroup dir ("-.slice" is the root, "")."""
    if not name.endswith(_SLICE) or "/" in name:
        raise InvalidValue("not a systemd slice name: %r" % name)
    if name == _ROOT_SLICE:
        return ""
    stem = name[: -len(_SLICE)]
    parts = stem.split("-")
    if not stem or any(part == "" for part in parts):
        raise InvalidValue("malformed systemd slice name: %r" % name)
    dirs = ["-".join(parts[: i + 1]) + _SLICE for i in range(len(parts))]
    return "/".join(dirs)


def _systemd_triple(value: str) -> str:
    parent, prefix, name = value.split(":")
    if not name:
        raise InvalidValue("systemd cgroups path without a unit name: %r" % value)
    base = expand_slice(parent or "system.slice")
    if name.endswith(_SLICE):
        unit = name
    elif prefix:
        unit = "%s-%s.scope" % (prefix, name)
    else:
        unit = name + ".scope"
    if "/" in unit:
        raise InvalidValue("malformed systemd unit in %r" % value)
    return "%s/%s" % (base, unit) if base else unit


def cgroup_dir(value: str) -> str:
    """The directory (relative to a controller mount) a cgroup parent or cgroups path names.

    "" for "": the runtime did not say. InvalidValue for a string neither driver writes.
    """
    if not value:
        return ""
    if value.count(":") == 2:
        return _systemd_triple(value)
    if ":" in value:
        raise InvalidValue("not a cgroup path: %r" % value)
    if value.startswith("/"):
        parts = [part for part in value.split("/") if part]
        if any(part in (".", "..") for part in parts):
            raise InvalidValue("cgroup path with relative components: %r" % value)
        return "/".join(parts)
    if value.endswith(_SLICE) and "/" not in value:
        return expand_slice(value)
    raise InvalidValue("not a cgroup path: %r" % value)
