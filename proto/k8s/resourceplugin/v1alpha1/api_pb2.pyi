from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ContainerType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    INIT: _ClassVar[ContainerType]
    MAIN: _ClassVar[ContainerType]
    SIDECAR: _ClassVar[ContainerType]
    EPHEMERAL: _ClassVar[ContainerType]

class TopologyLevel(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    NUMA: _ClassVar[TopologyLevel]
    SOCKET: _ClassVar[TopologyLevel]
INIT: ContainerType
MAIN: ContainerType
SIDECAR: ContainerType
EPHEMERAL: ContainerType
NUMA: TopologyLevel
SOCKET: TopologyLevel

class Empty(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ResourcePluginOptions(_message.Message):
    __slots__ = ("pre_start_required", "with_topology_alignment", "need_reconcile", "associated_devices", "extra_resources")
    PRE_START_REQUIRED_FIELD_NUMBER: _ClassVar[int]
    WITH_TOPOLOGY_ALIGNMENT_FIELD_NUMBER: _ClassVar[int]
    NEED_RECONCILE_FIELD_NUMBER: _ClassVar[int]
    ASSOCIATED_DEVICES_FIELD_NUMBER: _ClassVar[int]
    EXTRA_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    pre_start_required: bool
    with_topology_alignment: bool
    need_reconcile: bool
    associated_devices: _containers.RepeatedScalarFieldContainer[str]
    extra_resources: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, pre_start_required: _Optional[bool] = ..., with_topology_alignment: _Optional[bool] = ..., need_reconcile: _Optional[bool] = ..., associated_devices: _Optional[_Iterable[str]] = ..., extra_resources: _Optional[_Iterable[str]] = ...) -> None: ...

class RegisterRequest(_message.Message):
    __slots__ = ("version", "endpoint", "resource_name", "options")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    version: str
    endpoint: str
    resource_name: str
    options: ResourcePluginOptions
    def __init__(self, version: _Optional[str] = ..., endpoint: _Optional[str] = ..., resource_name: _Optional[str] = ..., options: _Optional[_Union[ResourcePluginOptions, _Mapping]] = ...) -> None: ...

class TopologyHint(_message.Message):
    __slots__ = ("nodes", "preferred")
    NODES_FIELD_NUMBER: _ClassVar[int]
    PREFERRED_FIELD_NUMBER: _ClassVar[int]
    nodes: _containers.RepeatedScalarFieldContainer[int]
    preferred: bool
    def __init__(self, nodes: _Optional[_Iterable[int]] = ..., preferred: _Optional[bool] = ...) -> None: ...

class ListOfTopologyHints(_message.Message):
    __slots__ = ("hints",)
    HINTS_FIELD_NUMBER: _ClassVar[int]
    hints: _containers.RepeatedCompositeFieldContainer[TopologyHint]
    def __init__(self, hints: _Optional[_Iterable[_Union[TopologyHint, _Mapping]]] = ...) -> None: ...

class ResourceRequest(_message.Message):
    __slots__ = ("pod_uid", "pod_namespace", "pod_name", "container_name", "container_type", "container_index", "pod_role", "pod_type", "resource_name", "hint", "resource_requests", "labels", "annotations", "native_qos_class", "runtime_class")
    class ResourceRequestsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class AnnotationsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    POD_UID_FIELD_NUMBER: _ClassVar[int]
    POD_NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    POD_NAME_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_NAME_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_TYPE_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_INDEX_FIELD_NUMBER: _ClassVar[int]
    POD_ROLE_FIELD_NUMBER: _ClassVar[int]
    POD_TYPE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    HINT_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_REQUESTS_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    NATIVE_QOS_CLASS_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_CLASS_FIELD_NUMBER: _ClassVar[int]
    pod_uid: str
    pod_namespace: str
    pod_name: str
    container_name: str
    container_type: ContainerType
    container_index: int
    pod_role: str
    pod_type: str
    resource_name: str
    hint: TopologyHint
    resource_requests: _containers.ScalarMap[str, float]
    labels: _containers.ScalarMap[str, str]
    annotations: _containers.ScalarMap[str, str]
    native_qos_class: str
    runtime_class: str
    def __init__(self, pod_uid: _Optional[str] = ..., pod_namespace: _Optional[str] = ..., pod_name: _Optional[str] = ..., container_name: _Optional[str] = ..., container_type: _Optional[_Union[ContainerType, str]] = ..., container_index: _Optional[int] = ..., pod_role: _Optional[str] = ..., pod_type: _Optional[str] = ..., resource_name: _Optional[str] = ..., hint: _Optional[_Union[TopologyHint, _Mapping]] = ..., resource_requests: _Optional[_Mapping[str, float]] = ..., labels: _Optional[_Mapping[str, str]] = ..., annotations: _Optional[_Mapping[str, str]] = ..., native_qos_class: _Optional[str] = ..., runtime_class: _Optional[str] = ...) -> None: ...

class PodResourceRequest(_message.Message):
    __slots__ = ("pod_uid", "pod_namespace", "pod_name", "pod_role", "pod_type", "resource_name", "hint", "resource_requests", "labels", "annotations")
    class ResourceRequestsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class AnnotationsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    POD_UID_FIELD_NUMBER: _ClassVar[int]
    POD_NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    POD_NAME_FIELD_NUMBER: _ClassVar[int]
    POD_ROLE_FIELD_NUMBER: _ClassVar[int]
    POD_TYPE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    HINT_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_REQUESTS_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    pod_uid: str
    pod_namespace: str
    pod_name: str
    pod_role: str
    pod_type: str
    resource_name: str
    hint: TopologyHint
    resource_requests: _containers.ScalarMap[str, float]
    labels: _containers.ScalarMap[str, str]
    annotations: _containers.ScalarMap[str, str]
    def __init__(self, pod_uid: _Optional[str] = ..., pod_namespace: _Optional[str] = ..., pod_name: _Optional[str] = ..., pod_role: _Optional[str] = ..., pod_type: _Optional[str] = ..., resource_name: _Optional[str] = ..., hint: _Optional[_Union[TopologyHint, _Mapping]] = ..., resource_requests: _Optional[_Mapping[str, float]] = ..., labels: _Optional[_Mapping[str, str]] = ..., annotations: _Optional[_Mapping[str, str]] = ...) -> None: ...

class ResourceHintsResponse(_message.Message):
    __slots__ = ("pod_uid", "pod_namespace", "pod_name", "container_name", "container_type", "container_index", "pod_role", "pod_type", "resource_name", "resource_hints", "labels", "annotations", "native_qos_class")
    class ResourceHintsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: ListOfTopologyHints
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[ListOfTopologyHints, _Mapping]] = ...) -> None: ...
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class AnnotationsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    POD_UID_FIELD_NUMBER: _ClassVar[int]
    POD_NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    POD_NAME_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_NAME_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_TYPE_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_INDEX_FIELD_NUMBER: _ClassVar[int]
    POD_ROLE_FIELD_NUMBER: _ClassVar[int]
    POD_TYPE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_HINTS_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    NATIVE_QOS_CLASS_FIELD_NUMBER: _ClassVar[int]
    pod_uid: str
    pod_namespace: str
    pod_name: str
    container_name: str
    container_type: ContainerType
    container_index: int
    pod_role: str
    pod_type: str
    resource_name: str
    resource_hints: _containers.MessageMap[str, ListOfTopologyHints]
    labels: _containers.ScalarMap[str, str]
    annotations: _containers.ScalarMap[str, str]
    native_qos_class: str
    def __init__(self, pod_uid: _Optional[str] = ..., pod_namespace: _Optional[str] = ..., pod_name: _Optional[str] = ..., container_name: _Optional[str] = ..., container_type: _Optional[_Union[ContainerType, str]] = ..., container_index: _Optional[int] = ..., pod_role: _Optional[str] = ..., pod_type: _Optional[str] = ..., resource_name: _Optional[str] = ..., resource_hints: _Optional[_Mapping[str, ListOfTopologyHints]] = ..., labels: _Optional[_Mapping[str, str]] = ..., annotations: _Optional[_Mapping[str, str]] = ..., native_qos_class: _Optional[str] = ...) -> None: ...

