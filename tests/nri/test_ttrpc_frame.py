"""ttrpc framing: hand-encoded vectors, round trips, arbitrary splits, oversize skipping."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nri.ttrpc.frame import (
    MAX_DATA_SIZE,
    Frame,
    FrameDecoder,
    MessageType,
    OversizedFrame,
    encode_frame,
)
from nri.ttrpc.status import Code, MessageTooLarge

ENVELOPE = bytes.fromhex(
    "0a1c6e72692e706b672e6170692e7631616c706861312e52756e74696d65"
    "120e5265676973746572506c7567696e1a0d0a076578616d706c65120231302080e497d012"
)


def test_request_frame_matches_the_hand_vector() -> None:
    encoded = encode_frame(Frame(1, MessageType.REQUEST, 0, ENVELOPE))
    assert encoded[:10] == bytes.fromhex("00000043000000010100")
    assert encoded[10:] == ENVELOPE


def test_decoder_reads_the_empty_ok_response_vector() -> None:
    frames = FrameDecoder().feed(bytes.fromhex("00000002" "00000001" "02" "00" "0a00"))
    assert frames == [Frame(1, MessageType.RESPONSE, 0, b"\x0a\x00")]


def test_unknown_message_type_is_passed_up_as_a_plain_int() -> None:
    (frame,) = FrameDecoder().feed(bytes.fromhex("00000000000000050900"))
    assert frame.type == 9 and not isinstance(frame.type, MessageType)


def test_encoder_refuses_data_over_four_mib_with_resource_exhausted() -> None:
    with pytest.raises(MessageTooLarge) as caught:
        encode_frame(Frame(1, MessageType.REQUEST, 0, bytes(MAX_DATA_SIZE + 1)))
    assert caught.value.code == Code.RESOURCE_EXHAUSTED
    assert caught.value.length == MAX_DATA_SIZE + 1
    assert encode_frame(Frame(1, MessageType.REQUEST, 0, bytes(MAX_DATA_SIZE)))[:4] == (
        b"\x00\x40\x00\x00"
    )


def test_oversized_frame_is_skipped_and_the_stream_stays_in_sync() -> None:
    too_long = MAX_DATA_SIZE + 5
    header = (too_long).to_bytes(4, "big") + (7).to_bytes(4, "big") + b"\x01\x00"
    good = encode_frame(Frame(9, MessageType.REQUEST, 0, b"after"))
    stream = header + bytes(too_long) + good
    decoder = FrameDecoder()
    events: list[Frame | OversizedFrame] = []
    for pos in range(0, len(stream), 1 << 20):  # arrives in 1 MiB pieces
        events += decoder.feed(stream[pos : pos + (1 << 20)])
    assert events == [
        OversizedFrame(7, too_long, MessageType.REQUEST),
        Frame(9, MessageType.REQUEST, 0, b"after"),
    ]
    assert decoder.buffered == 0


frames_strategy = st.lists(
    st.builds(
        Frame,
        st.integers(0, 2**32 - 1),
        st.sampled_from(list(MessageType)),
        st.integers(0, 255),
        st.binary(max_size=300),
    ),
    max_size=8,
)


@settings(max_examples=150, deadline=None)
@given(frames_strategy, st.data())
def test_any_split_of_any_frame_sequence_decodes_to_the_same_frames(
    frames: list[Frame], data: st.DataObject
) -> None:
    stream = b"".join(encode_frame(f) for f in frames)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=10)))
    decoder = FrameDecoder()
    decoded: list[Frame | OversizedFrame] = []
    prev = 0
    for cut in [*cuts, len(stream)]:
        decoded += decoder.feed(stream[prev:cut])
        prev = cut
    assert decoded == frames
    assert decoder.buffered == 0


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=2000), st.integers(1, 64))
def test_random_bytes_never_raise_and_never_lose_track(blob: bytes, step: int) -> None:
    decoder = FrameDecoder()
    for pos in range(0, len(blob), step):
        for event in decoder.feed(blob[pos : pos + step]):
            assert isinstance(event, (Frame, OversizedFrame))
    assert decoder.buffered < 10 + MAX_DATA_SIZE


def test_truncated_frames_wait_for_more_bytes() -> None:
    encoded = encode_frame(Frame(3, MessageType.RESPONSE, 0, os.urandom(50)))
    decoder = FrameDecoder()
    for cut in range(len(encoded)):
        assert FrameDecoder().feed(encoded[:cut]) == []
    assert decoder.feed(encoded[:25]) == []
    assert len(decoder.feed(encoded[25:])) == 1
