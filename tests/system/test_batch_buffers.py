"""The C readers' buffers are lent to a read, not kept by each batch: a batch kept between
reads holds its packed paths and their anchors, no output buffer (the collectors keep two
dozen batches of thousands of files each: ~2.1 MiB of buffers at 1,000 pods, when one read
at a time uses one); reads at once in threads each have their own."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from system import file_io
from system.file_io import FileBatch, ValueBatch, _ffi, _read_values

FILES = 600

pytestmark = pytest.mark.skipif(_read_values is None, reason="extension not built")


def buffer_bytes(batch: Any) -> int:
    """Bytes of C buffers the batch holds, itself or in an object it holds (its anchors
    aside: each file's anchor index is the batch's own)."""
    assert _ffi is not None
    total = 0
    todo = [(value, 0) for name, value in vars(batch).items() if name != "_anchored"]
    while todo:
        obj, depth = todo.pop()
        if isinstance(obj, _ffi.CData):
            total += _ffi.sizeof(obj)
        elif depth < 2 and hasattr(obj, "__dict__"):
            todo.extend((value, depth + 1) for value in vars(obj).values())
    return total


@pytest.fixture
def paths(tmp_path: Path) -> list[str]:
    out = []
    for i in range(FILES):
        path = tmp_path / ("f%04d" % i)
        path.write_text("%d\n" % i)
        out.append(str(path))
    return out


def test_batches_read_one_after_another_share_one_set_of_buffers(paths: list[str]):
    values_batches = [ValueBatch([(path, "") for path in paths[k:]]) for k in range(0, FILES, 100)]
    file_batches = [FileBatch(paths[k:]) for k in range(0, FILES, 100)]
    before = len(file_io._VALUE_ARRAYS), len(file_io._OUTPUTS)  # what earlier reads left
    for batch in values_batches + file_batches:
        batch.read()
        assert buffer_bytes(batch) == 0
    assert (len(file_io._VALUE_ARRAYS), len(file_io._OUTPUTS)) == (max(before[0], 1), max(before[1], 1))
    for k, batch in zip(range(0, FILES, 100), values_batches):
        values, status = batch.read()  # a shorter batch after a longer one: only its files
        assert values[::2] == list(range(k, FILES)) and status == [0] * (FILES - k)
    for k, batch in zip(range(0, FILES, 100), file_batches):
        assert batch.read_texts() == [str(i) for i in range(k, FILES)]


def test_batches_read_at_once_in_threads_each_get_their_own_buffers(paths: list[str]):
    values_batches = [ValueBatch([(path, "") for path in paths[k::3]]) for k in range(3)]
    file_batches = [FileBatch(paths[k::3]) for k in range(3)]
    results: dict[int, Any] = {}
    start = threading.Barrier(6)
    before = len(file_io._VALUE_ARRAYS), len(file_io._OUTPUTS)

    def read(n: int, batch: Any) -> None:
        start.wait()
        results[n] = [batch.read() for _ in range(50)]

    threads = [threading.Thread(target=read, args=(n, batch))
               for n, batch in enumerate(values_batches + file_batches)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for k in range(3):
        expected = list(range(k, FILES, 3))
        assert all(values[::2] == expected and status == [0] * len(expected) for values, status in results[k])
        assert all(texts == [b"%d\n" % i for i in expected] for texts in results[3 + k])
    assert len(file_io._VALUE_ARRAYS) <= max(before[0], 3) and len(file_io._OUTPUTS) <= max(before[1], 3)
