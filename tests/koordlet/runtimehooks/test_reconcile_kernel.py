"""The bypass transport on real cgroup v1 test cgroups: it agrees with NRI mode, an
asked-for full pass repairs drift at once, and the periodic passes within one
force-update window of the executor's cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from koordlet.runtimehooks.engine import HookEngine
from koordlet.runtimehooks.hook_config import HookConfig
from koordlet.runtimehooks.hooks import HOOKS
from koordlet.runtimehooks.nri_plugin import KoordletNriPlugin
from koordlet.runtimehooks.reconciler import Reconciler
from koordlet.statesinformer.model import NodeInfo
from koordlet.statesinformer.nri_feed import ContainerChange, NriFeed, SandboxChange
from koordlet.statesinformer.store import PodStore
from nri.stub import Stub, StubConfig
from nri.testing import RuntimePeer
from resourceexecutor import KeptFdFileIO, ResourceExecutor
from system.cgroup_files import CgroupFiles
from system.cgroup_version import detect_hierarchy
from system.host import Host
from tests.koordlet.runtimehooks.fixtures import batch, ext_spec
from tests.koordlet.runtimehooks.nri_pods import nri_container, nri_pod
from tests.nri.conftest import socket_path  # noqa: F401  (fixture)
from tests.polling import until
from tests.resourceexecutor.conftest import FakeClock
from tests.system.cgroup_sandbox import SandboxUnavailable, cgroup_sandbox, make_child

pytestmark = pytest.mark.kernel

GiB = 1 << 30
ANNOT = "node.koordinator.sh/extended-resource-spec"
STATUS = "scheduling.koordinator.sh/resource-status"
CONTROLLERS = ("cpu", "cpuset", "memory")
FIELDS = ("cpu.shares", "cpu.cfs_quota_us", "memory.limit_in_bytes", "cpuset.cpus")


@pytest.fixture
def sandbox():
    try:
        with cgroup_sandbox(controllers=CONTROLLERS, unified=False) as name:
            yield name
    except SandboxUnavailable as exc:
        pytest.skip(str(exc))


def node_cpus() -> frozenset[int]:
    return CgroupFiles(Host(), detect_hierarchy(Host())).read("cpuset.cpus", "")


def workload(root: str):
    """(pod, [(container, kubelet's shares, quota, memory)]) as kubelet would ask."""
    be = nri_pod("be1", "BE", {ANNOT: ext_spec(a=batch("500", "1Gi"), b={"requests": {"kubernetes.io/batch-cpu": "200"}})},
                 root=root)
    be_plain = nri_pod("be2", "BE", root=root)
    ls = nri_pod("ls1", "LS", root=root)
    lsr = nri_pod("lsr1", "LSR", {STATUS: '{"cpuset": "%d"}' % max(node_cpus())}, root=root)
    return [
        (be, [nri_container(be, "a"), nri_container(be, "b")]),
        (be_plain, [nri_container(be_plain, "main")]),
        (ls, [nri_container(ls, "main", shares=512, quota=50_000, memory=GiB)]),
        (lsr, [nri_container(lsr, "main", shares=1024, quota=100_000, memory=2 * GiB)]),
    ]


def make_cgroups(pods, roots: list[Path]) -> None:
    """What kubelet and runc do before us: the dirs, with kubelet's values written."""
    made: set[str] = set()
    for pod, containers in pods:
        parts = pod.linux.cgroup_parent.strip("/").split("/")
        for depth in range(2, len(parts) + 1):
            rel = "/".join(parts[:depth])
            if rel not in made:
                make_child(Host(), rel, roots)
                made.add(rel)
        for ctr in containers:
            rel = ctr.linux.cgroups_path.strip("/")
            make_child(Host(), rel, roots)
            res = ctr.linux.resources
            cpu = roots[0] / rel
            (cpu / "cpu.shares").write_text(str(res.cpu.shares.value))
            if res.cpu.HasField("quota"):
                (cpu / "cpu.cfs_quota_us").write_text(str(res.cpu.quota.value))
            if res.memory.HasField("limit"):
                (roots[2] / rel / "memory.limit_in_bytes").write_text(str(res.memory.limit.value))


def model_values(ctr) -> tuple:
    """A container in NRI mode as the kernel would hold it (unset = the cgroup default)."""
    res = ctr.linux.resources
    cpus = res.cpu.cpus
    return (res.cpu.shares.value, res.cpu.quota.value if res.cpu.HasField("quota") else -1,
            res.memory.limit.value if res.memory.HasField("limit") else -1, cpus)


def kernel_values(files: CgroupFiles, cgroup_dir: str) -> tuple:
    from system.cpuset import format_cpuset

    shares, quota, memory, cpus = (files.read(name, cgroup_dir) for name in FIELDS)
    return shares, quota, memory, format_cpuset(cpus)


def bypass_setup(pods, config, **executor_options):
    store = PodStore(NodeInfo("node"))
    feed = NriFeed(store)
    for pod, containers in pods:
        feed.nri_pod_event(SandboxChange.RUN, pod)
        for ctr in containers:
            feed.nri_container_event(ContainerChange.CREATED, pod, ctr)
    engine = HookEngine(store, config, HOOKS)
    engine.start()
    files = CgroupFiles(Host(), detect_hierarchy(Host()))
    executor = ResourceExecutor(files, **executor_options)
    return engine, executor, files


async def test_nri_mode_and_reconcile_agree_on_real_cgroups(sandbox, socket_path) -> None:
    config = HookConfig(node_cpus=node_cpus())
    pods = workload(sandbox)
    host = Host()
    make_cgroups(pods, [host.cgroup(c) for c in CONTROLLERS])  # kubelet made them before CRI calls
    files = CgroupFiles(host, detect_hierarchy(host))
    be_pod = pods[0][0].linux.cgroup_parent.strip("/")
    # NRI mode, through the peer's model of containerd; pod cgroups through the executor
    peer = RuntimePeer(socket_path)
    await peer.start()
    nri_store = PodStore(NodeInfo("node"))
    nri_feed = NriFeed(nri_store)
    nri_engine = HookEngine(nri_store, config, HOOKS)
    nri_engine.start()
    nri_executor = ResourceExecutor(files)
    plugin = KoordletNriPlugin(nri_engine, nri_feed, nri_executor)
    stub = Stub(plugin, name="koordlet_nri", index="00", config=StubConfig(socket_path=str(socket_path)))
    plugin.stub = stub
    await stub.start(timeout=5)
    try:
        for pod, _ in pods:
            await peer.run_pod_sandbox(pod)
        # RunPodSandbox wrote the pod level: NRI cannot; the sum of the annotation's containers
        assert (files.read("cpu.shares", be_pod), files.read("cpu.cfs_quota_us", be_pod),
                files.read("memory.limit_in_bytes", be_pod)) == (716, -1, -1)
        for pod, containers in pods:
            for ctr in containers:
                await peer.create_container(pod, ctr)
        # the unsolicited updates after the LSR pod took its CPU: the follow-ups that start
        # them, then the task that sends them until none is pending
        await until(lambda: plugin.follow_ups.pending == 0
                    and (plugin._flush_task is None or plugin._flush_task.done()))
        nri_result = {c.id: model_values(peer.state.containers[c.id]) for _, cs in pods for c in cs}
    finally:
        await stub.stop()
        await peer.stop()
        nri_executor.close()
    # bypass mode, on the real kernel (container cgroups still hold kubelet's values)
    engine, executor, files = bypass_setup(pods, config)
    try:
        result = Reconciler(engine, executor, 10.0).reconcile_once(full=True)
        assert result is not None and result.problems == 0 and result.writes > 0
        kernel_result = {c.id: kernel_values(files, c.linux.cgroups_path) for _, cs in pods for c in cs}
    finally:
        executor.close()
    assert kernel_result == nri_result
    be_a = pods[0][1][0].id
    lsr_cpu = str(max(node_cpus()))
    assert nri_result[be_a][:3] == (512, 50_000, GiB)  # koordinator's arithmetic, not ours re-run
    assert nri_result[pods[2][1][0].id][:3] == (512, 50_000, GiB)  # LS keeps what kubelet asked
    assert nri_result[pods[3][1][0].id][3] == lsr_cpu
    assert (files.read("cpu.shares", be_pod), files.read("cpu.cfs_quota_us", be_pod),
            files.read("memory.limit_in_bytes", be_pod)) == (716, -1, -1)


class CountingIO(KeptFdFileIO):
    """The executor's real kept-fd IO, counting what it reads: the drift read-back
    (`read_many` and the kept readers, one C batch each) and the executor's own
    one-file reads."""

    def __init__(self) -> None:
        super().__init__()
        self.read_back: list[str] = []
        self.single_reads = 0

    def read_many(self, paths):
        self.read_back.extend(paths)
        return super().read_many(paths)

    def kept_reader(self, paths):
        read = super().kept_reader(paths)

        def counted():
            self.read_back.extend(paths)
            return read()
        return counted

    def read(self, path: str) -> str:
        self.single_reads += 1
        return super().read(path)


def be_workload(root: str, count: int):
    """`count` BE pods, one container each, whose batch annotation gives every container
    cgroup our own cpu.shares (512)."""
    pods = []
    for i in range(count):
        pod = nri_pod("be-%02d" % i, "BE", {ANNOT: ext_spec(main=batch("500", "1Gi"))}, root=root)
        pods.append((pod, [nri_container(pod, "main")]))
    return pods


async def test_an_asked_for_full_pass_repairs_every_drifted_file_at_once(sandbox) -> None:
    """trigger(full=True) (start-up, an NRI resync) reads back every file: all the drift
    it finds is repaired by that one pass, not over a rotation."""
    config = HookConfig(node_cpus=node_cpus())
    pods = workload(sandbox)
    host = Host()
    make_cgroups(pods, [host.cgroup(c) for c in CONTROLLERS])
    engine, executor, files = bypass_setup(pods, config)
    reconciler = Reconciler(engine, executor, 3600.0)  # no periodic pass during the test
    reconciler.start()
    try:
        targets = [ctr.linux.cgroups_path.strip("/") for ctr in (pods[0][1][0], pods[0][1][1])]
        await until(lambda: reconciler.passes > 0)
        assert [files.read("cpu.shares", t) for t in targets] == [512, 204]
        for target in targets:
            (host.cgroup("cpu") / target / "cpu.shares").write_text("4096")
        # a cached pass alone would not look: the executor vouches for what it wrote
        reconciler._plans_changed(None)  # every pod marked changed: a cached pass still does not look
        assert (await reconciler._reconcile_off_loop(False, False)).writes == 0
        assert [files.read("cpu.shares", t) for t in targets] == [4096, 4096]
        passes = reconciler.passes
        reconciler.trigger(full=True)
        await until(lambda: reconciler.passes > passes and reconciler.last.full)
        assert [files.read("cpu.shares", t) for t in targets] == [512, 204]
        assert not reconciler.last.rotating and reconciler.last.drifted == 2 and reconciler.last.writes == 2
    finally:
        await reconciler.stop()
        executor.close()


def test_periodic_passes_repair_drift_within_one_force_update_window(sandbox) -> None:
    """Each periodic pass reads back only its turn's share of the pods' files; within
    force_update_after / interval passes every file has been read once and every drifted
    value repaired. The files found unchanged are dated again, so the executor reads none
    of them itself in the next window; it reads a drifted one again before rewriting it."""
    pods = be_workload(sandbox, 24)
    host = Host()
    make_cgroups(pods, [host.cgroup(c) for c in CONTROLLERS])
    clock = FakeClock()
    io = CountingIO()
    engine, executor, files = bypass_setup(pods, HookConfig(node_cpus=node_cpus()), io=io, clock=clock)
    interval = 10.0
    reconciler = Reconciler(engine, executor, interval)
    turns = reconciler.turns
    assert turns == int(executor.cache.policy.force_update_after // interval) > 1
    try:
        first = reconciler.reconcile_once(full=True)  # start-up: asked for, writes everything
        assert first.problems == 0 and first.writes > 0
        vouched = len(executor.cache)  # every file the first pass wrote or found right
        targets = [ctr.linux.cgroups_path.strip("/") for _, (ctr,) in pods]
        for target in targets:
            (host.cgroup("cpu") / target / "cpu.shares").write_text("4096")
        for window in range(2):
            io.read_back.clear()
            io.single_reads = 0
            per_pass, drifted = [], 0
            for _ in range(turns):
                clock.now += interval
                result = reconciler.reconcile_once(full=True, rotating=True)
                assert result.rotating and result.problems == 0
                per_pass.append(result.checked)
                drifted += result.drifted
            # one window: every file read back once, a pass only about its share; a drifted
            # file once more, by the batch that rewrites it
            assert len(set(io.read_back)) == vouched
            assert len(io.read_back) + io.single_reads == vouched + drifted
            assert max(per_pass) < vouched / 2
            if window == 0:
                assert drifted == len(targets)
                assert all(files.read("cpu.shares", t) == 512 for t in targets)
            else:
                assert drifted == 0 and io.single_reads == 0
    finally:
        executor.close()
