"""What container churn leaves behind in the daemon: CreateContainer + RemoveContainer cycles.

    python -m bench.container_churn [--pods 1000] [--cycles 2000] [--rounds 3] [--warmup 30]

The daemon is built in this process (every default agent, standalone, as bench.daemon_scale
starts it: real v1 + v2 cgroups under /sys/fs/cgroup/<controller>/koordlet-scale-<hex8>,
root), with the collector policy the daemon applies once started (survivors of every
collection frozen: koordlet/daemon/gc_policy.py). The test runtime (nri.testing.RuntimePeer)
delivers N pods x 2 containers; after --warmup seconds, rounds alternate:

  churn: --cycles times, CreateContainer for a new container "probeK" of pod K mod N, then
         its RemoveContainer (no StartContainer: the probe of bench.daemon_scale);
  idle:  as long as the churn round before it took, nothing sent (the floor: what the
         collectors, reporter and reconciler make meanwhile).

After each round, settled for --settle seconds: Python's allocated blocks
(sys.getallocatedblocks), objects the collector tracks (frozen ones too), the states
informer's tombstones, VmRSS. At the end the frozen heap is handed back for one full pass:
the unreachable objects it finds are cycles that the policy kept until its hourly pass.
Prints one line per round, then churn per cycle against idle (floor) and the ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
import tempfile
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import AsyncIterator, Awaitable, Callable

from bench.daemon_scale import (
    CALL_TIMEOUT,
    DAEMON_PLUGIN,
    CgroupTree,
    by_name,
    cgroup_dirs,
    daemon_command,
    deliver,
    free_port,
    workload,
)
from koordlet.daemon import gc_policy
from koordlet.daemon.cli import parse_args as daemon_config
from koordlet.daemon.logs import configure_logging
from koordlet.daemon.state_dir import prepare_state_dir
from koordlet.daemon.wiring import build_daemon
from koordlet.statesinformer.store import PodStore
from nri.events import Event
from nri.testing import PeerPlugin, RuntimePeer
from proto.nri.pkg.api.v1alpha1 import api_pb2 as api
from tests.koordlet.runtimehooks.nri_pods import nri_container


@dataclass(frozen=True)
class Sample:
    blocks: int
    objects: int
    tombstones: int
    rss_kib: int


@dataclass(frozen=True)
class Round:
    kind: str
    seconds: float
    cycles: int
    before: Sample
    after: Sample

    def grew(self, field: str) -> int:
        return getattr(self.after, field) - getattr(self.before, field)


# -- pure: figures --------------------------------------------------------------------------


def per_cycle(rounds: list[Round], kind: str, field: str, cycles: int) -> float:
    """Mean growth of `field` over the rounds of `kind`, per churn cycle."""
    picked = [r.grew(field) for r in rounds if r.kind == kind]
    return sum(picked) / len(picked) / cycles if picked else 0.0


def round_line(r: Round) -> str:
    return ("%-5s %6.1f s  blocks %+8d  objects %+8d  tombstones %+6d  RSS %+7d KiB"
            % (r.kind, r.seconds, r.grew("blocks"), r.grew("objects"), r.grew("tombstones"), r.grew("rss_kib")))


def summary_lines(rounds: list[Round], cycles: int) -> list[str]:
    out = []
    for field, unit in (("blocks", "blocks"), ("objects", "objects"), ("tombstones", "tombstones"),
                        ("rss_kib", "KiB RSS")):
        churn, idle = per_cycle(rounds, "churn", field, cycles), per_cycle(rounds, "idle", field, cycles)
        ratio = "%.2f" % (churn / idle) if idle > 0 else "n/a"
        out.append("per cycle: %-10s churn %+8.3f  idle (floor) %+8.3f  x %s" % (unit, churn, idle, ratio))
    return out


# -- IO -------------------------------------------------------------------------------------


def sample(store: PodStore) -> Sample:
    gc.collect()  # young garbage out; the policy freezes what survives, as in the daemon
    status = Path("/proc/self/status").read_text()
    rss = int(status.split("VmRSS:")[1].split()[0])
    objects = len(gc.get_objects()) + gc.get_freeze_count()
    return Sample(sys.getallocatedblocks(), objects, store.counts()[("tombstones", "merged")], rss)


async def churn(peer: RuntimePeer, plugin: PeerPlugin, pods, first: int, cycles: int) -> None:
    for k in range(first, first + cycles):
        pod, _ = pods[k % len(pods)]
        ctr = nri_container(pod, "probe%d" % k)
        async with peer.event_lock:
            await plugin.call("CreateContainer", api.CreateContainerRequest(pod=pod, container=ctr),
                              api.CreateContainerResponse, CALL_TIMEOUT)
        await peer.container_event(Event.REMOVE_CONTAINER, pod, ctr)
        forget_wire(peer)


def forget_wire(peer: RuntimePeer) -> None:
    """The test runtime's own record of every call and answer is not the daemon's."""
    for plugin in peer.plugins:
        plugin.record.calls.clear()
        plugin.record.responses.clear()


def the_store() -> PodStore:
    """The daemon's states informer (the hubs are not handed out by build_daemon)."""
    (store,) = [o for o in gc.get_objects() if isinstance(o, PodStore)]
    return store


