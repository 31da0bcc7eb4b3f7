from pathlib import Path

import pytest

from system.errors import InvalidValue
from system.host import Host
from system.procfs import read_proc_cgroups


def test_host_defaults_are_the_real_mounts():
    host = Host()
    assert host.cgroup_root == Path("/sys/fs/cgroup")
    assert host.proc("1", "cgroup") == Path("/proc/1/cgroup")


def test_host_accepts_flag_strings():
    host = Host(cgroup_root="/host/cgroup", proc_root="/host/proc", sys_root="/host/sys")  # type: ignore[arg-type]
    assert host.cgroup("cpu") == Path("/host/cgroup/cpu")
    assert host.sys("devices") == Path("/host/sys/devices")


def test_host_under_moves_every_root(tmp_path):
    host = Host.under(tmp_path)
    assert host.cgroup_root == tmp_path / "sys/fs/cgroup"
    assert host.proc_root == tmp_path / "proc"
    assert host == Host.under(str(tmp_path))


@pytest.mark.parametrize("pid", [0, -1, "1", True])
def test_bad_pid_is_invalid(pid):
    with pytest.raises(InvalidValue):
        read_proc_cgroups(Host(), pid)