class PodResourceHintsResponse(_message.Message):
    __slots__ = ("pod_uid", "pod_namespace", "pod_name", "pod_role", "pod_type", "resource_name", "resource_hints", "labels", "annotations")
    class ResourceHintsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: ListOfTopologyHints
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[ListOfTopologyHints, _Mapping]] = ...) -> None: ...
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class AnnotationsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    POD_UID_FIELD_NUMBER: _ClassVar[int]
    POD_NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    POD_NAME_FIELD_NUMBER: _ClassVar[int]
    POD_ROLE_FIELD_NUMBER: _ClassVar[int]
    POD_TYPE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_HINTS_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    pod_uid: str
    pod_namespace: str
    pod_name: str
    pod_role: str
    pod_type: str
    resource_name: str
    resource_hints: _containers.MessageMap[str, ListOfTopologyHints]
    labels: _containers.ScalarMap[str, str]
    annotations: _containers.ScalarMap[str, str]
    def __init__(self, pod_uid: _Optional[str] = ..., pod_namespace: _Optional[str] = ..., pod_name: _Optional[str] = ..., pod_role: _Optional[str] = ..., pod_type: _Optional[str] = ..., resource_name: _Optional[str] = ..., resource_hints: _Optional[_Mapping[str, ListOfTopologyHints]] = ..., labels: _Optional[_Mapping[str, str]] = ..., annotations: _Optional[_Mapping[str, str]] = ...) -> None: ...

