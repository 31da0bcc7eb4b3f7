"""The NRI requests containerd 2.3.4 sent in the golden capture, decoded to protos."""

from __future__ import annotations

import json

import pytest
from google.protobuf import message_factory
from google.protobuf.message import Message

from nri.mux.frame import MuxDecoder
from nri.ttrpc.frame import FrameDecoder, MessageType
from proto.nri.pkg.api.v1alpha1 import api_pb2
from proto.ttrpc import request_pb2
from tests.shared_reference import NRI_CAPTURE, shared_file


def plugin_requests() -> list[tuple[str, Message]]:
    """(method, request) for every runtime->plugin request, in capture order."""
    path = shared_file(*NRI_CAPTURE)
    if not path.is_file():
        pytest.skip("golden capture not found at " + str(path))
    mux = MuxDecoder()
    decoders: dict[tuple[str, int], FrameDecoder] = {}
    out: list[tuple[str, Message]] = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        ((conn, payload),) = mux.feed(bytes.fromhex(record["frame_hex"]))
        (frame,) = decoders.setdefault((record["dir"], conn), FrameDecoder()).feed(payload)
        if frame.type != MessageType.REQUEST or record["dir"] != "runtime->plugin":
            continue
        envelope = request_pb2.Request.FromString(frame.data)
        method = api_pb2.DESCRIPTOR.services_by_name["Plugin"].methods_by_name[envelope.method]
        out.append((envelope.method, message_factory.GetMessageClass(method.input_type).FromString(envelope.payload)))
    return out


def first(method: str) -> Message:
    return next(request for name, request in plugin_requests() if name == method)
