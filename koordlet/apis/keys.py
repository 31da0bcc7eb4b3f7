"""Every well-known label, annotation and resource name the daemon reads or writes, once.

Our counterpart of Koordinator's apis/extension and Katalyst's consts: a key is spelled
here and nowhere else; parsers of their values are in koordlet.apis.annotations.
"""

from __future__ import annotations

# -- Koordinator ------------------------------------------------------------------------
# pod label (an annotation of the same key is read when the label is absent)
KOORD_QOS_CLASS = "koordinator.sh/qosClass"
# koord-scheduler's CPU binding of a pod: {"cpuset": "0-3", "cpuSharedPools": [...]}
RESOURCE_STATUS = "scheduling.koordinator.sh/resource-status"
# koord-manager's webhook copy of the containers' requests/limits for node agents
EXTENDED_RESOURCE_SPEC = "node.koordinator.sh/extended-resource-spec"
# a pod's own CPU burst config, laid over the node's cpuBurstStrategy
POD_CPU_BURST = "koordinator.sh/cpuBurst"
# a pod's own memory QoS config, laid over its class's resourceQOSStrategy
POD_MEMORY_QOS = "koordinator.sh/memoryQOS"
# batch resources: CPU in milli-cores, memory in bytes (extended resources of BE pods)
BATCH_CPU = "kubernetes.io/batch-cpu"
BATCH_MEMORY = "kubernetes.io/batch-memory"
# node annotation: kubelet's CPU manager policy, as koordlet reads it
KUBELET_CPU_MANAGER_POLICY = "kubelet.koordinator.sh/cpu-manager-policy"

# -- Katalyst ---------------------------------------------------------------------------
KATALYST_QOS_LEVEL = "katalyst.kubewharf.io/qos_level"
# which app container is the pod's main one (Katalyst's ORM; else the first container)
MAIN_CONTAINER_NAME = "kubernetes.io/main-container-name"
KATALYST_MEMORY_ENHANCEMENT = "katalyst.kubewharf.io/memory_enhancement"
KATALYST_CPU_ENHANCEMENT = "katalyst.kubewharf.io/cpu_enhancement"
# reclaimed resources of reclaimed_cores pods
RECLAIMED_MILLICPU = "resource.katalyst.kubewharf.io/reclaimed_millicpu"
RECLAIMED_MEMORY = "resource.katalyst.kubewharf.io/reclaimed_memory"
# the CustomNodeResource annotations the overcommit advisor writes
KCNR_CPU_OVERCOMMIT_RATIO = "katalyst.kubewharf.io/cpu_overcommit_ratio"
KCNR_MEMORY_OVERCOMMIT_RATIO = "katalyst.kubewharf.io/memory_overcommit_ratio"
KCNR_GUARANTEED_CPUS = "katalyst.kubewharf.io/guaranteed_cpus"
KCNR_OVERCOMMIT_CPU_MANAGER = "katalyst.kubewharf.io/overcommit_cpu_manager"
KCNR_OVERCOMMIT_MEMORY_MANAGER = "katalyst.kubewharf.io/overcommit_memory_manager"

# -- Kubernetes -------------------------------------------------------------------------
CPU = "cpu"
MEMORY = "memory"
