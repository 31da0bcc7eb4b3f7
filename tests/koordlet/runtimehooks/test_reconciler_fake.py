"""The reconciler on fake cgroup trees: kube-QoS dirs and pod-level group identity on an
Anolis-like v1 host, NRI mode leaving containers to NRI between full passes, and cgroup v2."""

from __future__ import annotations

import asyncio
import itertools
import threading
from pathlib import Path

from koordlet.apis.qos import KoordQoSClass
from koordlet.runtimehooks.engine import HookEngine
from koordlet.runtimehooks.hooks import HOOKS
from koordlet.runtimehooks.module import probe_host, qos_dirs_of
from koordlet.runtimehooks.reconciler import PODS_PER_PASS_STEP, STEP_SECONDS, PassResult, Reconciler
from koordlet.runtimehooks.slo_rules import hook_config_from_slo
from koordlet.slo.spec import parse_node_slo_spec
from koordlet.statesinformer.api import StaticStates
from koordlet.statesinformer.model import NodeInfo
from koordlet.util.host_facts import HostFacts
from resourceexecutor import ResourceExecutor
from tests.koordlet.runtimehooks.fixtures import batch, ext_spec, make_pod
from tests.resourceexecutor.conftest import FakeTreeIO
from tests.system.fake_trees import add_cgroup, build_topology_tree, build_v1_tree, build_v2_tree, set_cgroup_file

ANNOT = "node.koordinator.sh/extended-resource-spec"


def setup(tmp_path: Path, tree, **kw):
    host = tree(tmp_path, **kw)
    build_topology_tree(tmp_path, sockets=1, nodes_per_socket=1, cores_per_node=2, threads_per_core=2)
    for rel in ("kubepods", "kubepods/besteffort", "kubepods/burstable"):
        add_cgroup(host, rel)
    be = make_pod("be1", KoordQoSClass.BE, annotations={ANNOT: ext_spec(main=batch("500", "1Gi"))})
    ls = make_pod("ls1", KoordQoSClass.LS)
    for pod in (be, ls):
        add_cgroup(host, pod.cgroup_parent)
        for c in pod.containers:
            add_cgroup(host, c.cgroup_dir)
    facts = HostFacts(host)
    files = facts.files
    config, qos_dirs = probe_host(facts), qos_dirs_of(facts)
    states = StaticStates(NodeInfo("n"), [be, ls])
    engine = HookEngine(states, config, HOOKS)
    engine.start()
    return host, files, engine, qos_dirs, states, be, ls


def add_ls_pods(host, states, count: int) -> list:
    """`count` more LS pods with their cgroups, in the informer."""
    pods = []
    for i in range(count):
        pod = make_pod("ls-extra-%d" % i, KoordQoSClass.LS)
        add_cgroup(host, pod.cgroup_parent)
        for c in pod.containers:
            add_cgroup(host, c.cgroup_dir)
        states.put(pod)
        pods.append(pod)
    return pods


CPU_QOS_ON = parse_node_slo_spec({"resourceQOSStrategy": {
    name: {"cpuQOS": {"enable": True}} for name in ("lsrClass", "lsClass", "beClass")}})


def test_anolis_v1_qos_dirs_and_pods_get_group_identity(tmp_path: Path) -> None:
    host, files, engine, qos_dirs, _, be, ls = setup(tmp_path, build_v1_tree, anolis=True)
    assert engine.config.host.bvt_supported and engine.config.node_cpus == frozenset(range(4))
    engine.set_config(hook_config_from_slo(CPU_QOS_ON, engine.config))
    executor = ResourceExecutor(files, io=FakeTreeIO())
    result = Reconciler(engine, executor, 10.0, qos_dirs=qos_dirs).reconcile_once(full=True)
    assert result.problems == 0
    bvt = {rel: files.read("cpu.bvt_warp_ns", rel) for rel in
           ("kubepods", "kubepods/burstable", "kubepods/besteffort", be.cgroup_parent, ls.cgroup_parent)}
    assert bvt == {"kubepods": 0, "kubepods/burstable": 2, "kubepods/besteffort": -1,
                   be.cgroup_parent: -1, ls.cgroup_parent: 2}
    be_main = be.containers[0].cgroup_dir
    assert (files.read("cpu.shares", be.cgroup_parent), files.read("cpu.shares", be_main),
            files.read("cpu.cfs_quota_us", be_main)) == (512, 512, 50_000)


