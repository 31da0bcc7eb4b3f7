"""Hand-encoded protobuf vectors (protocols.md §1.8) against the generated messages."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from nri.ttrpc.envelope import encode_ok_response
from proto.google.rpc import status_pb2
from proto.nri.pkg.api.v1alpha1 import api_pb2
from proto.ttrpc import request_pb2

REGISTER_HEX = "0a076578616d706c6512023130"
ENVELOPE_HEX = (
    "0a1c6e72692e706b672e6170692e7631616c706861312e52756e74696d65"
    "120e5265676973746572506c7567696e1a0d0a076578616d706c65120231302080e497d012"
)


def test_register_plugin_request_encodes_to_the_hand_vector() -> None:
    msg = api_pb2.RegisterPluginRequest(plugin_name="example", plugin_idx="10")
    assert msg.SerializeToString().hex() == REGISTER_HEX


def test_request_envelope_encodes_to_the_hand_vector() -> None:
    env = request_pb2.Request(
        service="nri.pkg.api.v1alpha1.Runtime",
        method="RegisterPlugin",
        payload=bytes.fromhex(REGISTER_HEX),
        timeout_nano=5_000_000_000,
    )
    encoded = env.SerializeToString()
    assert len(encoded) == 67
    assert encoded.hex() == ENVELOPE_HEX


def test_error_response_body_encodes_to_the_hand_vector() -> None:
    resp = request_pb2.Response(status=status_pb2.Status(code=12, message="method Foo"))
    assert resp.SerializeToString().hex() == "0a0e080c120a6d6574686f6420466f6f"


def test_success_response_with_empty_status_is_0a00() -> None:
    resp = request_pb2.Response(status=status_pb2.Status())
    assert resp.SerializeToString() == bytes.fromhex("0a00")


def test_configure_response_events_use_field_two() -> None:
    assert api_pb2.ConfigureResponse(events=0x688).SerializeToString().hex() == "10880d"


def test_zero_valued_optional_wrapper_is_still_present_on_the_wire() -> None:
    mem = api_pb2.LinuxMemory()
    mem.swappiness.SetInParent()
    assert mem.SerializeToString() == bytes.fromhex("3200")


@given(st.binary(max_size=70_000))
def test_hand_written_ok_response_is_what_the_generated_message_encodes(payload: bytes) -> None:
    expected = request_pb2.Response(status=status_pb2.Status(), payload=payload).SerializeToString()
    assert encode_ok_response(payload) == (expected if payload else bytes.fromhex("0a00"))


def test_ok_response_length_prefix_spans_several_varint_bytes() -> None:
    for size in (127, 128, 16_383, 16_384, 2_097_152):
        payload = b"x" * size
        env = request_pb2.Response.FromString(encode_ok_response(payload))
        assert env.payload == payload and env.HasField("status") and env.status.code == 0
