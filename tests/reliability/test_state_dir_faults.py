"""The state directory when the environment misbehaves: a full disk is not corruption, an
unreadable file is not corruption, corrupt files go aside under unique names (a bounded
number kept), a symlink planted for a temp file is never followed, a directory where the
checkpoint should be does not stop the start."""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

import pytest

from koordlet.metriccache.module import MetricCacheModule, open_or_set_aside
from koordlet.metriccache.sqlite_persistence import SqlitePersistence
from koordlet.metriccache.store import DB_FILE_NAME, MetricStore
from koordlet.orm.checkpoint import CheckpointStore
from koordlet.util.durable import KEEP_CORRUPT, move_aside, write_atomically


def test_an_environment_failure_keeps_the_sample_file(tmp_path, monkeypatch):
    path = tmp_path / DB_FILE_NAME
    SqlitePersistence(path).close()

    def full_disk(*args, **kwargs):
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(sqlite3, "connect", full_disk)
    persistence, problem = open_or_set_aside(path)
    assert persistence is None and "disk is full" in (problem or "")
    assert path.exists() and list(tmp_path.glob("*.corrupt-*")) == []  # kept, not called corrupt


async def test_the_module_is_degraded_then_recovers_when_the_file_opens_again(tmp_path, monkeypatch):
    real_connect = sqlite3.connect
    broken = [True]

    def connect(*args, **kwargs):
        if broken[0]:
            raise sqlite3.OperationalError("unable to open database file")
        return real_connect(*args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", connect)
    now = [0.0]
    module = MetricCacheModule(MetricStore(), tmp_path, flush_interval=1.0, clock=lambda: now[0])
    await module.start()
    try:
        assert module.ready() and "unable to open" in (module.degraded() or "")
        broken[0] = False
        now[0] = 0.5
        await module._maintain()
        assert module.degraded() is not None  # the back-off has not passed yet
        now[0] = 10.0
        await module._maintain()
        assert module.degraded() is None and module.store.persistent
    finally:
        await module.stop()


def test_a_failed_commit_does_not_hide_its_error_behind_a_rollback(tmp_path):
    persistence = SqlitePersistence(tmp_path / DB_FILE_NAME)
    persistence._db.execute("PRAGMA max_page_count = 2")  # the file is "full" at once
    from koordlet.metriccache.api import SeriesKey

    with pytest.raises(sqlite3.OperationalError, match="full"):
        persistence.write([(SeriesKey.of("m", str(i)), 60.0, float(i), 1.0) for i in range(5000)])
    persistence.close()


def test_corrupt_copies_get_unique_names_and_only_the_newest_are_kept(tmp_path):
    path = tmp_path / "state"
    for round_no in range(KEEP_CORRUPT + 2):
        path.write_text(str(round_no))
        move_aside(path)
    kept = sorted(tmp_path.glob("state.corrupt-*"))
    assert len(kept) == KEEP_CORRUPT
    assert {p.read_text() for p in kept} == {str(n) for n in range(2, KEEP_CORRUPT + 2)}


def test_a_symlink_planted_where_a_temp_file_goes_is_never_followed(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious")
    target = tmp_path / "orm_checkpoint"
    for guess in (".orm_checkpoint.tmp", "orm_checkpoint.tmp"):  # names an attacker might guess
        os.symlink(victim, tmp_path / guess)
    write_atomically(target, b"data")
    assert victim.read_text() == "precious" and target.read_bytes() == b"data"
    assert not any(p.name.endswith(".tmp") and not p.is_symlink() for p in tmp_path.iterdir())


def test_a_directory_at_the_checkpoint_path_is_moved_aside(tmp_path):
    store = CheckpointStore(tmp_path)
    store.path.mkdir()
    assert store.load() == ()
    assert not store.path.exists() and len(list(tmp_path.glob("orm_checkpoint.corrupt-*"))) == 1


def test_a_full_disk_on_a_checkpoint_write_is_reported_and_retried(tmp_path, monkeypatch):
    store = CheckpointStore(tmp_path)
    import koordlet.orm.checkpoint as checkpoint

    def no_space(path: Path, data: bytes, mode: int = 0o600) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(checkpoint, "write_atomically", no_space)
    with pytest.raises(OSError):
        store.write_blob(b"{}", generation=1)
    assert "No space left" in (store.write_error or "")
    monkeypatch.undo()
    assert store.write_blob(b"{}", generation=1)  # the same generation is tried again, and lands
    assert store.write_error is None and store.durable_generation == 1


async def test_an_unreadable_checkpoint_at_start_degrades_the_orm_instead_of_crashing(tmp_path, monkeypatch):
    from koordlet.orm.module import OrmModule
    from koordlet.statesinformer.api import StaticStates
    from koordlet.statesinformer.model import NodeInfo
    from koordlet.util.host_facts import HostFacts
    from tests.koordlet.orm.test_module import config_for, host_for

    config = config_for(tmp_path)
    checkpoint = tmp_path / "state" / "orm" / "orm_checkpoint"
    checkpoint.parent.mkdir(parents=True)
    checkpoint.write_text("{}")
    real_read = Path.read_bytes

    def read_bytes(self: Path) -> bytes:
        if self == checkpoint:
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return real_read(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    module = OrmModule(config, HostFacts(host_for(tmp_path)), StaticStates(NodeInfo("n")))
    await module.start()
    try:
        assert "unreadable" in (module.degraded() or "") and checkpoint.exists()
    finally:
        await module.stop()
