"""The module: flags, mode, readiness on NRI, GET /api/v1/pods."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from koordlet.config import ConfigError
from koordlet.daemon.cli import parse_args
from koordlet.ports import Ports
from koordlet.runtimehooks.module import RuntimeHooksModule, nri_enabled, nri_wanted
from koordlet.runtimehooks.options import HooksOptions
from koordlet.statesinformer.model import NodeInfo
from koordlet.statesinformer.nri_feed import NriFeed
from koordlet.statesinformer.store import PodStore
from koordlet.util.host_facts import HostFacts
from nri.testing import RuntimePeer
from resourceexecutor import executor_without_cgroups
from system.host import Host
from tests.koordlet.runtimehooks.fixtures import batch, ext_spec
from tests.koordlet.runtimehooks.nri_pods import nri_container, nri_pod
from tests.nri.conftest import socket_path  # noqa: F401  (fixture)
from tests.polling import until, until_answer


async def pods_json(module):
    return json.loads((await module.pods_route("")).body)


def test_runtime_hook_flags_and_socket_alias(tmp_path: Path) -> None:
    config = parse_args([])
    assert (config.runtime.enable_nri_runtime_hook, config.runtime.runtime_hooks_nri_plugin_index,
            config.runtime.runtime_hooks_mode, config[HooksOptions].runtime_hooks_reconcile_interval) \
        == (True, "00", "auto", 10.0)
    assert config.runtime.nri_socket_path == Path("/var/run/nri/nri.sock")
    old = parse_args(["--nri-socket", "/x/old.sock"])
    assert old.runtime.nri_socket_path == Path("/x/old.sock")
    new = parse_args(["--nri-socket", "/x/old.sock", "--runtime-hooks-nri-socket-path", "/x/new.sock",
                      "--runtime-hooks-reconcile-interval", "1m30s", "--runtime-hooks-nri-plugin-index", "07",
                      "--runtime-hooks-mode", "bypass", "--enable-nri-runtime-hook", "false"])
    runtime = new.runtime
    assert (runtime.nri_socket_path, new[HooksOptions].runtime_hooks_reconcile_interval,
            runtime.runtime_hooks_nri_plugin_index, runtime.runtime_hooks_mode, runtime.enable_nri_runtime_hook) \
        == (Path("/x/new.sock"), 90.0, "07", "bypass", False)
    for bad in (["--runtime-hooks-nri-plugin-index", "7"], ["--runtime-hooks-reconcile-interval", "soon"]):
        with pytest.raises(ConfigError):
            parse_args(bad)
    with pytest.raises(ConfigError, match="invalid choice: 'sometimes'"):
        parse_args(["--runtime-hooks-mode", "sometimes"])


def test_mode_decides_nri(tmp_path: Path) -> None:
    sock = tmp_path / "nri.sock"
    auto = parse_args(["--runtime-hooks-nri-socket-path", str(sock)])
    assert not nri_wanted(auto) and nri_enabled(auto)
    sock.touch()
    assert nri_wanted(auto)
    assert nri_enabled(auto)  # auto still dials: a runtime that comes later is served
    assert not nri_wanted(parse_args(["--runtime-hooks-nri-socket-path", str(sock), "--runtime-hooks-mode", "bypass"]))
    assert not nri_wanted(parse_args(["--runtime-hooks-nri-socket-path", str(sock), "--feature-gates",
                                      "NRIRuntimeHooks=false"]))


async def test_module_ready_follows_nri_and_lists_pods(tmp_path: Path, socket_path) -> None:
    config = parse_args(["--runtime-hooks-nri-socket-path", str(socket_path), "--runtime-hooks-mode", "nri",
                         "--sys-root-dir", str(tmp_path), "--cgroup-root-dir", str(tmp_path)])
    registry = CollectorRegistry()
    feed = PodStore(NodeInfo("node"))
    host = Host(tmp_path, tmp_path, tmp_path)  # no cgroups there: every write refused, NRI only
    module = RuntimeHooksModule(config, HostFacts(host), feed, NriFeed(feed), executor_without_cgroups(host), registry)
    await module.start()
    try:
        assert module.nri_on and not module.ready()
        # no allocator on the node (the null ports): CreateContainer answers may be reused
        assert module.plugin is not None and module.plugin._admit is None
        assert module.engine.index.provider is None
        async with RuntimePeer(socket_path) as peer:
            await peer.wait_plugins(1)
            await until(module.ready)
            assert feed.nri_live()  # the informer heard it: its CRI poll stands down
            be = nri_pod("be1", "BE", {"node.koordinator.sh/extended-resource-spec": ext_spec(main=batch("500", "1Gi"))})
            await peer.run_pod_sandbox(be)
            await peer.create_container(be, nri_container(be, "main"))
            body = await until_answer(  # the store is fed after the answer
                lambda: pods_json(module), lambda answer: answer["pods"][0]["containers"])
            (pod,) = body["pods"]
            assert pod["qosClass"] == "BE" and pod["spec"]["cpu_shares"] == 512
            assert pod["containers"][0]["spec"]["memory_limit"] == 1 << 30
            assert body["nri"] == {"enabled": True, "ready": True}
            metrics = generate_latest(registry).decode()
            # decided after RunPodSandbox (the unnamed answer and `main`'s); CreateContainer reused one
            assert 'koordlet_runtime_hook_duration_seconds_count{hook="BatchResource",stage="create_container"} 2.0' \
                in metrics
        await until(lambda: not module.ready())  # the runtime went away
        assert not feed.nri_live()  # and the informer's CRI poll resumes
    finally:
        await module.stop()


async def test_our_own_stop_is_not_an_nri_loss_for_the_informer(tmp_path: Path, socket_path) -> None:
    """The stub reports the connection lost when the module stops it; the informer must not
    hear that (its CRI poll would wake, import grpc and dial at exit)."""
    config = parse_args(["--runtime-hooks-nri-socket-path", str(socket_path), "--runtime-hooks-mode", "nri",
                         "--sys-root-dir", str(tmp_path), "--cgroup-root-dir", str(tmp_path)])
    store = PodStore(NodeInfo("node"))
    host = Host(tmp_path, tmp_path, tmp_path)
    module = RuntimeHooksModule(config, HostFacts(host), store, NriFeed(store), executor_without_cgroups(host), None)
    heard: list[bool] = []
    store.on_nri_link(heard.append)
    await module.start()
    try:
        async with RuntimePeer(socket_path) as peer:
            await peer.wait_plugins(1)
            await until(module.ready)
            await module.stop()
            assert heard == [True] and not module.ready()
    finally:
        await module.stop()


class _Allocator:
    def cpuset_for(self, pod_uid: str, container_name: str) -> frozenset[int] | None:
        return None

    def on_allocations_changed(self, listener) -> None:
        return None

    def admit_now(self, pod, container=None) -> None:
        return None


def test_an_allocator_on_the_ports_reaches_the_engine(tmp_path: Path) -> None:
    config = parse_args(["--sys-root-dir", str(tmp_path), "--cgroup-root-dir", str(tmp_path)])
    host = Host(tmp_path, tmp_path, tmp_path)
    store = PodStore(NodeInfo("node"))
    allocator = _Allocator()
    module = RuntimeHooksModule(config, HostFacts(host), store, NriFeed(store), executor_without_cgroups(host),
                                CollectorRegistry(), ports=Ports(admitter=allocator, cpusets=allocator))
    assert module.engine.index.provider is allocator
