"""The checkpoint is written atomically, verified on load, and never trusted when corrupt."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from types import MappingProxyType

import pytest

from koordlet.orm.allocation import OCI_CPUSET_CPUS, Allocation
from koordlet.orm.checkpoint import CheckpointStore, CorruptCheckpoint, decode, encode

ROW = Allocation("uid-1", "ns", "pod", "c", "cpu", 2.0, "2-3", OCI_CPUSET_CPUS, numa_nodes=(0,),
                 hint_nodes=(0,), hint_preferred=True)


def test_round_trip(tmp_path) -> None:
    store = CheckpointStore(tmp_path)
    store.write([ROW])
    assert store.load() == (ROW,)
    assert oct(store.path.stat().st_mode & 0o777) == oct(0o600)
    assert [p.name for p in tmp_path.iterdir()] == [store.path.name]  # no temp file left


def test_missing_checkpoint_is_empty(tmp_path) -> None:
    assert CheckpointStore(tmp_path).load() == ()


@pytest.mark.parametrize("damage", ["flip", "truncate", "garbage", "version", "bad_cpu_list"])
def test_a_corrupt_checkpoint_is_moved_aside_not_trusted(tmp_path, damage) -> None:
    store = CheckpointStore(tmp_path)
    store.write([ROW])
    blob = store.path.read_bytes()
    if damage == "flip":
        blob = blob.replace(b'"2-3"', b'"2-4"')
    elif damage == "truncate":
        blob = blob[: len(blob) // 2]
    elif damage == "garbage":
        blob = os.urandom(64)
    elif damage == "version":
        blob = blob.replace(b'"version":1', b'"version":9')
    else:  # a valid checksum over a bad entry
        doc = json.loads(blob)
        doc["data"]["entries"][0]["allocationResult"] = "3-1"
        blob = _resign(doc)
    store.path.write_bytes(blob)
    assert store.load() == ()
    assert not store.path.exists()
    aside = [p for p in tmp_path.iterdir() if ".corrupt-" in p.name]
    assert len(aside) == 1 and aside[0].read_bytes() == blob


def _resign(doc) -> bytes:
    import hashlib

    canonical = lambda d: json.dumps(d, sort_keys=True, separators=(",", ":")).encode()  # noqa: E731
    doc["checksum"] = hashlib.sha256(canonical(doc["data"])).hexdigest()
    return canonical(doc)


def test_decode_names_the_defect() -> None:
    with pytest.raises(CorruptCheckpoint, match="checksum mismatch"):
        decode(encode([ROW]).replace(b"uid-1", b"uid-2"))


def test_rewrite_replaces_the_old_state_whole(tmp_path) -> None:
    store = CheckpointStore(tmp_path)
    store.write([ROW])
    store.write([])
    assert store.load() == ()


def test_the_joined_encoding_is_the_canonical_json_of_the_document() -> None:
    blob = encode([ROW, replace(ROW, pod_uid="uid-2", envs=MappingProxyType({"K": "é"}))])
    assert json.dumps(json.loads(blob), sort_keys=True, separators=(",", ":")).encode() == blob


def test_two_corrupt_files_are_both_kept(tmp_path) -> None:
    store = CheckpointStore(tmp_path)
    for _ in range(2):
        store.path.write_bytes(b"not json")
        assert store.load() == ()
    assert len([p for p in tmp_path.iterdir() if ".corrupt-" in p.name]) == 2


def test_an_older_generation_never_replaces_a_newer_one(tmp_path) -> None:
    store = CheckpointStore(tmp_path)
    newer = encode([ROW])
    assert store.write_blob(newer, generation=5)
    assert not store.write_blob(encode([]), generation=4)  # a slow writer of an older snapshot
    assert store.path.read_bytes() == newer
    assert store.write_blob(encode([]), generation=6)
