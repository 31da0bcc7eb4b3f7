"""QoS resolution, table-driven: every class, band boundaries, bad input.

Expectations come from the published definitions: Koordinator's label values and
priority classes (koord-prod 9000-9999, koord-mid 7000-7999, koord-batch
5000-5999, koord-free 3000-3999), Katalyst's qos_level values, kubelet's QoS
cgroup layout.
"""

from __future__ import annotations

import pytest

from koordlet.apis.qos import KatalystQoSLevel, KoordQoSClass, PriorityBand
from koordlet.statesinformer.qos import (
    k8s_qos_of_cgroup_parent,
    priority_band,
    resolve_qos,
    resolve_qos_checked,
)
from system.cgroup_layout import QoSTier

UID = "6f7a1c2e-4b1d-4a55-9d1e-0c6b3f0a9e11"
SD_UID = UID.replace("-", "_")
LEVEL = "katalyst.kubewharf.io/qos_level"
MEM = "katalyst.kubewharf.io/memory_enhancement"
CPU = "katalyst.kubewharf.io/cpu_enhancement"
KOORD = "koordinator.sh/qosClass"

LS, LSE, LSR, BE, SYSTEM = (KoordQoSClass.LS, KoordQoSClass.LSE, KoordQoSClass.LSR,
                            KoordQoSClass.BE, KoordQoSClass.SYSTEM)


@pytest.mark.parametrize(("priority", "band"), [
    (None, PriorityBand.NONE), (0, PriorityBand.NONE), (-1, PriorityBand.NONE),
    (2999, PriorityBand.NONE), (3000, PriorityBand.FREE), (3999, PriorityBand.FREE),
    (4000, PriorityBand.NONE), (4999, PriorityBand.NONE), (5000, PriorityBand.BATCH),
    (5999, PriorityBand.BATCH), (6000, PriorityBand.NONE), (6999, PriorityBand.NONE),
    (7000, PriorityBand.MID), (7999, PriorityBand.MID), (8000, PriorityBand.NONE),
    (8999, PriorityBand.NONE), (9000, PriorityBand.PROD), (9999, PriorityBand.PROD),
    (10000, PriorityBand.NONE), (2000000000, PriorityBand.NONE),
])
def test_priority_band_boundaries(priority: int | None, band: PriorityBand) -> None:
    assert priority_band(priority) is band


@pytest.mark.parametrize(("parent", "tier"), [
    ("/kubepods/besteffort/pod" + UID, QoSTier.BESTEFFORT),
    ("kubepods/burstable/pod" + UID, QoSTier.BURSTABLE),
    ("/kubepods/pod" + UID, QoSTier.GUARANTEED),
    ("kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod%s.slice" % SD_UID, QoSTier.BESTEFFORT),
    ("kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod%s.slice" % SD_UID, QoSTier.BURSTABLE),
    ("kubepods.slice/kubepods-pod%s.slice" % SD_UID, QoSTier.GUARANTEED),
    ("kubepods/burstable", None),  # the tier dir, not a pod
    ("kubepods", None),
    ("system.slice/containerd.service", None),
    ("", None),
])
def test_k8s_tier_from_cgroup_parent(parent: str, tier: QoSTier | None) -> None:
    assert k8s_qos_of_cgroup_parent(parent) is tier


BE_PARENT = "kubepods/besteffort/pod" + UID
BURSTABLE_PARENT = "kubepods/burstable/pod" + UID
GUARANTEED_PARENT = "kubepods/pod" + UID