class ResourceAllocationResponse(_message.Message):
    __slots__ = ("pod_uid", "pod_namespace", "pod_name", "container_name", "container_type", "container_index", "pod_role", "pod_type", "resource_name", "allocation_result", "labels", "annotations", "native_qos_class")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class AnnotationsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    POD_UID_FIELD_NUMBER: _ClassVar[int]
    POD_NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    POD_NAME_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_NAME_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_TYPE_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_INDEX_FIELD_NUMBER: _ClassVar[int]
    POD_ROLE_FIELD_NUMBER: _ClassVar[int]
    POD_TYPE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_RESULT_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    NATIVE_QOS_CLASS_FIELD_NUMBER: _ClassVar[int]
    pod_uid: str
    pod_namespace: str
    pod_name: str
    container_name: str
    container_type: ContainerType
    container_index: int
    pod_role: str
    pod_type: str
    resource_name: str
    allocation_result: ResourceAllocation
    labels: _containers.ScalarMap[str, str]
    annotations: _containers.ScalarMap[str, str]
    native_qos_class: str
    def __init__(self, pod_uid: _Optional[str] = ..., pod_namespace: _Optional[str] = ..., pod_name: _Optional[str] = ..., container_name: _Optional[str] = ..., container_type: _Optional[_Union[ContainerType, str]] = ..., container_index: _Optional[int] = ..., pod_role: _Optional[str] = ..., pod_type: _Optional[str] = ..., resource_name: _Optional[str] = ..., allocation_result: _Optional[_Union[ResourceAllocation, _Mapping]] = ..., labels: _Optional[_Mapping[str, str]] = ..., annotations: _Optional[_Mapping[str, str]] = ..., native_qos_class: _Optional[str] = ...) -> None: ...

