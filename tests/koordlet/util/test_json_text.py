"""canonical_json: the text json.dumps gives with sorted keys and no spaces, whatever the
document; written in pieces no larger than a slice of a list."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from koordlet.util.json_text import ITEMS_PER_PIECE, canonical_json, json_pieces, with_last_member


def dumps(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.text(),
                    st.floats(allow_nan=True, allow_infinity=True))
documents = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=150), st.tuples(inner, inner),
                            st.dictionaries(st.text(max_size=8), inner, max_size=6)),
    max_leaves=300)


@settings(max_examples=300, deadline=None)
@given(documents)
def test_the_text_is_json_dumps_text(document) -> None:
    assert canonical_json(document) == dumps(document)


@pytest.mark.parametrize("document", [
    {10: "a", 9: "b", -1: "c"},   # keys json.dumps turns into strings itself (sorted as numbers)
    {"ünïcode": "\u2603\n\"", "nan": math.nan, "inf": -math.inf},
    {"empty": [], "nested": {"list": [[], {}, ()]}},
])
def test_the_odd_corners_match(document) -> None:
    assert canonical_json(document) == dumps(document)


def test_what_json_dumps_refuses_is_refused_alike() -> None:
    for document in ({"a": [object()]}, {"a": {1: "x", "b": "y"}}, [{1, 2}]):
        with pytest.raises(TypeError):
            dumps(document)
        with pytest.raises(TypeError):
            canonical_json(document)


def test_a_long_list_is_encoded_a_slice_at_a_time() -> None:
    entries = [{"name": "pod-%d" % i, "usage": {"cpu": "%dm" % i}} for i in range(10 * ITEMS_PER_PIECE)]
    pieces = list(json_pieces({"status": {"podsMetric": entries}}))
    longest_slice = len(dumps(entries[-ITEMS_PER_PIECE:]))
    assert len(pieces) >= 10
    assert max(len(piece) for piece in pieces) <= longest_slice
    assert "".join(pieces) == dumps({"status": {"podsMetric": entries}})


@settings(deadline=None)
@given(st.dictionaries(st.text(max_size=8).filter(lambda k: k < "status"), documents, max_size=6), documents)
def test_a_last_member_is_spliced_as_canonical_json_would_write_it(document, value) -> None:
    text = with_last_member(canonical_json(document), "status", canonical_json(value))
    assert text == dumps({**document, "status": value})


def test_only_an_object_text_takes_a_member() -> None:
    assert with_last_member("{ }", "a", "1") == '{ "a":1}'
    for text in ("[]", "", '"{}"', "{"):
        with pytest.raises(ValueError):
            with_last_member(text, "a", "1")
