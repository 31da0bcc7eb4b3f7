"""The state directory is private and held by one daemon: others' write permissions are
taken away, a foreign owner or a second daemon stops the start with exit 2 and one line."""

from __future__ import annotations

import os
import stat

import pytest

from koordlet.agent import StartupError
from koordlet.daemon.state_dir import StateDirLock, prepare_state_dir


def test_a_new_state_dir_is_private(tmp_path):
    path = tmp_path / "a" / "state"
    prepare_state_dir(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o700


def test_a_world_writable_state_dir_is_repaired(tmp_path):
    path = tmp_path / "state"
    path.mkdir()
    os.chmod(path, 0o777)
    prepare_state_dir(path)
    assert stat.S_IMODE(path.stat().st_mode) & 0o022 == 0


def test_a_foreign_owned_state_dir_is_refused(tmp_path):
    path = tmp_path / "state"
    path.mkdir()
    os.chown(path, 4242, 4242)
    with pytest.raises(StartupError, match="owned by uid 4242") as err:
        prepare_state_dir(path)
    assert err.value.exit_code == 2


def test_a_file_where_the_state_dir_should_be_is_refused(tmp_path):
    path = tmp_path / "state"
    path.write_text("x")
    with pytest.raises(StartupError) as err:
        prepare_state_dir(path)
    assert err.value.exit_code == 2


def test_a_second_daemon_on_the_same_state_dir_stops(tmp_path):
    first = StateDirLock(tmp_path)
    first.acquire()
    try:
        with pytest.raises(StartupError, match=r"another koordlet \(pid %d\)" % os.getpid()) as err:
            StateDirLock(tmp_path).acquire()
        assert err.value.exit_code == 2
    finally:
        first.release()
    StateDirLock(tmp_path).acquire()  # released: the next one takes it
