"""resctrl: LSR / LS / BE control groups with L3 CAT and MBA schemata; tasks follow pods
(koordlet resmanager/resctrl_reconcile.go and util/system/resctrl.go, v1.1).

The L3 mask covers ways [ceil(ways*start%), ceil(ways*end%)) of the root's cache bit
mask; MB lines carry mbaPercent. A class whose resctrlQOS is not enabled gets the whole
cache and full bandwidth. LSE pods share the LSR group; pods without a class go to LS.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Mapping

import structlog

from koordlet.apis.qos import KoordQoSClass
from koordlet.qosmanager.framework import QoSContext
from koordlet.qosmanager.pod_changes import PodChanges
from koordlet.slo.node_slo import ResctrlQOS
from koordlet.statesinformer.model import PodInfo
from resourceexecutor.resctrl_writer import ResctrlWriter
from system.errors import SystemFileError
from system.resctrl import ResctrlInfo, detect_resctrl, read_schemata

log = structlog.get_logger(__name__)

NAME = "resctrl"
GROUPS = ("LSR", "LS", "BE")
GROUP_OF: Mapping[KoordQoSClass, str] = {
    KoordQoSClass.LSE: "LSR", KoordQoSClass.LSR: "LSR", KoordQoSClass.LS: "LS",
    KoordQoSClass.NONE: "LS", KoordQoSClass.BE: "BE",
}
CLASS_OF_GROUP = {"LSR": KoordQoSClass.LSR, "LS": KoordQoSClass.LS, "BE": KoordQoSClass.BE}
WHOLE = ResctrlQOS()


def l3_mask(cbm_mask: int, start_percent: int, end_percent: int) -> int:
    """The cache ways a class may use, as a bit mask. ValueError for a non-contiguous root
    mask (every lower bit must be set) or percents outside 0 <= start < end <= 100."""
    if cbm_mask <= 0 or (cbm_mask + 1) & cbm_mask:
        raise ValueError("illegal cbm %x" % cbm_mask)
    if start_percent < 0 or end_percent > 100 or end_percent <= start_percent:
        raise ValueError("illegal l3 cat percent: start %d, end %d" % (start_percent, end_percent))
    ways = cbm_mask.bit_length()
    start_way = math.ceil(ways * start_percent / 100)
    end_way = math.ceil(ways * end_percent / 100)
    return (1 << end_way) - (1 << start_way)


def class_schemata(cbm_mask: int | None, l3_ids: Iterable[int], mb_ids: Iterable[int],
                   cfg: ResctrlQOS) -> dict[str, dict[int, str]]:
    out: dict[str, dict[int, str]] = {}
    l3 = sorted(l3_ids)
    if cbm_mask and l3:
        mask = "%x" % l3_mask(cbm_mask, cfg.cat_range_start_percent, cfg.cat_range_end_percent)
        out["L3"] = {domain: mask for domain in l3}
    mb = sorted(mb_ids)
    if mb:
        out["MB"] = {domain: str(cfg.mba_percent) for domain in mb}
    return out


@dataclass(slots=True)
class ResctrlQoS:
    interval: float = 1.0
    name: str = NAME
    gate: str = "RdtResctrl"
    info: ResctrlInfo | None = None
    # a task's children inherit its group, so new and changed pods (and a periodic full pass) suffice
    changes: PodChanges = field(default_factory=PodChanges)
    applied: bool = False  # some class had resctrlQOS on in an earlier round

    async def run(self, ctx: QoSContext) -> None:
        slo = ctx.slo()
        enabled = any(cfg is not None and cfg.enable for cfg in map(slo.resctrl_qos, CLASS_OF_GROUP.values()))
        if not enabled and not self.applied:
            return  # the gate is on by default (as koordlet's): nothing happens until a class asks
        self.applied = enabled  # after turning it off, one more pass gives every group the whole cache
        if self.info is None:
            self.info = detect_resctrl(ctx.host)
            if not self.info.usable:
                log.warning("resctrl_unavailable", mounted=self.info.mounted,
                            kernel_supports=self.info.kernel_supports)
        if not self.info.usable:
            return
        writer = ResctrlWriter(ctx.host)
        cfgs = {group: slo.resctrl_qos(CLASS_OF_GROUP[group]) or WHOLE for group in GROUPS}
        # groups and schemata are checked on a full pass (settings changed, or the resync
        # period went by, which repairs drift) like koordlet's cached executor updates
        pods, full = self.changes.select(ctx.states.pods(), ctx.clock(), tuple(cfgs.values()))
        if full:
            try:
                self._set_schemata(ctx, writer, cfgs)
            except Exception:
                self.changes.forget()  # try again next round
                raise
        self._move_tasks(ctx, writer, pods)

    def _set_schemata(self, ctx: QoSContext, writer: ResctrlWriter, cfgs: dict[str, ResctrlQOS]) -> None:
        assert self.info is not None
        root = read_schemata(ctx.host)
        l3_ids = root.get("L3", {}).keys() if self.info.l3 is not None else ()
        mb_ids = root.get("MB", {}).keys() if self.info.mba is not None else ()
        for group, cfg in cfgs.items():
            wanted = class_schemata(self.info.l3.cbm_mask if self.info.l3 else None, l3_ids, mb_ids,
                                    cfg if cfg.enable else WHOLE)
            created = writer.ensure_group(group)
            if writer.write_schemata(group, wanted) or created:
                ctx.metrics.action(NAME, "schemata")
                log.info("resctrl_schemata_set", group=group, schemata=wanted, enabled=cfg.enable,
                         reason="resourceQOSStrategy.resctrlQOS")

    @staticmethod
    def _move_tasks(ctx: QoSContext, writer: ResctrlWriter, pods: list[PodInfo]) -> None:
        tasks: dict[str, set[int]] = {group: set() for group in GROUPS}
        for pod in pods:
            group = GROUP_OF.get(pod.qos.effective)
            if group is None:
                continue
            for container in pod.running_containers:
                if not container.cgroup_dir:
                    continue
                try:
                    tasks[group].update(ctx.reader.value("tasks", container.cgroup_dir))
                except SystemFileError:
                    continue
        for group, ids in tasks.items():
            moved = writer.add_tasks(group, ids) if ids else 0
            if moved:
                ctx.metrics.action(NAME, "tasks", moved)
                log.info("resctrl_tasks_moved", group=group, tasks=moved, reason="pod QoS class")