@pytest.mark.parametrize(("labels", "annotations", "priority", "tier", "effective"), [
    # 1. the koordinator label wins over everything
    ({KOORD: "LSE"}, {}, None, None, LSE),
    ({KOORD: "LSR"}, {LEVEL: "reclaimed_cores"}, 5000, BE_PARENT, LSR),
    ({KOORD: "LS"}, {}, 5500, BE_PARENT, LS),
    ({KOORD: "BE"}, {LEVEL: "dedicated_cores"}, 9500, GUARANTEED_PARENT, BE),
    ({KOORD: "SYSTEM"}, {}, None, None, SYSTEM),
    # ... and as an annotation when the label is absent (what the containerd capture carries)
    ({}, {KOORD: "BE"}, 9500, GUARANTEED_PARENT, BE),
    ({KOORD: "LS"}, {KOORD: "BE"}, None, None, LS),
    # 2. katalyst level
    ({}, {LEVEL: "dedicated_cores"}, None, None, LSR),
    ({}, {LEVEL: "dedicated_cores", MEM: '{"numa_binding": "true", "numa_exclusive": "true"}'}, None, None, LSE),
    ({}, {LEVEL: "dedicated_cores", MEM: '{"numa_binding": "true"}'}, None, None, LSR),
    ({}, {LEVEL: "dedicated_cores", MEM: '{"numa_exclusive": "false"}'}, None, None, LSR),
    ({}, {LEVEL: "shared_cores"}, 5000, BE_PARENT, LS),
    ({}, {LEVEL: "reclaimed_cores"}, 9000, GUARANTEED_PARENT, BE),
    ({}, {LEVEL: "system_cores"}, None, None, SYSTEM),
    # 3. priority bands
    ({}, {}, 9999, BE_PARENT, LS),
    ({}, {}, 7000, BE_PARENT, LS),
    ({}, {}, 5999, GUARANTEED_PARENT, BE),
    ({}, {}, 3000, GUARANTEED_PARENT, BE),
    # 4. kubernetes tier (outside every band)
    ({}, {}, 2999, BE_PARENT, BE),
    ({}, {}, 4000, BURSTABLE_PARENT, LS),
    ({}, {}, None, GUARANTEED_PARENT, LS),
    ({}, {}, None, QoSTier.BESTEFFORT, BE),
    ({}, {}, None, QoSTier.GUARANTEED, LS),
    # 5. nothing known
    ({}, {}, None, None, LS),
    ({}, {}, None, "not/a/kubepods/path", LS),
])
def test_effective_class(labels, annotations, priority, tier, effective) -> None:
    qos, problems = resolve_qos_checked(labels, annotations, priority, tier)
    assert qos.effective is effective
    assert problems == ()


@pytest.mark.parametrize(("labels", "annotations", "effective", "bad_key"), [
    ({KOORD: "ls"}, {}, BE, KOORD),  # exact spelling only
    ({KOORD: ""}, {}, BE, KOORD),
    ({KOORD: "GOLD"}, {LEVEL: "shared_cores"}, LS, KOORD),
    ({}, {LEVEL: "exclusive_cores"}, BE, LEVEL),
    ({}, {LEVEL: "Dedicated_Cores"}, BE, LEVEL),
    # bad enhancement JSON: read as absent, so dedicated without numa_exclusive -> LSR
    ({}, {LEVEL: "dedicated_cores", MEM: '{"numa_exclusive": "true"'}, LSR, MEM),
    ({}, {LEVEL: "dedicated_cores", MEM: '{"numa_exclusive": true}'}, LSR, MEM),
    ({}, {LEVEL: "dedicated_cores", MEM: '["numa_exclusive"]'}, LSR, MEM),
    ({}, {LEVEL: "shared_cores", CPU: "not json"}, LS, CPU),
    ({}, {LEVEL: "shared_cores", CPU: "[" * 100000}, LS, CPU),
])
def test_invalid_input_is_reported_and_treated_as_absent(labels, annotations, effective, bad_key) -> None:
    qos, problems = resolve_qos_checked(labels, annotations, None, BE_PARENT)
    assert qos.effective is effective
    assert [p.key for p in problems] == [bad_key]
    assert resolve_qos(labels, annotations, None, BE_PARENT) == qos


def test_facts_are_kept_beside_the_effective_class() -> None:
    qos = resolve_qos(
        {KOORD: "LSR"},
        {LEVEL: "dedicated_cores", MEM: '{"numa_binding": "true", "numa_exclusive": "true"}',
         CPU: '{"cpuset_pool": "dedicated"}'},
        9100,
        GUARANTEED_PARENT,
    )
    assert (qos.effective, qos.koord, qos.band, qos.katalyst, qos.k8s) == (
        LSR, LSR, PriorityBand.PROD, KatalystQoSLevel.DEDICATED_CORES, QoSTier.GUARANTEED)
    assert qos.numa_binding and qos.numa_exclusive
    assert dict(qos.cpu_enhancement) == {"cpuset_pool": "dedicated"}
