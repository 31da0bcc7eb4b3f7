"""QoS resolution: every QoS fact a pod carries, and the one class the agents act on.

Pure. The informer calls `resolve_qos_checked` and logs the problems it returns
(once per pod, see `problems.py`); readers only see the resulting `PodQoS`.

`effective` is decided in this order, the first that applies wins:

1. label ``koordinator.sh/qosClass`` when it names a class (exact spelling, as
   Koordinator's GetPodQoSClassByName); without the label, an annotation of the
   same key (the older spelling, and what reaches NRI when a pod sets it so);
2. annotation ``katalyst.kubewharf.io/qos_level``:
   ``dedicated_cores`` -> LSE when its memory_enhancement says ``numa_exclusive``
   (whole NUMA nodes, nothing else may run there), otherwise LSR (exclusive cores;
   like Koordinator's LSR, idle dedicated capacity may still be reclaimed);
   ``shared_cores`` -> LS; ``reclaimed_cores`` -> BE; ``system_cores`` -> SYSTEM;
3. the priority band of ``spec.priority``: koord-prod / koord-mid -> LS,
   koord-batch / koord-free -> BE (Koordinator's priority classes);
4. the Kubernetes QoS tier (pod spec, or read off the pod's cgroup parent):
   BestEffort -> BE, Burstable -> LS, Guaranteed -> LS: the class that keeps
   what kubelet asked for (Koordinator's GetPodQoSClassWithKubeQoS maps
   Guaranteed to its QoSClassForGuaranteed, LSR today, which would pin cores);
5. nothing known: LS, the class that leaves kubelet's settings alone.

A label, annotation or JSON that is present but invalid is reported as an
`InputProblem` and treated as absent; it never fails the pod.
"""

from __future__ import annotations

import functools
import json
from types import MappingProxyType
from typing import Mapping

from koordlet.apis import keys
from koordlet.apis.qos import KatalystQoSLevel, KoordQoSClass, PodQoS, PriorityBand
from koordlet.statesinformer.problems import InputProblem
from system.cgroup_layout import QoSTier, parse_cgroup_path
from system.errors import InvalidValue

LABEL_KOORD_QOS = keys.KOORD_QOS_CLASS
ANNOTATION_KATALYST_QOS_LEVEL = keys.KATALYST_QOS_LEVEL
ANNOTATION_KATALYST_MEMORY_ENHANCEMENT = keys.KATALYST_MEMORY_ENHANCEMENT
ANNOTATION_KATALYST_CPU_ENHANCEMENT = keys.KATALYST_CPU_ENHANCEMENT

# Koordinator's priority classes: inclusive spec.priority ranges.
PRIORITY_BANDS: tuple[tuple[PriorityBand, int, int], ...] = (
    (PriorityBand.PROD, 9000, 9999),
    (PriorityBand.MID, 7000, 7999),
    (PriorityBand.BATCH, 5000, 5999),
    (PriorityBand.FREE, 3000, 3999),
)

_BAND_CLASS = {
    PriorityBand.PROD: KoordQoSClass.LS,
    PriorityBand.MID: KoordQoSClass.LS,
    PriorityBand.BATCH: KoordQoSClass.BE,
    PriorityBand.FREE: KoordQoSClass.BE,
}

_K8S_CLASS = {
    QoSTier.GUARANTEED: KoordQoSClass.LS,
    QoSTier.BURSTABLE: KoordQoSClass.LS,
    QoSTier.BESTEFFORT: KoordQoSClass.BE,
}

_EMPTY: Mapping[str, str] = MappingProxyType({})


def priority_band(priority: int | None) -> PriorityBand:
    if priority is None:
        return PriorityBand.NONE
    for band, low, high in PRIORITY_BANDS:
        if low <= priority <= high:
            return band
    return PriorityBand.NONE


def k8s_qos_of_cgroup_parent(cgroup_parent: str) -> QoSTier | None:
    """The Kubernetes tier a pod's cgroup dir sits under (cgroupfs or systemd layout);
    None when the path is not a kubelet pod path."""
    if not cgroup_parent:
        return None
    try:
        info = parse_cgroup_path(cgroup_parent)
    except InvalidValue:
        return None
    if info.pod_uid is None or info.tier is None:
        return None
    return info.tier


def _koord_class(
    labels: Mapping[str, str], annotations: Mapping[str, str], problems: list[InputProblem]
) -> KoordQoSClass:
    value = labels.get(LABEL_KOORD_QOS)
    if value is None:
        value = annotations.get(LABEL_KOORD_QOS)
    if value is None:
        return KoordQoSClass.NONE
    try:
        koord = KoordQoSClass(value)
    except ValueError:
        koord = KoordQoSClass.NONE
    if koord is KoordQoSClass.NONE:
        problems.append(InputProblem(LABEL_KOORD_QOS, value, "not one of LSE, LSR, LS, BE, SYSTEM"))
    return koord


