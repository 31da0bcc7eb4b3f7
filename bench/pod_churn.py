"""What pod churn leaves behind in the daemon: pods that start, run a few seconds and go.

    python -m bench.pod_churn [--pods 1000] [--cycles 1000] [--live 50] [--rate 20]
                              [--rounds 3] [--warmup 30] [--settle 15] [--tombstone-seconds 60]

The daemon is built in this process as bench.container_churn builds it (every default agent,
standalone, real v1 + v2 cgroups under /sys/fs/cgroup/<controller>/koordlet-scale-<hex8>,
root, the daemon's collector policy). The test runtime delivers N pods x 2 containers that
stay; after --warmup seconds, rounds alternate:

  churn: --cycles new pods at --rate a second, each as containerd and kubelet bring one up:
         its cgroup directories made, RunPodSandbox, CreateContainer, StartContainer and
         PostStartContainer for its two containers; once more than --live churn pods run, the
         oldest goes: StopContainer and RemoveContainer for each container, StopPodSandbox,
         RemovePodSandbox, its directories removed. So each churn pod lives --live / --rate
         seconds, long enough for the 1 s collectors (and, at the defaults, not the 10 s
         ones every time). At the end of the round every churn pod has gone;
  idle:  as long as the churn round before it took, nothing sent (the floor).

Sampled after each round and --settle seconds, as bench.container_churn samples: Python's
allocated blocks, objects the collector tracks, the informer's tombstones, VmRSS; and the
metric cache's series count. The informer keeps a removed pod's and container's ids for
TOMBSTONE_SECONDS (600) so that a CRI poll begun earlier cannot bring them back;
--tombstone-seconds shortens that in this process, so that a round's growth is not the
previous round's tombstones (set it to 600 to see them).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
import time
from collections import deque
from pathlib import Path
from typing import Callable

from bench.container_churn import (
    Round,
    alternate_rounds,
    daemon_in_process,
    forget_wire,
    round_line,
    run_in_tree,
    the_store,
)
from bench.daemon_scale import (
    CONTAINERS,
    DAEMON_PLUGIN,
    CgroupTree,
    by_name,
    cgroup_dirs,
    deliver,
)
from koordlet.daemon.logs import configure_logging
from koordlet.metriccache.store import MetricStore
from koordlet.statesinformer import store as informer_store
from nri.events import Event
from nri.testing import RuntimePeer
from proto.nri.pkg.api.v1alpha1 import api_pb2 as api
from tests.koordlet.runtimehooks.nri_pods import nri_container, nri_pod

Pod = tuple[api.PodSandbox, list[api.Container]]
CHURN_UID_MARK = "-9000-"  # in every churn pod's uid, in no uid of workload()'s


# -- pure: the churn pods -------------------------------------------------------------------


def churn_pod(k: int) -> Pod:
    """The k-th churn pod: BE and LS in turns, two containers; uids apart from workload()'s."""
    uid = "%08x-0000-4000-%s-%012x" % (k, CHURN_UID_MARK.strip("-"), k)
    pod = nri_pod(uid, "BE" if k % 2 else "LS")
    return pod, [nri_container(pod, name) for name in CONTAINERS]


def pod_dirs(pod: Pod) -> list[str]:
    """The pod's own cgroup directories, parent first (the QoS tiers already exist)."""
    return cgroup_dirs([pod])[3:]


# -- IO -------------------------------------------------------------------------------------


async def bring_up(peer: RuntimePeer, tree: CgroupTree, pod: Pod) -> Pod:
    sandbox, ctrs = pod
    tree.add(pod_dirs(pod))
    await peer.run_pod_sandbox(sandbox)
    created = []
    for ctr in ctrs:
        made = await peer.create_container(sandbox, ctr)
        await peer.container_event(Event.START_CONTAINER, sandbox, made)
        await peer.container_event(Event.POST_START_CONTAINER, sandbox, made)
        created.append(made)
    return sandbox, created


async def take_down(peer: RuntimePeer, tree: CgroupTree, pod: Pod) -> None:
    sandbox, ctrs = pod
    for ctr in ctrs:
        await peer.stop_container(sandbox, ctr)
        await peer.container_event(Event.REMOVE_CONTAINER, sandbox, ctr)
    await peer.stop_pod_sandbox(sandbox)
    await peer.remove_pod_sandbox(sandbox)
    for problem in tree.discard(pod_dirs(pod)):
        print("churn cleanup: " + problem, file=sys.stderr)