def test_without_a_node_slo_group_identity_writes_nothing(tmp_path: Path) -> None:
    host, files, engine, qos_dirs, _, be, ls = setup(tmp_path, build_v1_tree, anolis=True)
    dirs = ("kubepods", "kubepods/burstable", "kubepods/besteffort", be.cgroup_parent, ls.cgroup_parent)
    for rel in dirs:  # values someone else set
        set_cgroup_file(host, rel, "cpu.bvt_warp_ns", "1")
    executor = ResourceExecutor(files, io=FakeTreeIO())
    Reconciler(engine, executor, 10.0, qos_dirs=qos_dirs).reconcile_once(full=True)
    assert {files.read("cpu.bvt_warp_ns", rel) for rel in dirs} == {1}


def test_nri_mode_leaves_containers_to_nri_between_full_passes(tmp_path: Path) -> None:
    host, files, engine, qos_dirs, states, be, _ = setup(tmp_path, build_v1_tree)
    executor = ResourceExecutor(files, io=FakeTreeIO())
    reconciler = Reconciler(engine, executor, 10.0, containers_on_change=False)
    reconciler.reconcile_once(full=True)
    changed = make_pod("be1", KoordQoSClass.BE, annotations={ANNOT: ext_spec(main=batch("1000", "1Gi"))})
    states.put(changed)
    reconciler.reconcile_once(full=False)
    be_main = be.containers[0].cgroup_dir
    assert files.read("cpu.shares", be.cgroup_parent) == 1024  # pod level: NRI cannot, we do
    assert files.read("cpu.shares", be_main) == 512  # container: NRI's unsolicited update's job
    reconciler.reconcile_once(full=True)
    assert files.read("cpu.shares", be_main) == 1024  # the periodic pass covers it anyway


def test_cgroup_v2_be_pod_gets_cpu_idle_and_weight(tmp_path: Path) -> None:
    host, files, engine, qos_dirs, _, be, _ = setup(tmp_path, build_v2_tree)
    (host.cgroup_root / "kubepods" / "cpu.idle").write_text("0")
    (host.cgroup_root / be.cgroup_parent / "cpu.idle").write_text("0")
    facts = HostFacts(host)
    files = facts.files
    config, qos_dirs = probe_host(facts), qos_dirs_of(facts)
    assert config.host.cgroup_version == 2 and config.host.cpu_idle_supported
    engine.set_config(config)
    executor = ResourceExecutor(files, io=FakeTreeIO())
    result = Reconciler(engine, executor, 10.0, qos_dirs=qos_dirs).reconcile_once(full=True)
    assert files.read("cpu.idle", be.cgroup_parent) == 1
    # kubelet's formula: weight = 1 + (512 - 2) * 9999 / 262142 = 20
    assert (host.cgroup_root / be.cgroup_parent / "cpu.weight").read_text().strip() == "20"
    assert result.problems == 0


