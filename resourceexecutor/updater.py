"""Updaters: one wanted value for one cgroup file, prepared once and reusable.

An `Updater` is built by `UpdaterFactory.new(resource_name, cgroup_dir, value)`.
The factory looks the resource up in system's registry, validates the value,
resolves the file's path for this host and formats the text the kernel will
read back, so the executor's hot path is a dict lookup and a string compare.
A value the validator refuses still yields an Updater, carrying the error as
`problem`, so a batch reports it as INVALID beside the others instead of
stopping; `new(..., strict=True)` raises instead.

The factory is keyed by resource name: each name maps to how a levelled update
merges it in pass one (see levelled_order).  The defaults come from the registry
(`CgroupResource.merge_for(version)`); paths come from `CgroupFiles.resolve` and
the read-back value from `CgroupResource.read_back` (page rounding).
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from resourceexecutor.levelled_order import MergeFn, larger_limit, union_cpuset
from system.cgroup_files import CgroupFiles, clean_cgroup_dir, join_file
from system.cgroup_resource import REGISTRY, CgroupResource, MergeKind, get_resource
from system.errors import NotSupported, SystemFileError

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
    """Merge rule per writable resource name and cgroup version, from the registry."""
    return MappingProxyType({
        name: MergeRule(v1=_BY_KIND[resource.merge_for(1)], v2=_BY_KIND[resource.merge_for(2)])
        for name, resource in REGISTRY.items() if resource.writable
    })


@dataclass(frozen=True, slots=True)
class ResourcePlan:
    """What the factory resolves once per resource on this host, shared by its updaters."""

    resource: CgroupResource
    version: int  # 0 in a refused updater's plan
    merge: MergeFn | None
    read_modify_write: bool
    root: str  # the hierarchy root ("" when refused)
    file: str  # the file name in a cgroup dir ("" when refused)


@dataclass(frozen=True, slots=True)
class Updater:
    """One wanted value for one cgroup file on this host.

    `text` is the wanted value as kernel text (for a field of a shared file,
    such as the period in v2 cpu.max, the text formatted without the file's
    current content: it identifies the value, and the write text is built at
    write time).  `canonical` is what reading the file back yields when it
    holds our value (shares survive a lossy v2 weight round trip this way).
    `problem` is set, and `text` is None, when the update cannot be attempted.
    What is the same for every updater of the resource (version, merge rule, hierarchy
    root, file name) is in the shared `plan`, and the file's path is made when asked
    (`path`): a daemon holds ~10 updaters a pod and reads or writes through few of them
    at a time. `name` and `key` stay fields: every batch reads them for every updater.
    """

    name: str
    cgroup_dir: str
    value: Any
    plan: ResourcePlan
    key: CacheKey  # the write cache keeps this very tuple as its key
    text: str | None
    canonical: Any
    problem: SystemFileError | None = None

    @property
    def resource(self) -> CgroupResource:
        return self.plan.resource

    @property
    def version(self) -> int:
        return self.plan.version

    @property
    def merge(self) -> MergeFn | None:
        return self.plan.merge

    @property
    def read_modify_write(self) -> bool:
        return self.plan.read_modify_write

    @property
    def path(self) -> str:
        """The file's path ("" for a refused updater)."""
        plan = self.plan
        return join_file(plan.root, self.cgroup_dir, plan.file) if plan.file else ""

    @property
    def wanted(self) -> str:
        """`text` of an updater without a problem (the only ones that reach a write)."""
        if self.text is None:
            raise ValueError("%s has no text to write: %s" % (self.name, self.problem))
        return self.text

    def format(self, value: Any, current_text: str | None = None) -> str:
        """Kernel text for another canonical value of this resource (merges, restores)."""
        plan = self.plan
        return plan.resource.format(value, plan.version, current_text)

    def parse(self, text: str) -> Any:
        plan = self.plan
        return plan.resource.parse(text, plan.version)


# How many formatted values the factory remembers per resource before starting afresh.
_VALUE_MEMO_LIMIT = 4096


