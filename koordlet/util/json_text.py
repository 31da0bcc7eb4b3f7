"""Canonical JSON text (sorted keys, no spaces) encoded a piece at a time.

json.dumps encodes a whole document in one C call and holds the GIL throughout: in a worker
thread, a NodeMetric report of 3,000 pods held the event loop ~10 ms in that one call.
Here dicts and lists are walked in Python and a list is encoded a few dozen items (pod
entries) at a time, so the loop can take the GIL between two pieces. The text is the same as
json.dumps(value, sort_keys=True, separators=(",", ":")).
"""

from __future__ import annotations

import json
from typing import Any, Iterator

# list items encoded in one call: ~0.2 ms of a NodeMetric's pod entries here; one call per
# item cost 1.5x the one-shot encoding in all
ITEMS_PER_PIECE = 64

_encode = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode


def canonical_json(value: Any) -> str:
    return "".join(json_pieces(value))


def json_pieces(value: Any) -> Iterator[str]:
    """The canonical text of `value` in pieces: per dict key, per ITEMS_PER_PIECE list items."""
    if isinstance(value, dict) and all(type(key) is str for key in value):
        yield "{"
        for at, key in enumerate(sorted(value)):
            yield ("," if at else "") + _encode(key) + ":"
            yield from json_pieces(value[key])
        yield "}"
    elif isinstance(value, (list, tuple)):
        yield "["
        for at in range(0, len(value), ITEMS_PER_PIECE):
            # a slice's text without its brackets: "[a,b]" -> "a,b"
            yield ("," if at else "") + _encode(value[at:at + ITEMS_PER_PIECE])[1:-1]
        yield "]"
    else:
        # a scalar, or a dict whose keys json.dumps itself turns into strings (or refuses)
        yield _encode(value)


def with_last_member(object_text: str, key: str, value_text: str) -> str:
    """The text of a JSON object with one more member, `key` with `value_text` (already JSON),
    put after the others: still canonical when `key` sorts after every key of the object."""
    if not (object_text.startswith("{") and object_text.endswith("}")):
        raise ValueError("not the text of a JSON object: %.40r" % object_text)
    separator = "" if object_text[1:-1].strip() == "" else ","
    return "".join((object_text[:-1], separator, _encode(key), ":", value_text, "}"))
