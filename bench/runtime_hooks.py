"""Runtime hooks: CreateContainer handler time with 1,000 pods known, and one
reconcile pass over 1,000 containers in steady state.

    python -m bench.runtime_hooks [--calls 5000] [--pods 1000] [--skip-reconcile] [--fresh-names]

create: the test peer calls CreateContainer on koordlet's NRI plugin (full
  policy: BatchResource, Katalyst map, CPUSetAllocator, GroupIdentity; the
  states informer holding 1,000 pods) through nri.Stub over a real unix socket,
  peer and plugin on one event loop. Floor: the same round trip, same stub, to
  an empty handler, in the same run. Also the handler alone (no wire), for a
  container name the pod had before (the answer is reused) and for a new name
  (every answer prepared after RunPodSandbox: BE pods' for each name their annotation
  sizes and one for any other name, as these new names are; the others' one answer).
  The hook histograms are registered, as in the daemon. Round trips re-create each
  pod's `main`; with --fresh-names every call is a new container name.
reconcile (root, real cgroup v1): 1,000 pods x 1 container under a
  koordlet-bench-<hex8> tree (removed afterwards), CPU ms (process_time) of
  a pass triggered by a change (cached), of an asked-for full pass (every file read
  back, as after an NRI resync) and of the periodic pass (one turn's share of the
  pods' files read back: 1/(force_update_after // interval)).
  Floors: the executor's cached batch of the same updaters alone; raw pread of
  the same files on kept fds; and, since the daemon's fd budget (512) rules out
  keeping thousands open, one C batch (system.file_io.FileBatch) that opens,
  reads and closes each of them; for the periodic pass, the cached batch plus one
  C batch of as many files as it read back (after one whole rotation, the pass and
  this floor called in turns, so both meet the same moment of the kernel's costs).
reconnect: the runtime peer goes away for 0.5 s / 3 s; time from its socket
  returning to the stub being synchronized again (the stub's reconnect policy).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

from prometheus_client import CollectorRegistry

from koordlet.daemon.logs import configure_logging
from koordlet.runtimehooks import nri_convert, nri_plugin
from koordlet.runtimehooks.engine import HookEngine
from koordlet.runtimehooks.hook_config import HookConfig
from koordlet.runtimehooks.hooks import HOOKS
from koordlet.runtimehooks.nri_plugin import KoordletNriPlugin
from koordlet.runtimehooks.reconciler import Reconciler
from koordlet.statesinformer.model import NodeInfo
from koordlet.statesinformer.nri_feed import ContainerChange, NriFeed, SandboxChange
from koordlet.statesinformer.store import PodStore
from nri.events import PLUGIN_SERVICE, Event
from nri.loop import loop_factory, uvloop_available
from nri.stub import Stub, StubConfig
from nri.testing import RuntimePeer
from proto.nri.pkg.api.v1alpha1 import api_pb2 as api
from resourceexecutor import ResourceExecutor, executor_without_cgroups
from system.cgroup_files import CgroupFiles
from system.cgroup_version import detect_hierarchy
from system.file_io import FileBatch
from system.host import Host
from tests.koordlet.runtimehooks.fixtures import batch, ext_spec
from tests.koordlet.runtimehooks.nri_pods import nri_container, nri_pod

WARMUP = 300
GAP_S = 0.001  # between round trips (see _calls)


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def workload(count: int, root: str = "") -> list[tuple[api.PodSandbox, api.Container]]:
    """Half BE with batch resources, 40 % LS, 10 % LSR bound to one CPU each."""
    out = []
    for i in range(count):
        uid = "%08x-0000-4000-8000-%012x" % (i, i)
        kind = i % 10
        if kind < 5:
            pod = nri_pod(uid, "BE", {"node.koordinator.sh/extended-resource-spec": ext_spec(main=batch("500", "1Gi"))},
                          root=root)
        elif kind < 9:
            pod = nri_pod(uid, "LS", root=root)
        else:
            pod = nri_pod(uid, "LSR", {"scheduling.koordinator.sh/resource-status": '{"cpuset": "%d"}' % (i % 64)},
                          root=root)
        out.append((pod, nri_container(pod, "main")))
    return out


def known(pods, config: HookConfig) -> tuple[PodStore, HookEngine]:
    store = PodStore(NodeInfo("node"))
    feed = NriFeed(store)
    engine = HookEngine(store, config, HOOKS, registry=CollectorRegistry())  # hook timings, as the daemon
    engine.start()
    for pod, ctr in pods:
        feed.nri_pod_event(SandboxChange.RUN, pod)
        feed.nri_container_event(ContainerChange.CREATED, pod, ctr)
    return feed, engine


class EmptyPlugin:
    def create_container(self, pod: api.PodSandbox, container: api.Container) -> None:
        return None


async def _calls(peer: RuntimePeer, requests: list[api.CreateContainerRequest], calls: int) -> list[float]:
    (peer_plugin,) = await peer.wait_plugins(1, timeout=60)
    call = peer_plugin.client.call
    samples = []
    for i in range(WARMUP + calls):
        request = requests[i % len(requests)]
        t0 = time.perf_counter_ns()
        await call(PLUGIN_SERVICE, "CreateContainer", request, api.CreateContainerResponse, 2.0)
        if i >= WARMUP:
            samples.append((time.perf_counter_ns() - t0) / 1000.0)
        # containerd spends ~4.5 ms of its own per CRI CreateContainer (machine.md), so calls
        # never come back to back; the pause lets the deferred informer feed run untimed
        await asyncio.sleep(GAP_S)
    return samples


def knowing(path: Path, pods) -> RuntimePeer:
    """A peer whose Synchronize lists `pods` ((sandbox, container) pairs), as containerd's
    lists what runs: the plugin keeps them. A peer with nothing to list would tell the
    plugin they are gone, and every later call would take the unknown-pod path."""
    peer = RuntimePeer(path)
    for pod, ctr in pods:
        peer.state.pods[pod.id] = pod
        peer.state.containers[ctr.id] = ctr
    return peer


async def round_trips(path: Path, plugin: object, pods, requests: list[api.CreateContainerRequest],
                      calls: int) -> list[float]:
    async with knowing(path, pods) as peer:
        stub = Stub(plugin, name="koordlet_nri", index="00", config=StubConfig(socket_path=str(path)), environ={})
        task = await stub.start(timeout=10)
        try:
            return await _calls(peer, requests, calls)
        finally:
            await stub.stop()
            await asyncio.gather(task, return_exceptions=True)


def create_requests(pods, calls: int, fresh_names: bool) -> list[api.CreateContainerRequest]:
    """One request per pod re-creating its `main`, or one per call, each a container name
    its pod never had."""
    if not fresh_names:
        return [api.CreateContainerRequest(pod=pod, container=ctr) for pod, ctr in pods]
    requests = []
    for i in range(WARMUP + calls):
        pod, _ = pods[i % len(pods)]
        requests.append(api.CreateContainerRequest(pod=pod, container=nri_container(pod, "c%d" % i)))
    return requests


async def subprocess_round_trips(path: Path, kind: str, pods,
                                 requests: list[api.CreateContainerRequest], calls: int) -> list[float]:
    """The plugin in its own process, as deployed: the informer feed it defers runs
    there while the runtime already has its answer."""
    async with knowing(path, pods) as peer:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bench.runtime_hooks", "--serve-plugin", str(path), "--kind", kind,
            "--pods", str(len(pods)))
        try:
            return await _calls(peer, requests, calls)
        finally:
            proc.terminate()
            await proc.wait()


class EveryCreateEvent(KoordletNriPlugin):
    """Our plugin, also subscribed to the other events containerd calls inside CRI
    CreateContainer (no-op handlers), as a plugin with a wider event set would be."""

    def post_create_container(self, pod: api.PodSandbox, container: api.Container) -> None:
        return None

    def validate_container_adjustment(self, request: api.ValidateContainerAdjustmentRequest) -> bool:
        return True


async def cri_create_path(path: Path, plugin: KoordletNriPlugin, pods, calls: int) -> list[float]:
    """What containerd does for one CRI CreateContainer: CreateContainer (+ Validate when
    subscribed) then PostCreateContainer, each to every subscribed plugin."""
    async with knowing(path, pods) as peer:
        stub = Stub(plugin, name="koordlet_nri", index="00", config=StubConfig(socket_path=str(path)), environ={})
        plugin.stub = stub
        task = await stub.start(timeout=10)
        try:
            await peer.wait_plugins(1, timeout=10)
            samples = []
            for i in range(WARMUP + calls):
                pod, ctr = pods[i % len(pods)]
                t0 = time.perf_counter_ns()
                created = await peer.create_container(pod, ctr)
                await peer.container_event(Event.POST_CREATE_CONTAINER, pod, created)
                if i >= WARMUP:
                    samples.append((time.perf_counter_ns() - t0) / 1000.0)
                await asyncio.sleep(GAP_S)
            return samples
        finally:
            plugin.stub = None
            await stub.stop()
            await asyncio.gather(task, return_exceptions=True)


def bench_event_set(pods_count: int, calls: int) -> None:
    config = HookConfig(node_cpus=frozenset(range(64)))
    pods = workload(pods_count)
    results = {}
    for name, cls in (("ours (Create only on this path)", KoordletNriPlugin),
                      ("+ PostCreate + Validate", EveryCreateEvent)):
        feed, engine = known(pods, config)
        with tempfile.TemporaryDirectory(prefix="rh-bench-", dir="/tmp") as tmp:
            runner = asyncio.Runner(loop_factory=loop_factory(uvloop_available()))
            try:
                results[name] = runner.run(cri_create_path(Path(tmp) / "e.sock", cls(engine, feed, executor_without_cgroups()),
                                                           pods, calls))
            finally:
                runner.close()
    print("event set: the NRI part of one CRI CreateContainer through the peer (model applied), one loop")
    for name, samples in results.items():
        print("  %-34s p50 %6.1f us  p99 %7.1f us" % (name, pct(samples, 0.5), pct(samples, 0.99)))


def serve_plugin(path: str, kind: str, pods_count: int) -> None:
    async def serve() -> None:
        plugin: object = EmptyPlugin()
        if kind == "full":
            pods = workload(pods_count)
            feed, engine = known(pods, HookConfig(node_cpus=frozenset(range(64))))
            plugin = KoordletNriPlugin(engine, feed, executor_without_cgroups())
            for pod, _ in pods:
                await plugin.run_pod_sandbox(pod)
        await Stub(plugin, name="koordlet_nri", index="00", config=StubConfig(socket_path=path), environ={}).run()

    asyncio.Runner(loop_factory=loop_factory(uvloop_available())).run(serve())


async def _run_pods(plugin: KoordletNriPlugin, pods: list[api.PodSandbox]) -> None:
    """RunPodSandbox of each pod, and the answers it prepares after its own."""
    for pod in pods:
        await plugin.run_pod_sandbox(pod)
        await asyncio.sleep(0)


async def _direct_calls(plugin: KoordletNriPlugin, requests: list[api.CreateContainerRequest],
                        calls: int) -> list[float]:
    """The handler called directly; the informer feed it defers runs between calls, untimed."""
    samples = []
    for i in range(WARMUP + calls):
        request = requests[i % len(requests)]
        t0 = time.perf_counter_ns()
        plugin.create_container(request.pod, request.container)
        if i >= WARMUP:
            samples.append((time.perf_counter_ns() - t0) / 1000.0)
        await asyncio.sleep(0)
    return samples


def bench_create(pods_count: int, calls: int, fresh_names: bool) -> None:
    config = HookConfig(node_cpus=frozenset(range(64)))
    pods = workload(pods_count)

    def fresh_plugin() -> KoordletNriPlugin:
        """1,000 pods known, each through RunPodSandbox (where answers are prepared)."""
        feed, engine = known(pods, config)
        plugin = KoordletNriPlugin(engine, feed, executor_without_cgroups())
        asyncio.run(_run_pods(plugin, [pod for pod, _ in pods]))
        return plugin

    plugin = fresh_plugin()
    engine = plugin.engine
    requests = create_requests(pods, calls, fresh_names)
    direct = asyncio.run(_direct_calls(plugin, create_requests(pods, calls, False), calls))
    direct_new = asyncio.run(_direct_calls(fresh_plugin(), create_requests(pods, calls, True), calls))
    policy_only = []
    infos = [(engine.states.pod(pod.uid), ctr.id) for pod, ctr in pods]
    for i in range(WARMUP + calls):
        info, ctr_id = infos[i % len(infos)]
        t0 = time.perf_counter_ns()
        spec = engine.decide(info, info.container_by_id(ctr_id), "create_container")
        nri_convert.adjustment(spec, 1, nri_plugin._cpu_list)
        if i >= WARMUP:
            policy_only.append((time.perf_counter_ns() - t0) / 1000.0)
    flavours = [True, False] if uvloop_available() else [False]
    print("create: %d pods known, %d CreateContainer calls (after %d warm-up), round trips %.0f ms apart, %s"
          % (pods_count, calls, WARMUP, GAP_S * 1000,
             "every call a new container name" if fresh_names else "each pod's main re-created"))
    print("  handler alone (no wire)     p50 %6.1f us  p99 %6.1f us  (name seen before; the informer feed runs right after)"
          % (pct(direct, 0.5), pct(direct, 0.99)))
    sized_by_name = [t for j, t in enumerate(direct_new) if (WARMUP + j) % len(pods) % 10 < 5]
    others = [t for j, t in enumerate(direct_new) if (WARMUP + j) % len(pods) % 10 >= 5]
    print("  handler alone, new names    p50 %6.1f us  p99 %6.1f us  (BE, not in their annotation: prepared) |"
          " p50 %6.1f us  p99 %6.1f us  (LS/LSR: prepared at RunPodSandbox)"
          % (pct(sized_by_name, 0.5), pct(sized_by_name, 0.99), pct(others, 0.5), pct(others, 0.99)))
    print("  policy + adjustment alone   p50 %6.1f us  p99 %6.1f us  (4 hooks timed, observed inline; spec -> ContainerAdjustment)"
          % (pct(policy_only, 0.5), pct(policy_only, 0.99)))
    for use_uvloop in flavours:
        with tempfile.TemporaryDirectory(prefix="rh-bench-", dir="/tmp") as tmp:
            runner = asyncio.Runner(loop_factory=loop_factory(use_uvloop))
            try:
                full = runner.run(round_trips(Path(tmp) / "a.sock", fresh_plugin() if fresh_names else plugin,
                                              pods, requests, calls))
                floor = runner.run(round_trips(Path(tmp) / "b.sock", EmptyPlugin(), pods, requests, calls))
            finally:
                runner.close()
        name = "uvloop" if use_uvloop else "asyncio"
        print("  %-7s one loop  full policy round trip p50 %6.1f us  p99 %6.1f us | floor (empty handler) p50 %6.1f us"
              "  p99 %6.1f us | ratio p50 %.2fx  p99 %.2fx | added p50 %5.1f us  p99 %5.1f us"
              % (name, pct(full, 0.5), pct(full, 0.99), pct(floor, 0.5), pct(floor, 0.99),
                 pct(full, 0.5) / pct(floor, 0.5), pct(full, 0.99) / pct(floor, 0.99),
                 pct(full, 0.5) - pct(floor, 0.5), pct(full, 0.99) - pct(floor, 0.99)))
    with tempfile.TemporaryDirectory(prefix="rh-bench-", dir="/tmp") as tmp:
        runner = asyncio.Runner(loop_factory=loop_factory(uvloop_available()))
        try:
            full = runner.run(subprocess_round_trips(Path(tmp) / "c.sock", "full", pods, requests, calls))
            floor = runner.run(subprocess_round_trips(Path(tmp) / "d.sock", "empty", pods, requests, calls))
        finally:
            runner.close()
    print("  plugin in its own process:  full policy round trip p50 %6.1f us  p99 %6.1f us | floor (empty handler) "
          "p50 %6.1f us  p99 %6.1f us | ratio p50 %.2fx  p99 %.2fx | added p50 %5.1f us  p99 %5.1f us"
          % (pct(full, 0.5), pct(full, 0.99), pct(floor, 0.5), pct(floor, 0.99), pct(full, 0.5) / pct(floor, 0.5),
             pct(full, 0.99) / pct(floor, 0.99), pct(full, 0.5) - pct(floor, 0.5), pct(full, 0.99) - pct(floor, 0.99)))


def bench_reconcile(pods_count: int, runs: int) -> None:
    if os.geteuid() != 0:
        print("reconcile: skipped (needs root for real cgroups)")
        return
    host = Host()
    roots = [host.cgroup(c) for c in ("cpu", "cpuset", "memory")]
    name = "koordlet-bench-%s" % uuid.uuid4().hex[:8]
    files = CgroupFiles(host, detect_hierarchy(host))
    node_cpus = files.read("cpuset.cpus", "")
    pods = workload(pods_count, root=name)
    made: list[Path] = []
    try:
        for root in roots:
            for rel in (name, name + "/kubepods", name + "/kubepods/besteffort", name + "/kubepods/burstable"):
                (root / rel).mkdir()
                made.append(root / rel)
                _fill_cpuset(root / rel)
            for pod, ctr in pods:
                for rel in (pod.linux.cgroup_parent.strip("/"), ctr.linux.cgroups_path.strip("/")):
                    (root / rel).mkdir()
                    made.append(root / rel)
                    _fill_cpuset(root / rel)
        # bound CPUs must exist on this host: LSR pods take cpu 0 here
        config = HookConfig(node_cpus=node_cpus)
        pods = [(p, c) for p, c in pods]
        for pod, _ in pods:
            if "scheduling.koordinator.sh/resource-status" in pod.annotations:
                pod.annotations["scheduling.koordinator.sh/resource-status"] = '{"cpuset": "%d"}' % min(node_cpus)
        feed, engine = known(pods, config)
        executor = ResourceExecutor(files)
        reconciler = Reconciler(engine, executor, 10.0)
        first = reconciler.reconcile_once(full=True)
        assert first is not None
        print("reconcile: %d pods, %d containers, %d cgroup files per pass; first pass wrote %d (problems %d)"
              % (first.pods, first.pods, first.updates, first.writes, first.problems))
        def every_pod_changed_pass() -> None:
            reconciler._plans_changed(None)  # as after a rule change: every pod, cache trusted
            reconciler.reconcile_once(full=False)

        cached = _cpu_ms(runs, every_pod_changed_pass)
        full = _cpu_ms(runs, lambda: reconciler.reconcile_once(full=True))
        rotation: list[int] = []  # files each periodic pass read back
        for _ in range(reconciler.turns):  # one whole rotation first: how many files a pass reads back
            rotation.append(reconciler.reconcile_once(full=True, rotating=True).checked)
        levels = [[u for _, pod_u, _ in reconciler._built.values() for u in pod_u],
                  [u for _, _, ctr_u in reconciler._built.values() for u in ctr_u]]
        executor_rc = _cpu_ms(runs, lambda: executor.update_levels(levels, use_cache=False))
        updaters = [u for _, pod_u, ctr_u in reconciler._built.values() for u in pod_u + ctr_u]
        floor_cached = _cpu_ms(runs, lambda: executor.update_batch(updaters))
        # the daemon may not keep these open (fd budget): a batch that opens, reads and
        # closes each file in C is the floor of any pass that reads them all
        open_read_close = _cpu_ms(runs, FileBatch([u.path for u in updaters]).read)
        # a periodic pass reads back one turn's share: the floor is the cached batch of every
        # updater plus one C batch reading as many files as a pass did on average
        share = FileBatch([u.path for u in updaters[:round(sum(rotation) / len(rotation))]])
        # pass and floor taken in turns, so that both meet the same moment of the kernel's read costs
        periodic, periodic_floor = _cpu_ms_alternated(
            runs, lambda: rotation.append(reconciler.reconcile_once(full=True, rotating=True).checked),
            lambda: (executor.update_batch(updaters), share.read()))
        fds = [os.open(u.path, os.O_RDONLY) for u in updaters]
        try:
            floor_read = _cpu_ms(runs, lambda: [os.pread(fd, 64, 0) for fd in fds])
        finally:
            for fd in fds:
                os.close(fd)
        print("  every-pod pass, cache trusted     cpu p50 %6.2f ms  p99 %6.2f ms | floor: executor cached batch "
              "of the same %d updaters p50 %6.2f ms | ratio %.2fx"
              % (pct(cached, 0.5), pct(cached, 0.99), len(updaters), pct(floor_cached, 0.5),
                 pct(cached, 0.5) / pct(floor_cached, 0.5)))
        print("  asked-for full drift pass         cpu p50 %6.2f ms  p99 %6.2f ms | floor: raw pread of the same "
              "%d files p50 %6.2f ms | ratio %.2fx"
              % (pct(full, 0.5), pct(full, 0.99), len(fds), pct(floor_read, 0.5), pct(full, 0.5) / pct(floor_read, 0.5)))
        print("  asked-for full drift pass         vs open+read+close of the same files in one C batch p50 %6.2f ms "
              "| ratio %.2fx" % (pct(open_read_close, 0.5), pct(full, 0.5) / pct(open_read_close, 0.5)))
        print("  periodic pass (1/%d rotation)     cpu p50 %6.2f ms  p99 %6.2f ms | reads back %d-%d files a pass "
              "(mean %.0f) | floor: executor cached batch + one C batch of as many files p50 %6.2f ms | ratio %.2fx "
              "| vs the full drift pass %.2fx"
              % (reconciler.turns, pct(periodic, 0.5), pct(periodic, 0.99), min(rotation), max(rotation),
                 sum(rotation) / len(rotation), pct(periodic_floor, 0.5), pct(periodic, 0.5) / pct(periodic_floor, 0.5),
                 pct(periodic, 0.5) / pct(full, 0.5)))
        print("  (for comparison: the executor's own read-compare, update_levels(use_cache=False), cpu p50 %6.2f ms)"
              % pct(executor_rc, 0.5))
        executor.close()
    finally:
        for path in reversed(made):
            try:
                path.rmdir()
            except OSError as exc:
                print("cleanup: %s: %s" % (path, exc), file=sys.stderr)


async def _reconnect_once(path: Path, down_for: float) -> float:
    async with RuntimePeer(path) as peer:
        stub = Stub(EmptyPlugin(), name="koordlet_nri", index="00", config=StubConfig(socket_path=str(path)),
                    environ={})
        task = await stub.start(timeout=10)
        try:
            await peer.wait_plugins(1, timeout=10)
            await peer.stop()
            await asyncio.sleep(down_for)
            await peer.start()
            returned = time.monotonic()
            await peer.wait_plugins(1, timeout=30)
            return time.monotonic() - returned
        finally:
            await stub.stop()
            await asyncio.gather(task, return_exceptions=True)


def bench_reconnect(downs: tuple[float, ...] = (0.5, 3.0)) -> None:
    """Time from the runtime's socket coming back to the plugin synchronized again."""
    with tempfile.TemporaryDirectory(prefix="rh-bench-", dir="/tmp") as tmp:
        for down_for in downs:
            took = asyncio.run(_reconnect_once(Path(tmp) / "r.sock", down_for))
            print("reconnect: runtime away %.1f s -> plugin synchronized %.2f s after the socket returned"
                  % (down_for, took))


