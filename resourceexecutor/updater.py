"""Updaters: one wanted value for one cgroup file, prepared once and reusable.

An `Updater` is built by `UpdaterFactory.new(resource_name, cgroup_dir, value)`.
The factory looks the resource up in system's registry, validates the value,
resolves the file's path for this host and formats the text the kernel will
read back, so the executor's hot path is a dict lookup and a string compare.
A value the validator refuses still yields an Updater, carrying the error as
`problem`, so a batch reports it as INVALID beside the others instead of
stopping; `new(..., strict=True)` raises instead.

The factory is keyed by resource name: each name maps to how a levelled update
merges it in pass one (see levelled_order).  The defaults follow the registry's
MergeKind, plus cpu.cfs_quota_us on cgroup v1, where the kernel refuses a child
quota above its parent's (EINVAL), so it must be levelled like a limit.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from system.cgroup_files import CgroupFiles, clean_cgroup_dir
from system.cgroup_resource import REGISTRY, CgroupResource, MergeKind, get_resource
from system.errors import InvalidValue, NotSupported, SystemFileError

from resourceexecutor.levelled_order import MergeFn, larger_limit, union_cpuset

CacheKey = tuple[str, str]  # (resource name, clean cgroup dir)


@dataclass(frozen=True, slots=True)
class MergeRule:
    """How a resource is merged in a levelled pass one, per cgroup version (None: plain)."""

    v1: MergeFn | None = None
    v2: MergeFn | None = None

    def for_version(self, version: int) -> MergeFn | None:
        return self.v1 if version == 1 else self.v2


_BY_KIND: Mapping[MergeKind, MergeFn | None] = MappingProxyType({
    MergeKind.NONE: None,
    MergeKind.UNION_CPUSET: union_cpuset,
    MergeKind.MAX_VALUE: larger_limit,
})


def default_merge_rules() -> Mapping[str, MergeRule]:
    """Merge rule per writable resource name, from the registry plus v1 cfs quota."""
    rules: dict[str, MergeRule] = {}
    for name, resource in REGISTRY.items():
        if not resource.writable:
            continue
        merge = _BY_KIND[resource.merge]
        rules[name] = MergeRule(v1=merge, v2=merge)
    # v1 refuses a child quota above the parent's; v2 cpu.max only clips, any order works.
    rules["cpu.cfs_quota_us"] = MergeRule(v1=larger_limit, v2=None)
    return MappingProxyType(rules)


@dataclass(frozen=True, slots=True)
class Updater:
    """One wanted value for one cgroup file on this host.

    `text` is the wanted value as kernel text (for a field of a shared file,
    such as the period in v2 cpu.max, the text formatted without the file's
    current content: it identifies the value, and the write text is built at
    write time).  `canonical` is what reading the file back yields when it
    holds our value (shares survive a lossy v2 weight round trip this way).
    `problem` is set, and `text` is None, when the update cannot be attempted.
    """

    name: str
    cgroup_dir: str
    value: Any
    resource: CgroupResource
    version: int
    path: str
    key: CacheKey
    text: str | None
    canonical: Any
    merge: MergeFn | None
    read_modify_write: bool
    problem: SystemFileError | None = None

    def format(self, value: Any, current_text: str | None = None) -> str:
        """Kernel text for another canonical value of this resource (merges, restores)."""
        return self.resource.format(value, self.version, current_text)

    def parse(self, text: str) -> Any:
        return self.resource.parse(text, self.version)


class UpdaterFactory:
    """Builds updaters for one host.  Holds no mutable state after construction."""

    def __init__(self, files: CgroupFiles,
                 merge_rules: Mapping[str, MergeRule] | None = None) -> None:
        self.files = files
        self.merge_rules: Mapping[str, MergeRule] = (
            default_merge_rules() if merge_rules is None else MappingProxyType(dict(merge_rules)))

    def new(self, resource: str | CgroupResource, cgroup_dir: str, value: Any, *,
            strict: bool = False) -> Updater:
        """An updater for `value` in `cgroup_dir` (relative to the hierarchy root).

        Raises NotSupported for a resource name the factory does not know (a
        programming error).  Any other refusal (validator, no file for this
        cgroup version, bad dir) is carried in `problem`, or raised when strict.
        """
        res = get_resource(resource)
        rule = self.merge_rules.get(res.name)
        if rule is None:
            raise NotSupported("no updater registered for resource %r" % res.name)
        try:
            clean_dir = clean_cgroup_dir(cgroup_dir)
        except InvalidValue as exc:
            if strict:
                raise
            clean_dir = cgroup_dir
            return self._refused(res, clean_dir, value, exc)
        try:
            version = self.files.version_for(res)
            path = str(self.files.path(res, clean_dir))
            res.validate(value)
            text = res.format(value, version, None)
            canonical = res.parse(text, version)
        except SystemFileError as exc:
            if strict:
                raise
            return self._refused(res, clean_dir, value, exc)
        return Updater(
            name=res.name, cgroup_dir=clean_dir, value=value, resource=res, version=version,
            path=path, key=(res.name, clean_dir), text=text, canonical=canonical,
            merge=rule.for_version(version),
            read_modify_write=version == 2 and res.v2_read_modify_write,
        )

    def _refused(self, res: CgroupResource, cgroup_dir: str, value: Any,
                 problem: SystemFileError) -> Updater:
        return Updater(
            name=res.name, cgroup_dir=cgroup_dir, value=value, resource=res, version=0,
            path="", key=(res.name, cgroup_dir), text=None, canonical=None, merge=None,
            read_modify_write=False, problem=problem,
        )