@asynccontextmanager
async def daemon_in_process(tmp: Path, tree: CgroupTree) -> AsyncIterator[RuntimePeer]:
    """The daemon built in this process (bench.daemon_scale's arguments) and registered with
    the test runtime; stopped on the way out."""
    sock = tmp / "nri.sock"
    command = daemon_command(tmp, free_port(), sock, tree.link_root)
    async with RuntimePeer(sock) as peer:
        daemon = build_daemon(daemon_config(command[command.index("--addr"):]))
        task = asyncio.ensure_future(daemon.run())
        try:
            await peer.wait_plugins(1, timeout=60)
            yield peer
        finally:
            daemon.request_stop()
            await task


async def alternate_rounds(args: argparse.Namespace, store: PodStore, churn_round: Callable[[], Awaitable[None]],
                           round_printer: Callable[[], Callable[[Round], None]]) -> tuple[list[Round], int]:
    """With the daemon's collector policy applied, after --warmup: churn and idle rounds as long
    in turns, each sampled after --settle; `round_printer()` is called before each round and
    what it returns prints that round. Then the unreachable objects one unfrozen full pass finds."""
    undo = gc_policy.apply_after_start_up()
    try:
        await asyncio.sleep(args.warmup)
        rounds: list[Round] = []
        took = 0.0
        for kind in ["churn", "idle"] * args.rounds:
            print_round = round_printer()
            before = sample(store)
            start = time.monotonic()
            if kind == "churn":
                await churn_round()
                took = time.monotonic() - start
            else:
                await asyncio.sleep(took)
            await asyncio.sleep(args.settle)
            rounds.append(Round(kind, time.monotonic() - start, args.cycles if kind == "churn" else 0,
                                before, sample(store)))
            print_round(rounds[-1])
    finally:
        undo()
    return rounds, gc.collect()


async def measure(args: argparse.Namespace, tmp: Path, tree: CgroupTree, pods) -> tuple[list[Round], int]:
    async with daemon_in_process(tmp, tree) as peer:
        plugin = by_name(peer.plugins, DAEMON_PLUGIN)
        await deliver(peer, pods)
        await churn(peer, plugin, pods, 0, min(args.cycles, len(pods)))  # every path taken once
        store = the_store()  # before the policy freezes it out of gc.get_objects()
        first = args.cycles

        async def churn_round() -> None:
            nonlocal first
            await churn(peer, plugin, pods, first, args.cycles)
            first += args.cycles

        return await alternate_rounds(args, store, churn_round, lambda: lambda r: print(round_line(r), flush=True))


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--cycles", type=int, default=2000, help="create/remove cycles a churn round")
    parser.add_argument("--rounds", type=int, default=3, help="churn + idle pairs")
    parser.add_argument("--warmup", type=float, default=30.0, help="seconds after the pods are delivered")
    parser.add_argument("--settle", type=float, default=10.0, help="seconds after each round before it is sampled")
    return parser.parse_args()


def run_in_tree(args: argparse.Namespace, prefix: str,
                measure: Callable[[argparse.Namespace, Path, CgroupTree, list], Awaitable[tuple[list[Round], int]]]) -> None:
    """`measure` with --pods pods x 2 containers in real cgroups and a state dir in a temp dir
    (both removed after), then the per-cycle summary."""
    with tempfile.TemporaryDirectory(prefix=prefix) as name:
        tmp = Path(name)
        tree = CgroupTree(tmp / "cgroup")
        pods = workload(args.pods, cpu=0)
        try:
            tree.create(cgroup_dirs(pods))
            prepare_state_dir(tmp / "state")
            rounds, unreachable = asyncio.run(measure(args, tmp, tree, pods))
        finally:
            for problem in tree.remove():
                print("cleanup: " + problem, file=sys.stderr)
    for line in summary_lines(rounds, args.cycles):
        print(line)
    print("unreachable objects the frozen heap held (one unfrozen full pass at the end): %d" % unreachable)


def main() -> None:
    args = parse_args()
    if os.geteuid() != 0:
        sys.exit("container_churn: needs root (real cgroups)")
    configure_logging("warning", "json")
    print("container_churn: the daemon in-process (every default agent, standalone, the daemon's collector "
          "policy), %d pods x 2 containers over NRI, real cgroups; %d rounds of %d CreateContainer + "
          "RemoveContainer cycles, each followed by an idle round as long (floor), %.0f s settle"
          % (args.pods, args.rounds, args.cycles, args.settle), flush=True)
    run_in_tree(args, "koordlet-churn-", measure)


if __name__ == "__main__":
    main()