class UpdaterFactory:
    """Builds updaters for one host.

    Resolves each resource once (version, hierarchy root, merge rule) and
    remembers recently formatted values (validated text and read-back value),
    so building an updater for a value seen before costs a few dict lookups.
    Not thread-safe: one owner, like the executor.
    """

    def __init__(self, files: CgroupFiles,
                 merge_rules: Mapping[str, MergeRule] | None = None,
                 page_size: int | None = None) -> None:
        self.files = files
        self.page_size = page_size if page_size is not None else os.sysconf("SC_PAGE_SIZE")
        self.merge_rules: Mapping[str, MergeRule] = (
            default_merge_rules() if merge_rules is None else MappingProxyType(dict(merge_rules)))
        self._plans: dict[str, ResourcePlan | SystemFileError] = {}
        self._formatted: dict[str, dict[tuple[type, Any], tuple[str, Any]]] = {}

    def new(self, resource: str | CgroupResource, cgroup_dir: str, value: Any, *,
            strict: bool = False) -> Updater:
        """An updater for `value` in `cgroup_dir` (relative to the hierarchy root).

        Raises NotSupported for a resource name the factory does not know (a
        programming error).  Any other refusal (validator, no file for this
        cgroup version, bad dir) is carried in `problem`, or raised when strict.
        """
        name = resource.name if isinstance(resource, CgroupResource) else resource
        plan = self._plans.get(name)
        if plan is None:
            plan = self._plan(resource)
        if isinstance(plan, SystemFileError):
            if strict:
                raise plan
            return self._refused(get_resource(resource), cgroup_dir, value, plan)
        try:
            cgroup_dir = clean_cgroup_dir(cgroup_dir)
            text, canonical = self._format(plan, value)
        except SystemFileError as exc:
            if strict:
                raise
            return self._refused(plan.resource, cgroup_dir, value, exc)
        return Updater(name=name, cgroup_dir=cgroup_dir, value=value, plan=plan, key=(name, cgroup_dir), text=text,
                       canonical=canonical)

    def _plan(self, resource: str | CgroupResource) -> ResourcePlan | SystemFileError:
        res = get_resource(resource)
        rule = self.merge_rules.get(res.name)
        if rule is None:
            raise NotSupported("no updater registered for resource %r" % res.name)
        plan: ResourcePlan | SystemFileError
        try:
            version, _, root, file = self.files.resolve_parts(res, "")
            plan = ResourcePlan(
                resource=res, version=version, merge=rule.for_version(version),
                read_modify_write=version == 2 and res.v2_read_modify_write, root=root, file=file)
        except SystemFileError as exc:
            plan = exc
        self._plans[res.name] = plan
        return plan

    def _format(self, plan: ResourcePlan, value: Any) -> tuple[str, Any]:
        memo = self._formatted.get(plan.resource.name)
        if memo is None:
            memo = self._formatted[plan.resource.name] = {}
        key = (type(value), value)  # 1, 1.0 and True are equal keys: keep them apart
        try:
            known = memo.get(key)
        except TypeError:  # unhashable (a set): format every time
            known, memo = None, None
        if known is not None:
            return known
        res = plan.resource
        res.validate(value)
        text = res.format(value, plan.version, None)
        canonical = res.read_back(res.parse(text, plan.version), self.page_size)
        formatted = (text, canonical)
        if memo is not None:
            if len(memo) >= _VALUE_MEMO_LIMIT:
                memo.clear()
            memo[key] = formatted
        return formatted

    def _refused(self, res: CgroupResource, cgroup_dir: str, value: Any,
                 problem: SystemFileError) -> Updater:
        plan = ResourcePlan(resource=res, version=0, merge=None, read_modify_write=False, root="", file="")
        return Updater(name=res.name, cgroup_dir=cgroup_dir, value=value, plan=plan, key=(res.name, cgroup_dir),
                       text=None, canonical=None, problem=problem)
