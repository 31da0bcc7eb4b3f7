"""One kept-fd budget for the whole daemon: the executor's writes and the collectors' usage
reads keep their fds in the same pool (Hubs.fd_pool), and a tiny budget starves neither."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

from prometheus_client import CollectorRegistry

from koordlet.agent import Readiness
from koordlet.daemon.wiring import build_hubs
from koordlet.metricsadvisor.agent import SPEC as METRICS_ADVISOR
from koordlet.server.http_endpoint import HttpEndpoint
from resourceexecutor import KeptFdFileIO, Outcome, ResourceExecutor
from system.cgroup_files import CgroupFiles
from system.file_io import KeptFdPool, fd_budget
from system.usage_reader import UsageReader
from tests.koordlet.hubs_helper import config_of
from tests.koordlet.metricsadvisor.fixtures import fake_node, make_pod
from tests.system.fake_trees import set_cgroup_file


async def test_the_hubs_hand_one_pool_to_the_executor_and_the_collectors(tmp_path: Path) -> None:
    pod = make_pod("p1")
    host, states = fake_node(tmp_path, [pod])
    config = config_of(state_dir=tmp_path / "state", proc_root_dir=host.proc_root, cgroup_root_dir=host.cgroup_root,
                    sys_root_dir=host.sys_root)
    registry = CollectorRegistry()
    hubs = replace(build_hubs(config, registry, HttpEndpoint(None, 0, registry, lambda: Readiness(()))),
                   states=states)
    pool = hubs.fd_pool
    assert pool.max_open == fd_budget()  # half the (raised) soft limit, capped
    (advisor,) = METRICS_ADVISOR.build(hubs).modules
    await advisor.start()
    try:
        executor = hubs.executor
        assert isinstance(executor.io, KeptFdFileIO)
        assert executor.io.pool is pool
        stats = advisor.scheduler.stats()
        for _ in range(300):
            if stats["podresource"].started and stats["podthrottled"].started:
                break
            await asyncio.sleep(0.01)
        assert stats["podresource"].started
        assert len(pool) == 0  # the collectors' batch reads keep no fd
        result = executor.update(executor.factory.new("cpu.shares", pod.cgroup_parent, 512))
        assert result.outcome is Outcome.WRITTEN
        assert len(pool) == 1  # the executor's fd went into the shared pool
    finally:
        await advisor.stop()
        hubs.executor.close()
    assert len(pool) == 0  # stopping the executor closed the daemon's kept fds


def test_a_tiny_shared_budget_starves_neither_the_executor_nor_the_reader(tmp_path: Path) -> None:
    pods = [make_pod("p%d" % i) for i in range(3)]
    host, _ = fake_node(tmp_path, pods)
    files = CgroupFiles(host)
    pool = KeptFdPool(max_open=3)  # fewer than one cgroup's usage files
    executor = ResourceExecutor(files, io=KeptFdFileIO(pool=pool))
    usage = UsageReader(files, pool=pool)
    for round_no in range(1, 4):
        for i, pod in enumerate(pods):
            cpu_ns = (round_no * 10 + i) * 1_000_000
            set_cgroup_file(host, pod.cgroup_parent, "cpuacct.usage", str(cpu_ns))
            shares = 1000 + 100 * round_no + i  # as wide as the fake 1024: a kept-fd pwrite does not truncate
            result = executor.update(executor.factory.new("cpu.shares", pod.cgroup_parent, shares), use_cache=False)
            assert result.outcome is Outcome.WRITTEN
            assert usage.cpu_ns_and_working_set(pod.cgroup_parent)[0] == cpu_ns
            assert executor.io.read(str(files.path("cpu.shares", pod.cgroup_parent))) == str(shares)
            assert len(pool) <= 3  # LRU eviction keeps the budget across both users
    usage.close()
    assert len(pool) > 0  # a shared pool is the owner's to close, not the reader's
    executor.close()
    assert len(pool) == 0
