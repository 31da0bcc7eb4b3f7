"""The daemon's one executor: built with the hubs on the daemon's registry, closed by its module."""

from __future__ import annotations

from prometheus_client import generate_latest

from koordlet.daemon.cli import parse_args
from koordlet.daemon.executor_module import ExecutorModule
from resourceexecutor import Outcome
from system.host import Host
from tests.koordlet.hubs_helper import hubs_for
from tests.system.fake_trees import add_cgroup, build_v2_tree


def config_for(host: Host, tmp_path) -> object:
    return parse_args(["--cgroup-root-dir", str(host.cgroup_root), "--proc-root-dir", str(host.proc_root),
                       "--sys-root-dir", str(host.sys_root), "--state-dir", str(tmp_path / "state")])


async def test_writes_go_through_and_are_counted_on_the_daemon_registry(tmp_path):
    host = build_v2_tree(tmp_path)
    # Kernel files need no truncation and the executor does not truncate: start from
    # a two-digit value so the fake regular file holds exactly what was written.
    add_cgroup(host, "kubepods", {"cpu.weight": "10"})
    hubs = hubs_for(config_for(host, tmp_path))
    module = ExecutorModule(hubs.executor, hubs.facts)
    await module.start()
    assert module.ready()
    result = hubs.executor.update(hubs.executor.updater("cpu.shares", "kubepods", 1024))
    assert result.outcome is Outcome.WRITTEN
    assert (host.cgroup("kubepods", "cpu.weight")).read_text().strip() == "39"
    text = generate_latest(hubs.registry).decode()
    assert 'koordlet_resource_update_total{resource="cpu.shares",result="written"} 1.0' in text
    await module.stop()


async def test_a_host_without_cgroups_has_an_executor_that_refuses_every_write(tmp_path, capsys):
    hubs = hubs_for(config_for(Host.under(tmp_path), tmp_path))
    module = ExecutorModule(hubs.executor, hubs.facts)
    await module.start()
    assert "cgroup_writes_disabled" in capsys.readouterr().out
    result = hubs.executor.update(hubs.executor.updater("cpu.shares", "kubepods", 1024))
    assert result.outcome is Outcome.NOT_SUPPORTED
    assert module.ready()
    await module.stop()
