"""ExecutorModule: one executor for the daemon, on the daemon's registry."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest

from koordlet.daemon.executor_module import ExecutorModule
from resourceexecutor import Outcome
from system.host import Host
from tests.system.fake_trees import add_cgroup, build_v2_tree


async def test_writes_go_through_and_are_counted_on_the_daemon_registry(tmp_path):
    host = build_v2_tree(tmp_path)
    # Kernel files need no truncation and the executor does not truncate: start from
    # a two-digit value so the fake regular file holds exactly what was written.
    add_cgroup(host, "kubepods", {"cpu.weight": "10"})
    registry = CollectorRegistry()
    module = ExecutorModule(host, registry)
    await module.start()
    assert module.ready() and module.executor is not None
    result = module.executor.update(module.executor.updater("cpu.shares", "kubepods", 1024))
    assert result.outcome is Outcome.WRITTEN
    assert (host.cgroup("kubepods", "cpu.weight")).read_text().strip() == "39"
    text = generate_latest(registry).decode()
    assert 'koordlet_resource_update_total{resource="cpu.shares",result="written"} 1.0' in text
    await module.stop()
    assert module.executor is None


async def test_host_without_cgroups_starts_without_an_executor(tmp_path):
    module = ExecutorModule(Host.under(tmp_path), CollectorRegistry())
    await module.start()
    assert module.executor is None
    assert module.ready()
    await module.stop()