class PodResourceAllocationResponse(_message.Message):
    __slots__ = ("pod_uid", "pod_namespace", "pod_name", "pod_role", "pod_type", "resource_name", "allocation_result", "labels", "annotations")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class AnnotationsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    POD_UID_FIELD_NUMBER: _ClassVar[int]
    POD_NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    POD_NAME_FIELD_NUMBER: _ClassVar[int]
    POD_ROLE_FIELD_NUMBER: _ClassVar[int]
    POD_TYPE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_RESULT_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    pod_uid: str
    pod_namespace: str
    pod_name: str
    pod_role: str
    pod_type: str
    resource_name: str
    allocation_result: ResourceAllocation
    labels: _containers.ScalarMap[str, str]
    annotations: _containers.ScalarMap[str, str]
    def __init__(self, pod_uid: _Optional[str] = ..., pod_namespace: _Optional[str] = ..., pod_name: _Optional[str] = ..., pod_role: _Optional[str] = ..., pod_type: _Optional[str] = ..., resource_name: _Optional[str] = ..., allocation_result: _Optional[_Union[ResourceAllocation, _Mapping]] = ..., labels: _Optional[_Mapping[str, str]] = ..., annotations: _Optional[_Mapping[str, str]] = ...) -> None: ...

class RemovePodRequest(_message.Message):
    __slots__ = ("pod_uid",)
    POD_UID_FIELD_NUMBER: _ClassVar[int]
    pod_uid: str
    def __init__(self, pod_uid: _Optional[str] = ...) -> None: ...

class RemovePodResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetResourcesAllocationRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetResourcesAllocationResponse(_message.Message):
    __slots__ = ("pod_resources",)
    class PodResourcesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: ContainerResources
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[ContainerResources, _Mapping]] = ...) -> None: ...
    POD_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    pod_resources: _containers.MessageMap[str, ContainerResources]
    def __init__(self, pod_resources: _Optional[_Mapping[str, ContainerResources]] = ...) -> None: ...

class ContainerResources(_message.Message):
    __slots__ = ("container_resources",)
    class ContainerResourcesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: ResourceAllocation
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[ResourceAllocation, _Mapping]] = ...) -> None: ...
    CONTAINER_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    container_resources: _containers.MessageMap[str, ResourceAllocation]
    def __init__(self, container_resources: _Optional[_Mapping[str, ResourceAllocation]] = ...) -> None: ...

class ResourceAllocation(_message.Message):
    __slots__ = ("resource_allocation",)
    class ResourceAllocationEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: ResourceAllocationInfo
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[ResourceAllocationInfo, _Mapping]] = ...) -> None: ...
    RESOURCE_ALLOCATION_FIELD_NUMBER: _ClassVar[int]
    resource_allocation: _containers.MessageMap[str, ResourceAllocationInfo]
    def __init__(self, resource_allocation: _Optional[_Mapping[str, ResourceAllocationInfo]] = ...) -> None: ...

class Mount(_message.Message):
    __slots__ = ("container_path", "host_path", "read_only")
    CONTAINER_PATH_FIELD_NUMBER: _ClassVar[int]
    HOST_PATH_FIELD_NUMBER: _ClassVar[int]
    READ_ONLY_FIELD_NUMBER: _ClassVar[int]
    container_path: str
    host_path: str
    read_only: bool
    def __init__(self, container_path: _Optional[str] = ..., host_path: _Optional[str] = ..., read_only: _Optional[bool] = ...) -> None: ...

class DeviceSpec(_message.Message):
    __slots__ = ("container_path", "host_path", "permissions")
    CONTAINER_PATH_FIELD_NUMBER: _ClassVar[int]
    HOST_PATH_FIELD_NUMBER: _ClassVar[int]
    PERMISSIONS_FIELD_NUMBER: _ClassVar[int]
    container_path: str
    host_path: str
    permissions: str
    def __init__(self, container_path: _Optional[str] = ..., host_path: _Optional[str] = ..., permissions: _Optional[str] = ...) -> None: ...

