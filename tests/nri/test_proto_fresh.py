"""The committed generated modules match their .proto sources and carry the exact wire names."""

from __future__ import annotations

import importlib.util

import pytest

from proto import generate


@pytest.mark.skipif(
    importlib.util.find_spec("grpc_tools") is None, reason="grpcio-tools is not installed"
)
def test_committed_generated_code_matches_a_fresh_protoc_run() -> None:
    stale = generate.stale_files()
    assert stale == [], "run `python -m proto.generate`; stale: " + ", ".join(stale)


def test_generated_imports_resolve_inside_the_proto_package() -> None:
    from proto.k8s.podresources.v1 import api_pb2_grpc
    from proto.nri.pkg.api.v1alpha1 import api_pb2
    from proto.ttrpc import request_pb2

    assert request_pb2.Response.DESCRIPTOR.fields_by_name["status"].message_type.full_name == (
        "google.rpc.Status"
    )
    assert api_pb2.DESCRIPTOR.package == "nri.pkg.api.v1alpha1"
    assert hasattr(api_pb2_grpc, "PodResourcesListerStub")


def test_nri_services_have_the_exact_wire_names() -> None:
    from proto.nri.pkg.api.v1alpha1 import api_pb2

    services = api_pb2.DESCRIPTOR.services_by_name
    assert services["Runtime"].full_name == "nri.pkg.api.v1alpha1.Runtime"
    assert services["Plugin"].full_name == "nri.pkg.api.v1alpha1.Plugin"
    assert {m.name for m in services["Runtime"].methods} == {"RegisterPlugin", "UpdateContainers"}
    assert len(services["Plugin"].methods) == 18


def test_podresources_service_is_v1_podresourceslister() -> None:
    from proto.k8s.podresources.v1 import api_pb2

    service = api_pb2.DESCRIPTOR.services_by_name["PodResourcesLister"]
    assert service.full_name == "v1.PodResourcesLister"
    assert [m.name for m in service.methods] == ["List", "GetAllocatableResources", "Get"]
