"""Pods, a real metric store and the published CRD schemas for the reporter tests."""

from __future__ import annotations

import functools
import json
from typing import Any, Iterable

import jsonschema
import pytest
import yaml

from koordlet.apis.qos import KoordQoSClass, PodQoS, PriorityBand
from koordlet.metriccache.api import Metric, Sample, SeriesKey
from koordlet.metriccache.retention import RetentionPolicy
from koordlet.metriccache.store import MetricStore
from koordlet.statesinformer.model import ContainerInfo, ContainerState, PodInfo, Resources, SandboxState
from tests.shared_reference import shared_file

NOW = 1_800_000_000.0
GI = 1024 ** 3


def pod(name: str, qos: KoordQoSClass = KoordQoSClass.LS, band: PriorityBand = PriorityBand.NONE,
        cpu_request: int = 0, memory_request: int = 0, namespace: str = "default") -> PodInfo:
    uid = "uid-" + name
    container = ContainerInfo(id="ctr-" + name, name="main", pod_uid=uid, state=ContainerState.RUNNING,
                              cgroup_dir="", spec=Resources(requests={"cpu": cpu_request, "memory": memory_request}))
    return PodInfo(uid=uid, name=name, namespace=namespace, sandbox_id="sb-" + name, state=SandboxState.READY,
                   cgroup_parent="", qos=PodQoS(effective=qos, band=band), containers=(container,))


def store() -> MetricStore:
    # node series keep 30 min; pod series are kept long enough for the tests' windows
    return MetricStore(RetentionPolicy(pod_seconds=1800.0, container_seconds=1800.0), clock=lambda: NOW)


def series(key: SeriesKey, values: Iterable[float], end: float = NOW, step: float = 1.0) -> list[Sample]:
    """Samples ending at `end`, one every `step` seconds, oldest first."""
    values = list(values)
    return [Sample(key, end - (len(values) - 1 - i) * step, v) for i, v in enumerate(values)]


def node_samples(cpu_cores: Iterable[float], memory_bytes: Iterable[float], end: float = NOW) -> list[Sample]:
    return (series(SeriesKey.of(Metric.NODE_CPU_USAGE_CORES), cpu_cores, end)
            + series(SeriesKey.of(Metric.NODE_MEMORY_USAGE_BYTES), memory_bytes, end))


def pod_samples(info: PodInfo, cpu_cores: float, memory_bytes: float, seconds: int = 300,
                end: float = NOW) -> list[Sample]:
    container = info.containers[0].id
    return (series(SeriesKey.of(Metric.POD_CPU_USAGE_CORES, info.uid), [cpu_cores] * seconds, end)
            + series(SeriesKey.of(Metric.POD_MEMORY_USAGE_BYTES, info.uid), [memory_bytes] * seconds, end)
            + series(SeriesKey.of(Metric.CONTAINER_CPU_USAGE_CORES, info.uid, container), [cpu_cores] * seconds, end)
            + series(SeriesKey.of(Metric.CONTAINER_MEMORY_USAGE_BYTES, info.uid, container),
                     [memory_bytes] * seconds, end))


def crd_schema(file_name: str) -> dict[str, Any]:
    """openAPIV3Schema of the CRD's first served version; skips when ../shared/crds is absent."""
    path = shared_file("crds", file_name)
    if not path.is_file():
        pytest.skip("published CRDs not found (%s): ../shared/crds is absent" % path)
    return _load_schema(str(path))


@functools.lru_cache(maxsize=None)
def _load_schema(path: str) -> dict[str, Any]:
    with open(path) as handle:
        document = yaml.safe_load(handle.read())
    versions = [v for v in document["spec"]["versions"] if v.get("served", True)]
    return versions[0]["schema"]["openAPIV3Schema"]


def status_validator() -> jsonschema.protocols.Validator:
    """A reusable validator for a NodeMetric status (schema checked once, not per document)."""
    schema = crd_schema("slo.koordinator.sh_nodemetrics.yaml")["properties"]["status"]
    return _validator(json.dumps(schema, sort_keys=True))


@functools.lru_cache(maxsize=None)
def _validator(schema_text: str) -> jsonschema.protocols.Validator:
    schema = json.loads(schema_text)
    return jsonschema.validators.validator_for(schema)(schema)