class ResourceAllocationInfo(_message.Message):
    __slots__ = ("oci_property_name", "is_node_resource", "is_scalar_resource", "allocated_quantity", "allocation_result", "envs", "annotations", "resource_hints", "topology_assignments", "mounts", "devices")
    class EnvsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class AnnotationsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class TopologyAssignmentsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: int
        value: int
        def __init__(self, key: _Optional[int] = ..., value: _Optional[int] = ...) -> None: ...
    OCI_PROPERTY_NAME_FIELD_NUMBER: _ClassVar[int]
    IS_NODE_RESOURCE_FIELD_NUMBER: _ClassVar[int]
    IS_SCALAR_RESOURCE_FIELD_NUMBER: _ClassVar[int]
    ALLOCATED_QUANTITY_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_RESULT_FIELD_NUMBER: _ClassVar[int]
    ENVS_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_HINTS_FIELD_NUMBER: _ClassVar[int]
    TOPOLOGY_ASSIGNMENTS_FIELD_NUMBER: _ClassVar[int]
    MOUNTS_FIELD_NUMBER: _ClassVar[int]
    DEVICES_FIELD_NUMBER: _ClassVar[int]
    oci_property_name: str
    is_node_resource: bool
    is_scalar_resource: bool
    allocated_quantity: float
    allocation_result: str
    envs: _containers.ScalarMap[str, str]
    annotations: _containers.ScalarMap[str, str]
    resource_hints: ListOfTopologyHints
    topology_assignments: _containers.ScalarMap[int, int]
    mounts: _containers.RepeatedCompositeFieldContainer[Mount]
    devices: _containers.RepeatedCompositeFieldContainer[DeviceSpec]
    def __init__(self, oci_property_name: _Optional[str] = ..., is_node_resource: _Optional[bool] = ..., is_scalar_resource: _Optional[bool] = ..., allocated_quantity: _Optional[float] = ..., allocation_result: _Optional[str] = ..., envs: _Optional[_Mapping[str, str]] = ..., annotations: _Optional[_Mapping[str, str]] = ..., resource_hints: _Optional[_Union[ListOfTopologyHints, _Mapping]] = ..., topology_assignments: _Optional[_Mapping[int, int]] = ..., mounts: _Optional[_Iterable[_Union[Mount, _Mapping]]] = ..., devices: _Optional[_Iterable[_Union[DeviceSpec, _Mapping]]] = ...) -> None: ...

class GetTopologyAwareResourcesRequest(_message.Message):
    __slots__ = ("pod_uid", "container_name")
    POD_UID_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_NAME_FIELD_NUMBER: _ClassVar[int]
    pod_uid: str
    container_name: str
    def __init__(self, pod_uid: _Optional[str] = ..., container_name: _Optional[str] = ...) -> None: ...

class GetTopologyAwareResourcesResponse(_message.Message):
    __slots__ = ("pod_uid", "pod_name", "pod_namespace", "container_topology_aware_resources")
    POD_UID_FIELD_NUMBER: _ClassVar[int]
    POD_NAME_FIELD_NUMBER: _ClassVar[int]
    POD_NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_TOPOLOGY_AWARE_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    pod_uid: str
    pod_name: str
    pod_namespace: str
    container_topology_aware_resources: ContainerTopologyAwareResources
    def __init__(self, pod_uid: _Optional[str] = ..., pod_name: _Optional[str] = ..., pod_namespace: _Optional[str] = ..., container_topology_aware_resources: _Optional[_Union[ContainerTopologyAwareResources, _Mapping]] = ...) -> None: ...

class ContainerTopologyAwareResources(_message.Message):
    __slots__ = ("container_name", "allocated_resources")
    class AllocatedResourcesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: TopologyAwareResource
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[TopologyAwareResource, _Mapping]] = ...) -> None: ...
    CONTAINER_NAME_FIELD_NUMBER: _ClassVar[int]
    ALLOCATED_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    container_name: str
    allocated_resources: _containers.MessageMap[str, TopologyAwareResource]
    def __init__(self, container_name: _Optional[str] = ..., allocated_resources: _Optional[_Mapping[str, TopologyAwareResource]] = ...) -> None: ...