async def churn(peer: RuntimePeer, tree: CgroupTree, first: int, args: argparse.Namespace) -> None:
    live: deque[Pod] = deque()
    pace = 1.0 / args.rate
    next_at = time.monotonic()
    for k in range(first, first + args.cycles):
        live.append(await bring_up(peer, tree, churn_pod(k)))
        if len(live) > args.live:
            await take_down(peer, tree, live.popleft())
        forget_wire(peer)
        next_at += pace
        await asyncio.sleep(max(0.0, next_at - time.monotonic()))
    while live:
        await take_down(peer, tree, live.popleft())
    forget_wire(peer)


def the_metric_store() -> MetricStore:
    (store,) = [o for o in gc.get_objects() if isinstance(o, MetricStore)]
    return store


def churn_series(metrics: MetricStore) -> dict[str, int]:
    """Series of churn pods (every one has gone when this is called), by metric name."""
    counts: dict[str, int] = {}
    for key in list(metrics._series):
        if CHURN_UID_MARK in key.pod_uid:
            counts[key.metric] = counts.get(key.metric, 0) + 1
    return counts


def series_kinds(metrics: MetricStore) -> dict[tuple[str, bool, bool], int]:
    counts: dict[tuple[str, bool, bool], int] = {}
    for key in list(metrics._series):
        kind = (key.metric, bool(key.pod_uid), bool(key.container_id))
        counts[kind] = counts.get(kind, 0) + 1
    return counts


async def measure(args: argparse.Namespace, tmp: Path, tree: CgroupTree, pods: list[Pod]) -> tuple[list[Round], int]:
    async with daemon_in_process(tmp, tree) as peer:
        by_name(peer.plugins, DAEMON_PLUGIN)  # registered
        await deliver(peer, pods)
        await churn(peer, tree, 0, argparse.Namespace(**{**vars(args), "cycles": args.live * 2}))
        first = args.live * 2  # every path taken once before the counts start
        store, metrics = the_store(), the_metric_store()  # before the policy freezes them

        async def churn_round() -> None:
            nonlocal first
            await churn(peer, tree, first, args)
            first += args.cycles

        def round_printer() -> Callable[[Round], None]:
            series_before, kinds_before = len(metrics), series_kinds(metrics)

            def print_round(done: Round) -> None:
                print("%s  series %+6d" % (round_line(done), len(metrics) - series_before), flush=True)
                grown = {k: n - kinds_before.get(k, 0) for k, n in series_kinds(metrics).items()
                         if n != kinds_before.get(k, 0)}
                print("      series grown: %r" % sorted(grown.items())[:12], flush=True)
                left = churn_series(metrics)
                if left:
                    print("      series of gone churn pods: %s" % ", ".join(
                        "%s %d" % item for item in sorted(left.items())), flush=True)

            return print_round

        return await alternate_rounds(args, store, churn_round, round_printer)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=1000, help="pods that stay")
    parser.add_argument("--cycles", type=int, default=1000, help="churn pods a churn round")
    parser.add_argument("--live", type=int, default=50, help="churn pods running at once")
    parser.add_argument("--rate", type=float, default=20.0, help="churn pods started a second")
    parser.add_argument("--rounds", type=int, default=3, help="churn + idle pairs")
    parser.add_argument("--warmup", type=float, default=30.0, help="seconds after the pods are delivered")
    parser.add_argument("--settle", type=float, default=15.0, help="seconds after each round before it is sampled")
    parser.add_argument("--tombstone-seconds", type=float, default=60.0,
                        help="how long the informer keeps a removed id in this run (the daemon's: 600)")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    if os.geteuid() != 0:
        sys.exit("pod_churn: needs root (real cgroups)")
    informer_store.TOMBSTONE_SECONDS = args.tombstone_seconds
    configure_logging("warning", "json")
    print("pod_churn: the daemon in-process (every default agent, standalone, the daemon's collector policy), "
          "%d pods x 2 containers over NRI that stay, real cgroups; %d rounds of %d churn pods (%.0f a second, "
          "%d running at once, each ~%.1f s), each followed by an idle round as long (floor), %.0f s settle, "
          "tombstones kept %.0f s"
          % (args.pods, args.rounds, args.cycles, args.rate, args.live, args.live / args.rate, args.settle,
             args.tombstone_seconds), flush=True)
    run_in_tree(args, "koordlet-pod-churn-", measure)


if __name__ == "__main__":
    main()
