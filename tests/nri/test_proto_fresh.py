"""The committed generated modules match their .proto sources and carry the exact wire names."""

from __future__ import annotations

import ast
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


# protoc's stub for an enum with a value named None (NRI's Field), trimmed.
_PROTOC_STUB_WITH_KEYWORD_MEMBER = b"""\
class Field(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    None: _ClassVar[Field]
    Annotations: _ClassVar[Field]
None: Field
Annotations: Field

class Msg(_message.Message):
    def __init__(self, field: _Optional[_Union[Field, str]] = ...) -> None: ...
"""


def test_protoc_stub_with_a_keyword_member_is_not_python() -> None:
    with pytest.raises(SyntaxError):
        ast.parse(_PROTOC_STUB_WITH_KEYWORD_MEMBER)


def test_keyword_member_declarations_become_comments_and_the_rest_stays() -> None:
    fixed = generate._typeable(_PROTOC_STUB_WITH_KEYWORD_MEMBER)

    tree = ast.parse(fixed)
    declared = [node.target.id for node in ast.walk(tree) if isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)]
    assert declared == ["Annotations", "Annotations"]
    before, after = _PROTOC_STUB_WITH_KEYWORD_MEMBER.split(b"\n"), fixed.split(b"\n")
    changed = [(old, new) for old, new in zip(before, after, strict=True) if old != new]
    assert [old.strip() for old, _ in changed] == [b"None: _ClassVar[Field]", b"None: Field"]
    assert [new[: new.index(b"#")] for _, new in changed] == [b"    ", b""], "indentation kept"


def test_every_committed_stub_is_python() -> None:
    stubs = sorted(generate.PROTO_DIR.rglob("*_pb2.pyi"))
    assert stubs, "no generated stubs found"
    for stub in stubs:
        ast.parse(stub.read_bytes(), filename=str(stub))