class TopologyAwareResource(_message.Message):
    __slots__ = ("is_node_resource", "is_scalar_resource", "aggregated_quantity", "original_aggregated_quantity", "topology_aware_quantity_list", "original_topology_aware_quantity_list")
    IS_NODE_RESOURCE_FIELD_NUMBER: _ClassVar[int]
    IS_SCALAR_RESOURCE_FIELD_NUMBER: _ClassVar[int]
    AGGREGATED_QUANTITY_FIELD_NUMBER: _ClassVar[int]
    ORIGINAL_AGGREGATED_QUANTITY_FIELD_NUMBER: _ClassVar[int]
    TOPOLOGY_AWARE_QUANTITY_LIST_FIELD_NUMBER: _ClassVar[int]
    ORIGINAL_TOPOLOGY_AWARE_QUANTITY_LIST_FIELD_NUMBER: _ClassVar[int]
    is_node_resource: bool
    is_scalar_resource: bool
    aggregated_quantity: float
    original_aggregated_quantity: float
    topology_aware_quantity_list: _containers.RepeatedCompositeFieldContainer[TopologyAwareQuantity]
    original_topology_aware_quantity_list: _containers.RepeatedCompositeFieldContainer[TopologyAwareQuantity]
    def __init__(self, is_node_resource: _Optional[bool] = ..., is_scalar_resource: _Optional[bool] = ..., aggregated_quantity: _Optional[float] = ..., original_aggregated_quantity: _Optional[float] = ..., topology_aware_quantity_list: _Optional[_Iterable[_Union[TopologyAwareQuantity, _Mapping]]] = ..., original_topology_aware_quantity_list: _Optional[_Iterable[_Union[TopologyAwareQuantity, _Mapping]]] = ...) -> None: ...

class TopologyAwareQuantity(_message.Message):
    __slots__ = ("resource_value", "node", "name", "type", "topology_level", "annotations")
    class AnnotationsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    RESOURCE_VALUE_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    TOPOLOGY_LEVEL_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    resource_value: float
    node: int
    name: str
    type: str
    topology_level: TopologyLevel
    annotations: _containers.ScalarMap[str, str]
    def __init__(self, resource_value: _Optional[float] = ..., node: _Optional[int] = ..., name: _Optional[str] = ..., type: _Optional[str] = ..., topology_level: _Optional[_Union[TopologyLevel, str]] = ..., annotations: _Optional[_Mapping[str, str]] = ...) -> None: ...

class GetTopologyAwareAllocatableResourcesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetTopologyAwareAllocatableResourcesResponse(_message.Message):
    __slots__ = ("allocatable_resources",)
    class AllocatableResourcesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: AllocatableTopologyAwareResource
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[AllocatableTopologyAwareResource, _Mapping]] = ...) -> None: ...
    ALLOCATABLE_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    allocatable_resources: _containers.MessageMap[str, AllocatableTopologyAwareResource]
    def __init__(self, allocatable_resources: _Optional[_Mapping[str, AllocatableTopologyAwareResource]] = ...) -> None: ...

