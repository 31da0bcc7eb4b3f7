"""NRI mux framing: vectors, arbitrary splits, the sanity cap and Go-reader-safe chunking."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nri.mux.frame import (
    GO_READ_BUFFER,
    MAX_ACCEPTED_PAYLOAD,
    MuxDecoder,
    MuxProtocolError,
    encode_mux_frames,
    split_for_go_reader,
)
from nri.ttrpc.frame import MAX_DATA_SIZE, Frame, MessageType, encode_frame
from tests.nri.go_reader_model import GoReaderRejected, GoTtrpcReaderModel

ENVELOPE = bytes.fromhex(
    "0a1c6e72692e706b672e6170692e7631616c706861312e52756e74696d65"
    "120e5265676973746572506c7567696e1a0d0a076578616d706c65120231302080e497d012"
)


def test_register_request_on_conn_two_matches_the_hand_vector() -> None:
    message = encode_frame(Frame(1, MessageType.REQUEST, 0, ENVELOPE))
    wire = encode_mux_frames(2, message)
    assert wire[:8] == bytes.fromhex("000000020000004d")
    assert wire[8:] == message and len(message) == 77


def test_empty_ok_reply_vector_decodes_on_conn_two() -> None:
    wire = bytes.fromhex("000000020000000c" "00000002000000010200" "0a00")
    assert MuxDecoder().feed(wire) == [(2, bytes.fromhex("000000020000000102000a00"))]


def test_length_over_the_sanity_cap_is_a_protocol_error() -> None:
    decoder = MuxDecoder()
    with pytest.raises(MuxProtocolError):
        decoder.feed((1).to_bytes(4, "big") + (MAX_ACCEPTED_PAYLOAD + 1).to_bytes(4, "big"))


def test_zero_length_frames_are_legal() -> None:
    assert MuxDecoder().feed(bytes(8) + bytes.fromhex("0000000100000000")) == [(0, b""), (1, b"")]


@pytest.mark.parametrize(
    ("size", "expected"),
    [
        (10, [10]),
        (4096, [4096]),
        (4097, [4096, 1]),
        (9248, [4096, 5152]),
        (10 + MAX_DATA_SIZE, [4096, 10 + MAX_DATA_SIZE - 4096]),
    ],
)
def test_split_copies_gos_writer_pattern(size: int, expected: list[int]) -> None:
    assert [len(c) for c in split_for_go_reader(bytes(size))] == expected


def test_a_9248_byte_create_container_reply_is_accepted_by_the_go_reader() -> None:
    message = encode_frame(Frame(7, MessageType.RESPONSE, 0, bytes(9238)))
    assert GoTtrpcReaderModel(split_for_go_reader(message)).messages() == [message]
    with pytest.raises(GoReaderRejected):  # the bug seen on containerd 2.3.4
        GoTtrpcReaderModel([message]).messages()


@settings(max_examples=120, deadline=None)
@given(st.lists(st.integers(0, 20_000), min_size=1, max_size=6))
def test_go_reader_accepts_every_message_size_we_send(sizes: list[int]) -> None:
    messages = [encode_frame(Frame(2 * i + 1, MessageType.REQUEST, 0, bytes(n))) for i, n in
                enumerate(sizes)]
    frames = [chunk for m in messages for chunk in split_for_go_reader(m)]
    assert GoTtrpcReaderModel(frames).messages() == messages


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 2**32 - 1), st.binary(max_size=5000)), max_size=6),
    st.data(),
)
def test_any_split_of_the_trunk_stream_yields_the_same_frames(
    frames: list[tuple[int, bytes]], data: st.DataObject
) -> None:
    stream = b"".join(
        (conn).to_bytes(4, "big") + len(payload).to_bytes(4, "big") + payload
        for conn, payload in frames
    )
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=10)))
    decoder = MuxDecoder()
    out: list[tuple[int, bytes]] = []
    prev = 0
    for cut in [*cuts, len(stream)]:
        out += decoder.feed(stream[prev:cut])
        prev = cut
    assert out == frames and decoder.buffered == 0


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 3), st.binary(min_size=0, max_size=12_000))
def test_encoded_message_reassembles_to_the_original_bytes(conn: int, message: bytes) -> None:
    events = MuxDecoder().feed(encode_mux_frames(conn, message))
    assert all(c == conn for c, _ in events)
    assert b"".join(p for _, p in events) == message
    assert all(len(p) <= GO_READ_BUFFER for _, p in events[:1])


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=3000), st.integers(1, 50))
def test_random_bytes_only_ever_raise_the_protocol_error(blob: bytes, step: int) -> None:
    decoder = MuxDecoder()
    try:
        for pos in range(0, len(blob), step):
            decoder.feed(blob[pos : pos + step])
    except MuxProtocolError:
        pass
