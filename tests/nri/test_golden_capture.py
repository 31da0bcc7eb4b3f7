"""Every mux frame a real containerd 2.3.4 exchanged with a plugin, through our decoders.

The capture (shared/reference/nri-capture-containerd-2.3.4.jsonl) holds one mux frame per
line with a summary of what Go decoded. Each frame goes through the mux decoder, the
ttrpc decoder, the envelope and the NRI message types; the result must agree with the
summary, carry no field our .proto lacks, and re-encode to the very same bytes where
Go's encoding is canonical (everything but map entry order).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import message_factory
from google.protobuf.message import Message
from google.protobuf.unknown_fields import UnknownFieldSet
from hypothesis import given, settings
from hypothesis import strategies as st

from nri.mux.frame import MuxDecoder, encode_mux_frames
from nri.ttrpc.frame import Frame, FrameDecoder, MessageType, encode_frame
from proto.nri.pkg.api.v1alpha1 import api_pb2
from proto.ttrpc import request_pb2
from tests.shared_reference import NRI_CAPTURE, shared_file


def _capture_path() -> Path:
    return shared_file(*NRI_CAPTURE)


def _records() -> list[dict[str, Any]]:
    capture = _capture_path()
    if not capture.is_file():
        pytest.skip("golden capture not found at " + str(capture))
    return [json.loads(line) for line in capture.read_text().splitlines() if line.strip()]


def _method_types(service: str, method: str) -> tuple[type[Message], type[Message]]:
    short = service.rsplit(".", 1)[1]
    desc = api_pb2.DESCRIPTOR.services_by_name[short].methods_by_name[method]
    return (
        message_factory.GetMessageClass(desc.input_type),
        message_factory.GetMessageClass(desc.output_type),
    )


def _child_messages(msg: Message) -> list[tuple[str, Message]]:
    """(field name, sub-message) for every message-typed value set in msg."""
    out: list[tuple[str, Message]] = []
    for field, value in msg.ListFields():
        if field.message_type is None:
            continue
        if field.message_type.GetOptions().map_entry:
            if field.message_type.fields_by_name["value"].message_type is not None:
                out += [(field.name, item) for item in value.values()]
        elif field.is_repeated:
            out += [(field.name, item) for item in value]
        else:
            out.append((field.name, value))
    return out


def _unknown_field_paths(msg: Message, prefix: str = "") -> list[str]:
    found = [prefix + "#" + str(f.field_number) for f in UnknownFieldSet(msg)]
    for name, child in _child_messages(msg):
        found += _unknown_field_paths(child, prefix + name + ".")
    return found


def _has_map_with_several_entries(msg: Message) -> bool:
    for field, value in msg.ListFields():
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            if len(value) > 1:
                return True
    return any(_has_map_with_several_entries(child) for _, child in _child_messages(msg))


def _assert_reencodes(msg: Message, wire: bytes) -> None:
    again = msg.SerializeToString()
    if again == wire:
        return
    # Go writes map entries in random order; only then may the bytes differ.
    assert _has_map_with_several_entries(msg), "non-canonical re-encoding without maps"
    assert type(msg).FromString(again) == msg


def test_capture_decodes_and_matches_the_summary_frame_by_frame() -> None:
    records = _records()
    mux = MuxDecoder()
    ttrpc = {(d, c): FrameDecoder() for d in ("plugin->runtime", "runtime->plugin") for c in (1, 2)}
    calls: dict[tuple[int, int], tuple[str, str]] = {}
    seen_methods: list[str] = []
    for record in records:
        wire = bytes.fromhex(record["frame_hex"])
        ((conn, payload),) = mux.feed(wire)
        assert conn == record["conn"]
        assert encode_mux_frames(conn, payload) == wire

        (frame,) = ttrpc[(record["dir"], conn)].feed(payload)
        assert isinstance(frame, Frame)
        assert (frame.stream_id, int(frame.type), frame.flags) == (
            record["stream"], record["type"], record["flags"]
        )
        assert len(frame.data) == record["ttrpc_len"]
        assert encode_frame(frame) == payload

        if frame.type == MessageType.REQUEST:
            env = request_pb2.Request.FromString(frame.data)
            assert (env.service, env.method, env.timeout_nano) == (
                record["service"], record["method"], record["timeout_nano"]
            )
            assert env.SerializeToString() == frame.data
            request_type, _ = _method_types(env.service, env.method)
            body = request_type.FromString(env.payload)
            assert _unknown_field_paths(body) == []
            _assert_reencodes(body, env.payload)
            calls[(conn, frame.stream_id)] = (env.service, env.method)
            seen_methods.append(env.method)
        else:
            assert frame.type == MessageType.RESPONSE
            env = request_pb2.Response.FromString(frame.data)
            assert env.status.code == record["status"]
            assert env.SerializeToString() == frame.data
            service, method = calls.pop((conn, frame.stream_id))
            _, response_type = _method_types(service, method)
            body = response_type.FromString(env.payload)
            assert _unknown_field_paths(body) == []
            _assert_reencodes(body, env.payload)

    assert mux.buffered == 0
    assert calls == {}, "every request in the capture got its response"
    assert seen_methods[:3] == ["RegisterPlugin", "Configure", "Synchronize"]


def test_capture_client_stream_ids_are_odd_and_increasing_per_connection() -> None:
    last: dict[int, int] = {}
    for record in _records():
        if record["type"] != MessageType.REQUEST:
            continue
        assert record["stream"] % 2 == 1
        assert record["stream"] > last.get(record["conn"], 0)
        last[record["conn"]] = record["stream"]


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_capture_split_at_random_points_decodes_to_the_same_frames(data: st.DataObject) -> None:
    records = _records()
    for direction in ("plugin->runtime", "runtime->plugin"):
        frames = [bytes.fromhex(r["frame_hex"]) for r in records if r["dir"] == direction]
        stream = b"".join(frames)
        cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=30)))
        mux = MuxDecoder()
        ttrpc = {1: FrameDecoder(), 2: FrameDecoder()}
        decoded: list[tuple[int, int, int]] = []
        prev = 0
        for cut in [*cuts, len(stream)]:
            for conn, payload in mux.feed(stream[prev:cut]):
                decoded += [(conn, f.stream_id, len(f.data)) for f in ttrpc[conn].feed(payload)]
            prev = cut
        expected = [
            (r["conn"], r["stream"], r["ttrpc_len"]) for r in records if r["dir"] == direction
        ]
        assert decoded == expected