class AllocatableTopologyAwareResource(_message.Message):
    __slots__ = ("is_node_resource", "is_scalar_resource", "aggregated_allocatable_quantity", "topology_aware_allocatable_quantity_list", "aggregated_capacity_quantity", "topology_aware_capacity_quantity_list")
    IS_NODE_RESOURCE_FIELD_NUMBER: _ClassVar[int]
    IS_SCALAR_RESOURCE_FIELD_NUMBER: _ClassVar[int]
    AGGREGATED_ALLOCATABLE_QUANTITY_FIELD_NUMBER: _ClassVar[int]
    TOPOLOGY_AWARE_ALLOCATABLE_QUANTITY_LIST_FIELD_NUMBER: _ClassVar[int]
    AGGREGATED_CAPACITY_QUANTITY_FIELD_NUMBER: _ClassVar[int]
    TOPOLOGY_AWARE_CAPACITY_QUANTITY_LIST_FIELD_NUMBER: _ClassVar[int]
    is_node_resource: bool
    is_scalar_resource: bool
    aggregated_allocatable_quantity: float
    topology_aware_allocatable_quantity_list: _containers.RepeatedCompositeFieldContainer[TopologyAwareQuantity]
    aggregated_capacity_quantity: float
    topology_aware_capacity_quantity_list: _containers.RepeatedCompositeFieldContainer[TopologyAwareQuantity]
    def __init__(self, is_node_resource: _Optional[bool] = ..., is_scalar_resource: _Optional[bool] = ..., aggregated_allocatable_quantity: _Optional[float] = ..., topology_aware_allocatable_quantity_list: _Optional[_Iterable[_Union[TopologyAwareQuantity, _Mapping]]] = ..., aggregated_capacity_quantity: _Optional[float] = ..., topology_aware_capacity_quantity_list: _Optional[_Iterable[_Union[TopologyAwareQuantity, _Mapping]]] = ...) -> None: ...

class PreStartContainerRequest(_message.Message):
    __slots__ = ("pod_uid", "pod_namespace", "pod_name", "container_name")
    POD_UID_FIELD_NUMBER: _ClassVar[int]
    POD_NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    POD_NAME_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_NAME_FIELD_NUMBER: _ClassVar[int]
    pod_uid: str
    pod_namespace: str
    pod_name: str
    container_name: str
    def __init__(self, pod_uid: _Optional[str] = ..., pod_namespace: _Optional[str] = ..., pod_name: _Optional[str] = ..., container_name: _Optional[str] = ...) -> None: ...

class PreStartContainerResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class TopologyInfo(_message.Message):
    __slots__ = ("nodes",)
    NODES_FIELD_NUMBER: _ClassVar[int]
    nodes: _containers.RepeatedCompositeFieldContainer[NUMANode]
    def __init__(self, nodes: _Optional[_Iterable[_Union[NUMANode, _Mapping]]] = ...) -> None: ...

class NUMANode(_message.Message):
    __slots__ = ("ID",)
    ID_FIELD_NUMBER: _ClassVar[int]
    ID: int
    def __init__(self, ID: _Optional[int] = ...) -> None: ...

class AssociatedDevice(_message.Message):
    __slots__ = ("ID", "health", "topology")
    ID_FIELD_NUMBER: _ClassVar[int]
    HEALTH_FIELD_NUMBER: _ClassVar[int]
    TOPOLOGY_FIELD_NUMBER: _ClassVar[int]
    ID: str
    health: str
    topology: TopologyInfo
    def __init__(self, ID: _Optional[str] = ..., health: _Optional[str] = ..., topology: _Optional[_Union[TopologyInfo, _Mapping]] = ...) -> None: ...

class UpdateAllocatableAssociatedDevicesRequest(_message.Message):
    __slots__ = ("device_name", "devices")
    DEVICE_NAME_FIELD_NUMBER: _ClassVar[int]
    DEVICES_FIELD_NUMBER: _ClassVar[int]
    device_name: str
    devices: _containers.RepeatedCompositeFieldContainer[AssociatedDevice]
    def __init__(self, device_name: _Optional[str] = ..., devices: _Optional[_Iterable[_Union[AssociatedDevice, _Mapping]]] = ...) -> None: ...

class UpdateAllocatableAssociatedDevicesResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class DeviceRequest(_message.Message):
    __slots__ = ("device_name", "hint", "available_devices", "reusable_devices", "device_request")
    DEVICE_NAME_FIELD_NUMBER: _ClassVar[int]
    HINT_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_DEVICES_FIELD_NUMBER: _ClassVar[int]
    REUSABLE_DEVICES_FIELD_NUMBER: _ClassVar[int]
    DEVICE_REQUEST_FIELD_NUMBER: _ClassVar[int]
    device_name: str
    hint: TopologyHint
    available_devices: _containers.RepeatedScalarFieldContainer[str]
    reusable_devices: _containers.RepeatedScalarFieldContainer[str]
    device_request: int
    def __init__(self, device_name: _Optional[str] = ..., hint: _Optional[_Union[TopologyHint, _Mapping]] = ..., available_devices: _Optional[_Iterable[str]] = ..., reusable_devices: _Optional[_Iterable[str]] = ..., device_request: _Optional[int] = ...) -> None: ...

class AssociatedDeviceRequest(_message.Message):
    __slots__ = ("resource_request", "device_request", "accompany_resource_name", "device_name")
    RESOURCE_REQUEST_FIELD_NUMBER: _ClassVar[int]
    DEVICE_REQUEST_FIELD_NUMBER: _ClassVar[int]
    ACCOMPANY_RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    DEVICE_NAME_FIELD_NUMBER: _ClassVar[int]
    resource_request: ResourceRequest
    device_request: _containers.RepeatedCompositeFieldContainer[DeviceRequest]
    accompany_resource_name: str
    device_name: str
    def __init__(self, resource_request: _Optional[_Union[ResourceRequest, _Mapping]] = ..., device_request: _Optional[_Iterable[_Union[DeviceRequest, _Mapping]]] = ..., accompany_resource_name: _Optional[str] = ..., device_name: _Optional[str] = ...) -> None: ...

class AssociatedDeviceAllocation(_message.Message):
    __slots__ = ("allocated_devices",)
    ALLOCATED_DEVICES_FIELD_NUMBER: _ClassVar[int]
    allocated_devices: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, allocated_devices: _Optional[_Iterable[str]] = ...) -> None: ...

class AssociatedDeviceAllocationResponse(_message.Message):
    __slots__ = ("allocation_result",)
    ALLOCATION_RESULT_FIELD_NUMBER: _ClassVar[int]
    allocation_result: AssociatedDeviceAllocation
    def __init__(self, allocation_result: _Optional[_Union[AssociatedDeviceAllocation, _Mapping]] = ...) -> None: ...

class AssociatedDeviceHintsResponse(_message.Message):
    __slots__ = ("pod_uid", "pod_namespace", "pod_name", "container_name", "container_type", "container_index", "pod_role", "pod_type", "device_name", "device_hints", "labels", "annotations")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class AnnotationsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    POD_UID_FIELD_NUMBER: _ClassVar[int]
    POD_NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    POD_NAME_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_NAME_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_TYPE_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_INDEX_FIELD_NUMBER: _ClassVar[int]
    POD_ROLE_FIELD_NUMBER: _ClassVar[int]
    POD_TYPE_FIELD_NUMBER: _ClassVar[int]
    DEVICE_NAME_FIELD_NUMBER: _ClassVar[int]
    DEVICE_HINTS_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    pod_uid: str
    pod_namespace: str
    pod_name: str
    container_name: str
    container_type: ContainerType
    container_index: int
    pod_role: str
    pod_type: str
    device_name: str
    device_hints: ListOfTopologyHints
    labels: _containers.ScalarMap[str, str]
    annotations: _containers.ScalarMap[str, str]
    def __init__(self, pod_uid: _Optional[str] = ..., pod_namespace: _Optional[str] = ..., pod_name: _Optional[str] = ..., container_name: _Optional[str] = ..., container_type: _Optional[_Union[ContainerType, str]] = ..., container_index: _Optional[int] = ..., pod_role: _Optional[str] = ..., pod_type: _Optional[str] = ..., device_name: _Optional[str] = ..., device_hints: _Optional[_Union[ListOfTopologyHints, _Mapping]] = ..., labels: _Optional[_Mapping[str, str]] = ..., annotations: _Optional[_Mapping[str, str]] = ...) -> None: ...