def _fill_cpuset(directory: Path) -> None:
    for key in ("cpuset.cpus", "cpuset.mems"):
        own = directory / key
        if own.is_file() and not own.read_text().strip():
            own.write_text((directory.parent / key).read_text().strip())


def _cpu_ms(runs: int, fn) -> list[float]:
    out = []
    for _ in range(runs):
        t0 = time.process_time()
        fn()
        out.append((time.process_time() - t0) * 1000.0)
    return out


def _cpu_ms_alternated(runs: int, fn, floor) -> tuple[list[float], list[float]]:
    """_cpu_ms of fn and of its floor, one call of each in turn."""
    measured: list[float] = []
    floors: list[float] = []
    for _ in range(runs):
        measured += _cpu_ms(1, fn)
        floors += _cpu_ms(1, floor)
    return measured, floors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--skip-reconcile", action="store_true")
    parser.add_argument("--fresh-names", action="store_true",
                        help="every CreateContainer a container name new to its pod (no answer reused)")
    parser.add_argument("--skip-create", action="store_true")
    parser.add_argument("--serve-plugin", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--kind", default="full", help=argparse.SUPPRESS)
    args = parser.parse_args()
    configure_logging("warning", "json")  # as the daemon does: debug lines filtered, loggers cached
    if args.serve_plugin:
        serve_plugin(args.serve_plugin, args.kind, args.pods)
        return
    if not args.skip_create:
        bench_create(args.pods, args.calls, args.fresh_names)
        bench_event_set(args.pods, min(args.calls, 2000))
    if not args.skip_reconcile:
        bench_reconcile(args.pods, args.runs)
    bench_reconnect()


if __name__ == "__main__":
    main()
