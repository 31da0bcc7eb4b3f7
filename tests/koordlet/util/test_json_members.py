"""members_without: an object's members read one at a time, the skipped one left unread once
every needed key came before it; anything but an object's text is a MembersError."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from koordlet.util.json_members import MembersError, members_without

values = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=6),
                                st.floats(allow_nan=False, allow_infinity=False)),
                      lambda inner: st.one_of(st.lists(inner, max_size=4),
                                              st.dictionaries(st.text(max_size=4), inner, max_size=4)),
                      max_leaves=20)
KEYS = ("apiVersion", "kind", "metadata", "spec", "status", "zz")
NEEDED = ("apiVersion", "kind", "metadata", "spec")


def spaced(document: dict, rng: random.Random) -> str:
    """The document's text with whitespace of JSON's four kinds around every token."""
    def gap() -> str:
        return "".join(rng.choice(" \t\n\r") for _ in range(rng.randrange(3)))
    members = [gap() + json.dumps(key) + gap() + ":" + gap() + json.dumps(value) + gap() for key, value in document.items()]
    return gap() + "{" + ",".join(members) + (gap() if not members else "") + "}" + gap()


@settings(max_examples=300, deadline=None)
@given(st.permutations(KEYS), st.lists(values, min_size=len(KEYS), max_size=len(KEYS)), st.integers(0, 2 ** 32),
       st.integers(1, len(KEYS)))
def test_the_members_but_the_skipped_one_whatever_the_order_and_spacing(order, members, seed, count):
    document = dict(zip(order[:count], members))
    text = spaced(document, random.Random(seed))
    found = members_without(text, "status", NEEDED)
    keys = list(document)
    skipped_at = keys.index("status") if "status" in keys else len(keys)
    stops = all(name in keys[:skipped_at] for name in NEEDED) and skipped_at < len(keys)
    expected = {k: v for k, v in document.items() if k != "status" and not (stops and keys.index(k) > skipped_at)}
    assert found == expected
    assert set(NEEDED) & set(document) <= set(found)  # what the caller needs is always there


def test_a_last_skipped_member_is_not_decoded():
    head = '{"apiVersion":"v1","kind":"NodeMetric","metadata":{"resourceVersion":"7"},"spec":{}'
    assert members_without(head + ',"status":{"podsMetric":[1,2,', "status", NEEDED) == {
        "apiVersion": "v1", "kind": "NodeMetric", "metadata": {"resourceVersion": "7"}, "spec": {}}
    with pytest.raises(MembersError):  # before a needed key it is decoded like any other
        members_without('{"status":{"podsMetric":[1,2,' + head[1:], "status", NEEDED)


@pytest.mark.parametrize("text", ["", "[]", '"{}"', "null", "{", '{"a"}', '{"a":1,}', '{"a":1 "b":2}', '{1:2}',
                                  '{"a":1}x', '{"a":tru}', '{"a":"\x01"}', "{}{}"])
def test_what_is_not_an_object_is_refused(text):
    with pytest.raises(MembersError):
        members_without(text, "status", NEEDED)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet='{}[]":,1a \\nstu', max_size=30))
def test_any_text_is_an_object_or_a_members_error(text):
    try:
        found = members_without(text, "status", ())
    except MembersError:
        return
    pairs = json.loads(text, object_pairs_hook=list)  # the top level's members in order (a list: not an object)
    assert isinstance(pairs, list) and all(isinstance(pair, tuple) for pair in pairs)
    keys = [key for key, _ in pairs]
    before = pairs[:keys.index("status")] if "status" in keys else pairs
    assert found == dict(before)