def test_a_full_pass_yields_between_chunks_of_pods_and_writes_the_same(tmp_path: Path) -> None:
    """Stepped, the full pass gives the loop back between chunks (the QoS tiers first, then
    PODS_PER_PASS_STEP pods with their containers) and writes exactly what a pass in one go does."""

    host, files, engine, qos_dirs, states, be, ls = setup(tmp_path, build_v1_tree, anolis=True)
    add_ls_pods(host, states, PODS_PER_PASS_STEP * 2)
    engine.set_config(hook_config_from_slo(CPU_QOS_ON, engine.config))
    executor = ResourceExecutor(files, io=FakeTreeIO())
    reconciler = Reconciler(engine, executor, 10.0, qos_dirs=qos_dirs, step_clock=lambda: 0.0)
    yields, result = drive_counting(reconciler)
    pods = PODS_PER_PASS_STEP * 2 + 2
    assert yields == 1 + -(-pods // PODS_PER_PASS_STEP)  # the QoS tiers, then each chunk
    assert result.pods == pods and result.problems == 0 and result.writes > 0
    written = {p.uid: files.read("cpu.bvt_warp_ns", p.cgroup_parent) for p in states.pods()}
    assert set(written.values()) <= {2, -1} and written["be1"] == -1
    again = reconciler.reconcile_once(full=True)  # nothing drifted: a second pass writes nothing
    assert again.writes == 0 and again.updates == result.updates


def drive_counting(reconciler: Reconciler) -> tuple[int, PassResult]:
    """A full pass driven step by step: (steps it yielded, its result)."""
    steps = reconciler.reconcile_steps(full=True)
    yields = 0
    try:
        work = next(steps)
        while True:
            yields += 1
            work = steps.send(work())
    except StopIteration as done:
        return yields, done.value


def test_a_step_ends_early_once_its_pods_took_the_step_time(tmp_path: Path) -> None:
    """A step takes fewer than PODS_PER_PASS_STEP pods when building their updaters has
    held the loop STEP_SECONDS (here: a clock that moves half of it per look, so
    two pods a step), and the pass still writes what an uncut pass writes."""

    host, files, engine, qos_dirs, states, be, ls = setup(tmp_path, build_v1_tree, anolis=True)
    add_ls_pods(host, states, 6)
    engine.set_config(hook_config_from_slo(CPU_QOS_ON, engine.config))
    ticks = itertools.count()
    reconciler = Reconciler(engine, ResourceExecutor(files, io=FakeTreeIO()), 10.0, qos_dirs=qos_dirs,
                            step_clock=lambda: next(ticks) * STEP_SECONDS / 2)
    yields, result = drive_counting(reconciler)
    pods = 6 + 2
    assert yields == 1 + pods // 2  # the QoS tiers, then two pods a step
    assert result.pods == pods and result.problems == 0 and result.writes > 0
    written = {p.uid: files.read("cpu.bvt_warp_ns", p.cgroup_parent) for p in states.pods()}
    assert set(written.values()) <= {2, -1} and written["be1"] == -1 and len(written) == pods


def test_a_pod_gone_between_steps_is_neither_written_nor_kept(tmp_path: Path) -> None:
    """Plans are taken chunk by chunk from the informer as it is then: a pod removed while
    the pass yields is skipped (no write into its cgroup, no updaters kept for it)."""

    host, files, engine, qos_dirs, states, be, ls = setup(tmp_path, build_v1_tree, anolis=True)
    extra = add_ls_pods(host, states, PODS_PER_PASS_STEP * 2)
    engine.set_config(hook_config_from_slo(CPU_QOS_ON, engine.config))
    reconciler = Reconciler(engine, ResourceExecutor(files, io=FakeTreeIO()), 10.0, qos_dirs=qos_dirs)
    steps = reconciler.reconcile_steps(full=True)
    done = next(steps)()  # the QoS tiers are written; no pod yet
    gone = extra[-1]
    states.remove(gone.uid)
    try:
        while True:
            done = steps.send(done)()
    except StopIteration:
        pass
    assert files.read("cpu.bvt_warp_ns", gone.cgroup_parent) == 0  # the fake tree's initial value, untouched
    assert files.read("cpu.bvt_warp_ns", extra[0].cgroup_parent) == 2
    assert gone.uid not in reconciler._built


class CountingTreeIO(FakeTreeIO):
    """The fake tree's IO, keeping the paths each drift read-back asked for."""

    def __init__(self) -> None:
        self.read_back: list[list[str]] = []

    def read_many(self, paths):
        self.read_back.append(list(paths))
        return super().read_many(paths)


def test_periodic_passes_read_back_the_kube_qos_files_every_time(tmp_path: Path) -> None:
    """The kube-QoS tier files (few) are read back on every periodic pass, so a tier's
    value changed behind our back is repaired by the next one, whoever's turn it is."""
    host, files, engine, qos_dirs, states, be, ls = setup(tmp_path, build_v1_tree, anolis=True)
    add_ls_pods(host, states, PODS_PER_PASS_STEP * 2)
    engine.set_config(hook_config_from_slo(CPU_QOS_ON, engine.config))
    io = CountingTreeIO()
    reconciler = Reconciler(engine, ResourceExecutor(files, io=io), 10.0, qos_dirs=qos_dirs)
    reconciler.reconcile_once(full=True)  # start-up: the cache now vouches for every file
    io.read_back.clear()
    reconciler.reconcile_once(full=True)
    qos_files = set(io.read_back[0])
    assert {"cpu.bvt_warp_ns"} == {path.rsplit("/", 1)[1] for path in qos_files} and len(qos_files) == 3
    for _ in range(reconciler.turns):
        set_cgroup_file(host, "kubepods/besteffort", "cpu.bvt_warp_ns", "0")
        io.read_back.clear()
        result = reconciler.reconcile_once(full=True, rotating=True)
        assert set(io.read_back[0]) == qos_files  # the tiers' step, first
        assert files.read("cpu.bvt_warp_ns", "kubepods/besteffort") == -1 and result.drifted >= 1


class KeptReadersTreeIO(FakeTreeIO):
    """The fake tree's IO, noting the kept readers it made."""

    def __init__(self) -> None:
        self.made: list[tuple[str, ...]] = []

    def kept_reader(self, paths):
        self.made.append(tuple(paths))
        return super().kept_reader(paths)


def test_a_turns_read_back_is_kept_while_its_pods_keep_their_plans(tmp_path: Path) -> None:
    """A periodic pass reads its turn's share of the pods through a reader kept per share:
    the next rotation reads through the same ones; a pod whose plan changed gets its share
    a new one, the other shares keep theirs; drift is repaired through either."""
    host, files, engine, qos_dirs, states, be, _ = setup(tmp_path, build_v1_tree)
    for i in range(20):
        pod = make_pod("be-extra-%d" % i, KoordQoSClass.BE, annotations={ANNOT: ext_spec(main=batch("500", "1Gi"))})
        add_cgroup(host, pod.cgroup_parent)
        for c in pod.containers:
            add_cgroup(host, c.cgroup_dir)
        states.put(pod)
    io = KeptReadersTreeIO()
    reconciler = Reconciler(engine, ResourceExecutor(files, io=io), 10.0, qos_dirs=qos_dirs)
    reconciler.reconcile_once(full=True)
    turns = reconciler.turns

    def one_rotation_repairs(cgroup_dir: str) -> None:
        set_cgroup_file(host, cgroup_dir, "cpu.shares", "4096")
        drifted = sum(reconciler.reconcile_once(full=True, rotating=True).drifted for _ in range(turns))
        assert drifted == 1 and files.read("cpu.shares", cgroup_dir) == 512

    one_rotation_repairs(be.cgroup_parent)
    first = list(io.made)
    every_file = [path for paths in first for path in paths]
    assert len(every_file) == len(set(every_file)) and be.cgroup_parent in " ".join(every_file)
    one_rotation_repairs(be.containers[0].cgroup_dir)
    assert io.made == first  # the same readers, read again
    changed = make_pod("be-extra-0", KoordQoSClass.BE, annotations={ANNOT: ext_spec(main=batch("700", "1Gi"))})
    states.put(changed)
    reconciler.reconcile_once(full=False)  # the change: the pod's new plan written
    one_rotation_repairs(be.cgroup_parent)
    assert len(io.made) == len(first) + 1
    assert any(changed.cgroup_parent in path for path in io.made[-1])


def test_a_value_put_back_behind_our_back_is_repaired_though_the_files_read_as_at_the_last_check(
        tmp_path: Path) -> None:
    """A turn's check that finds its files as its last check did (which found nothing
    drifted) dates their cache entries without comparing file by file, but only while the
    cache still holds the entries that check dated. Here another owner wrote the pod's
    cpu.shares just before its turn (the check finds the file as the cache says), the pass's
    batch then wrote our value, and the other value is put back behind the daemon's back: the
    file reads as at the last check, the cache says ours; it is found and written again."""
    host, files, engine, qos_dirs, states, be, _ = setup(tmp_path, build_v1_tree)
    executor = ResourceExecutor(files, io=FakeTreeIO())
    reconciler = Reconciler(engine, executor, 10.0, qos_dirs=qos_dirs)
    reconciler.reconcile_once(full=True)
    turns = reconciler.turns
    for _ in range(turns):  # every share checked once: nothing drifted
        reconciler.reconcile_once(full=True, rotating=True)
    while reconciler._turn % turns != hash(be.uid) % turns:  # the next pass checks be1's share
        reconciler.reconcile_once(full=True, rotating=True)
    executor.update(executor.updater("cpu.shares", be.cgroup_parent, 1024))
    before = reconciler.reconcile_once(full=True, rotating=True)
    assert before.drifted == 0 and before.writes == 1 and files.read("cpu.shares", be.cgroup_parent) == 512
    set_cgroup_file(host, be.cgroup_parent, "cpu.shares", "1024")
    drifted = sum(reconciler.reconcile_once(full=True, rotating=True).drifted for _ in range(turns))
    assert drifted == 1 and files.read("cpu.shares", be.cgroup_parent) == 512


def note_plans_asked(engine: HookEngine) -> list[str]:
    """The uids of the pods whose plans the engine is asked for from now on."""
    asked: list[str] = []
    plan = engine.plan

    def noting_plan(pod):
        asked.append(pod.uid)
        return plan(pod)

    engine.plan = noting_plan  # type: ignore[method-assign]
    return asked


def test_periodic_passes_with_nothing_changed_keep_their_updaters_until_a_rule_changes(tmp_path: Path) -> None:
    """Periodic passes while no pod changed take the same updaters, asking the engine
    nothing; a new rule (every plan dropped, the informer's pods the same) is written by
    the next periodic pass, every pod's, and the passes after keep the new updaters."""
    host, files, engine, qos_dirs, states, be, ls = setup(tmp_path, build_v1_tree, anolis=True)
    reconciler = Reconciler(engine, ResourceExecutor(files, io=FakeTreeIO()), 10.0, qos_dirs=qos_dirs)
    reconciler.reconcile_once(full=True)
    asked = note_plans_asked(engine)
    for _ in range(3):
        assert reconciler.reconcile_once(full=True, rotating=True).writes == 0
    assert asked == [] and files.read("cpu.bvt_warp_ns", be.cgroup_parent) == 0
    engine.set_config(hook_config_from_slo(CPU_QOS_ON, engine.config))
    assert reconciler.reconcile_once(full=True, rotating=True).writes > 0
    assert sorted(asked) == sorted([be.uid, ls.uid])
    assert (files.read("cpu.bvt_warp_ns", be.cgroup_parent), files.read("cpu.bvt_warp_ns", ls.cgroup_parent)) == (-1, 2)
    set_cgroup_file(host, be.cgroup_parent, "cpu.bvt_warp_ns", "0")  # the new updaters kept, not the old
    drifted = sum(reconciler.reconcile_once(full=True, rotating=True).drifted for _ in range(reconciler.turns))
    assert drifted == 1 and files.read("cpu.bvt_warp_ns", be.cgroup_parent) == -1


def test_a_periodic_pass_plans_only_the_pods_the_engine_changed(tmp_path: Path) -> None:
    """A periodic pass keeps the updaters of every pod whose plan the engine has not changed
    since the last pass (the engine names each change) and asks it again only for the pods it
    named or has not seen: a pod changed between passes gets its new values written by the next
    periodic pass, and so does one changed while a pass runs, by the pass after."""
    host, files, engine, qos_dirs, states, be, _ = setup(tmp_path, build_v1_tree)
    add_ls_pods(host, states, PODS_PER_PASS_STEP * 2)
    reconciler = Reconciler(engine, ResourceExecutor(files, io=FakeTreeIO()), 10.0, qos_dirs=qos_dirs)
    reconciler.reconcile_once(full=True)
    asked = note_plans_asked(engine)
    result = reconciler.reconcile_once(full=True, rotating=True)
    assert asked == [] and result.pods == PODS_PER_PASS_STEP * 2 + 2 and result.problems == 0
    changed = make_pod("be1", KoordQoSClass.BE, annotations={ANNOT: ext_spec(main=batch("700", "1Gi"))})
    states.put(changed)  # the engine names it to the reconciler
    result = reconciler.reconcile_once(full=True, rotating=True)
    assert asked == [be.uid] and result.writes >= 1
    assert files.read("cpu.cfs_quota_us", changed.containers[0].cgroup_dir) == 70_000
    newcomer = add_ls_pods(host, states, 1)
    asked.clear()
    steps = reconciler.reconcile_steps(full=True, rotating=True)
    work = next(steps)
    states.put(make_pod("be1", KoordQoSClass.BE, annotations={ANNOT: ext_spec(main=batch("300", "1Gi"))}))
    try:
        while True:
            work = steps.send(work())
    except StopIteration:
        pass
    assert newcomer[0].uid in asked and be.uid not in asked  # be1 changed after the pass took its pods
    reconciler.reconcile_once(full=True, rotating=True)
    assert files.read("cpu.cfs_quota_us", changed.containers[0].cgroup_dir) == 30_000


class ThreadNotingTreeIO(FakeTreeIO):
    """The fake tree's IO, noting which threads read and wrote."""

    def __init__(self) -> None:
        self.threads: set[int] = set()

    def read_many(self, paths):
        self.threads.add(threading.get_ident())
        return super().read_many(paths)

    def read(self, path: str) -> str:
        self.threads.add(threading.get_ident())
        return super().read(path)

    def write(self, path: str, text: str) -> None:
        self.threads.add(threading.get_ident())
        super().write(path, text)


def test_a_pass_on_the_loop_does_its_file_io_in_the_executors_thread(tmp_path: Path) -> None:
    """The daemon's passes read and write (new files, drift read-backs and repairs alike)
    off the event loop's thread, in the executor's one IO thread: an open() or write() of
    a cgroup file can wait in the kernel for tens of ms. They write what a pass in one go does."""
    host, files, engine, qos_dirs, states, be, ls = setup(tmp_path, build_v1_tree, anolis=True)
    add_ls_pods(host, states, PODS_PER_PASS_STEP * 2)
    engine.set_config(hook_config_from_slo(CPU_QOS_ON, engine.config))
    io = ThreadNotingTreeIO()
    reconciler = Reconciler(engine, ResourceExecutor(files, io=io), 10.0, qos_dirs=qos_dirs)

    async def passes() -> tuple[int, object, object]:
        first = await reconciler._reconcile_off_loop(True, False)
        set_cgroup_file(host, "kubepods/besteffort", "cpu.bvt_warp_ns", "0")
        return threading.get_ident(), first, await reconciler._reconcile_off_loop(True, False)

    loop_thread, first, again = asyncio.run(passes())
    assert first.writes > 0 and first.problems == 0
    assert again.drifted == 1 and again.writes == 1
    assert files.read("cpu.bvt_warp_ns", "kubepods/besteffort") == -1
    assert len(io.threads) == 1 and loop_thread not in io.threads