def _katalyst_level(annotations: Mapping[str, str], problems: list[InputProblem]) -> KatalystQoSLevel | None:
    value = annotations.get(ANNOTATION_KATALYST_QOS_LEVEL)
    if value is None:
        return None
    try:
        return KatalystQoSLevel(value)
    except ValueError:
        problems.append(InputProblem(ANNOTATION_KATALYST_QOS_LEVEL, value, "unknown katalyst qos level"))
        return None


def _enhancement(annotations: Mapping[str, str], key: str, problems: list[InputProblem]) -> Mapping[str, str]:
    """Katalyst's enhancement annotation: a JSON object of string values (as katalyst
    decodes it into map[string]string); anything else is a problem and reads as empty."""
    text = annotations.get(key)
    if text is None:
        return _EMPTY
    try:
        decoded = json.loads(text)
    except (ValueError, RecursionError) as exc:
        problems.append(InputProblem(key, text, "invalid JSON: %s" % exc))
        return _EMPTY
    if not isinstance(decoded, dict) or not all(isinstance(v, str) for v in decoded.values()):
        problems.append(InputProblem(key, text, "not a JSON object of string values"))
        return _EMPTY
    return MappingProxyType(decoded)


def _k8s_tier(tier_or_cgroup_parent: str | QoSTier | None) -> QoSTier | None:
    if isinstance(tier_or_cgroup_parent, QoSTier) or tier_or_cgroup_parent is None:
        return tier_or_cgroup_parent
    return k8s_qos_of_cgroup_parent(tier_or_cgroup_parent)


def katalyst_class(level: KatalystQoSLevel, memory_enhancement: Mapping[str, str]) -> KoordQoSClass:
    if level is KatalystQoSLevel.DEDICATED_CORES:
        if memory_enhancement.get("numa_exclusive") == "true":
            return KoordQoSClass.LSE
        return KoordQoSClass.LSR
    if level is KatalystQoSLevel.SHARED_CORES:
        return KoordQoSClass.LS
    if level is KatalystQoSLevel.RECLAIMED_CORES:
        return KoordQoSClass.BE
    return KoordQoSClass.SYSTEM


def resolve_qos_checked(
    labels: Mapping[str, str],
    annotations: Mapping[str, str],
    priority: int | None,
    tier_or_cgroup_parent: str | QoSTier | None,
) -> tuple[PodQoS, tuple[InputProblem, ...]]:
    """The pod's QoS facts and effective class, plus the problems met on the way."""
    problems: list[InputProblem] = []
    koord = _koord_class(labels, annotations, problems)
    level = _katalyst_level(annotations, problems)
    memory = _enhancement(annotations, ANNOTATION_KATALYST_MEMORY_ENHANCEMENT, problems)
    cpu = _enhancement(annotations, ANNOTATION_KATALYST_CPU_ENHANCEMENT, problems)
    band = priority_band(priority)
    k8s = _k8s_tier(tier_or_cgroup_parent)
    effective: KoordQoSClass
    if koord is not KoordQoSClass.NONE:
        effective = koord
    elif level is not None:
        effective = katalyst_class(level, memory)
    elif band is not PriorityBand.NONE:
        effective = _BAND_CLASS[band]
    elif k8s is not None:
        effective = _K8S_CLASS[k8s]
    else:
        effective = KoordQoSClass.LS
    if memory or cpu:
        qos = PodQoS(effective=effective, koord=koord, band=band, katalyst=level, k8s=k8s,
                     memory_enhancement=memory, cpu_enhancement=cpu)
    else:
        qos = _plain_qos(effective, koord, band, level, k8s)
    return qos, tuple(problems)


@functools.cache  # enums only: a few hundred values at most, shared by the node's pods
def _plain_qos(effective: KoordQoSClass, koord: KoordQoSClass, band: PriorityBand, level: KatalystQoSLevel | None,
               k8s: QoSTier | None) -> PodQoS:
    """A PodQoS without enhancements."""
    return PodQoS(effective=effective, koord=koord, band=band, katalyst=level, k8s=k8s)


def resolve_qos(
    labels: Mapping[str, str],
    annotations: Mapping[str, str],
    priority: int | None,
    tier_or_cgroup_parent: str | QoSTier | None,
) -> PodQoS:
    """`resolve_qos_checked` without the problems."""
    return resolve_qos_checked(labels, annotations, priority, tier_or_cgroup_parent)[0]
