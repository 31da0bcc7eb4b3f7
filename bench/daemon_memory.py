"""Where the daemon's memory is at N pods: tracemalloc inside the real daemon process.

    python -m bench.daemon_memory [--pods 1000] [--warmup 40] [--window 30] [--top 25] [--frames 1] [--drift 0]
        [--scraped]

Runs bench.daemon_scale's measurement once (same daemon, same test runtime, same real
cgroups; root) with the daemon started under ``python -X tracemalloc=1`` and a SIGUSR1
handler that dumps a snapshot; the snapshot is taken at the end of the quiet window (its
VmRSS printed with it). Prints the Python heap traced by package (koordlet/<module>,
third-party, stdlib), by file and by line; the floor is the process's VmRSS at the same
instant (the traced share of it). tracemalloc's own overhead is in the RSS, not in the
traced bytes. With --frames N > 1 a last table charges each allocation to the innermost
frame of the project's own code (not the stdlib's, a frozen module's or a package's), e.g.
the module that keeps a pathlib.Path rather than pathlib.py.

With --drift S, the snapshots are taken at the start and at the end of daemon_scale's drift
window instead (S seconds of probe pods coming and going, /metrics scraped once a --window)
and the report is what grew between them, by line (and by our own frame with --frames > 1),
beside the RSS growth of the same window: where a slope that bench.daemon_scale --drift
prints comes from, or, when the traced growth is far below it, that it is not Python
objects (glibc's heaps).

With --scraped, the snapshots are taken before the first /metrics scrapes (one plain, one as
Prometheus asks) and after them: what a scraped daemon keeps that an unscraped one does not
(the exporters' caches between scrapes).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from bench import daemon_scale

SNAPSHOT_WAIT_SECONDS = 120.0


def traced_daemon(snapshot_path: str, argv: list[str]) -> int:
    """The daemon's own main, with a SIGUSR1 that dumps the tracemalloc snapshot."""
    from koordlet.__main__ import main

    def dump(signum: int, frame: object) -> None:
        tracemalloc.take_snapshot().dump(snapshot_path + ".part")
        os.replace(snapshot_path + ".part", snapshot_path)

    signal.signal(signal.SIGUSR1, dump)
    return main(argv)


def take_snapshot(pid: int, written: str, keep_as: str) -> None:
    """Ask the traced daemon for a snapshot (it writes `written`), wait for it and keep it
    as `keep_as`."""
    os.kill(pid, signal.SIGUSR1)
    deadline = time.monotonic() + SNAPSHOT_WAIT_SECONDS
    while not os.path.exists(written) and time.monotonic() < deadline:
        time.sleep(0.2)
    if os.path.exists(written):
        os.replace(written, keep_as)


def owner(filename: str) -> str:
    """koordlet/<module>, nri/proto (ours), a third-party package, or the stdlib."""
    parts = Path(filename).parts
    if "site-packages" in parts:
        return "site-packages/" + parts[parts.index("site-packages") + 1]
    for ours in ("koordlet", "nri", "proto", "bench"):
        if ours in parts:
            at = len(parts) - 1 - parts[::-1].index(ours)
            return "/".join(parts[at:at + 2]) if ours == "koordlet" and at + 2 < len(parts) else ours
    return "stdlib/" + parts[-1] if filename.startswith(sys.base_prefix) else filename


def ours(filename: str) -> bool:
    return not (filename.startswith("<") or "site-packages" in filename or filename.startswith(sys.base_prefix))


def own_frame_sizes(snapshot: tracemalloc.Snapshot) -> dict[str, tuple[int, int]]:
    """Bytes and blocks by the innermost frame of our own code ("file:line")."""
    sizes: dict[str, tuple[int, int]] = {}
    for trace in snapshot.traces:
        # a Traceback runs from the oldest frame kept to the most recent
        frame = next((f for f in reversed(trace.traceback) if ours(f.filename)), trace.traceback[-1])
        where = "%s:%d" % (short(frame.filename), frame.lineno)
        size, count = sizes.get(where, (0, 0))
        sizes[where] = (size + trace.size, count + 1)
    return sizes


def by_own_frame(snapshot: tracemalloc.Snapshot, pods: int, top: int) -> None:
    print("by the innermost frame of our own code:")
    for where, (size, count) in sorted(own_frame_sizes(snapshot).items(), key=lambda item: -item[1][0])[:top]:
        print("  %-60s %8.2f MiB  %8d blocks  %6.0f B/pod" % (where, size / 2**20, count, size / max(pods, 1)))


def report_growth(start: tracemalloc.Snapshot, end: tracemalloc.Snapshot, rss_start_kib: int, rss_end_kib: int,
                  top: int, own_frames: bool, over: str = "over the drift window") -> None:
    """What the traced heap gained between two snapshots, beside the RSS gained."""
    traced = [sum(s.size for s in snapshot.statistics("filename")) for snapshot in (start, end)]
    print(over + ": traced Python heap %+.2f MiB (%.1f -> %.1f); VmRSS of this traced daemon %+.2f MiB "
          "(%.1f -> %.1f: with the first snapshot's own memory, which glibc keeps; the untraced growth is "
          "bench.daemon_scale's)"
          % ((traced[1] - traced[0]) / 2**20, traced[0] / 2**20, traced[1] / 2**20,
             (rss_end_kib - rss_start_kib) / 1024, rss_start_kib / 1024, rss_end_kib / 1024))
    print("grew, by line:")
    for diff in end.compare_to(start, "lineno")[:top]:
        frame = diff.traceback[0]
        print("  %-60s %+8.3f MiB  %+8d blocks" % ("%s:%d" % (short(frame.filename), frame.lineno),
                                                   diff.size_diff / 2**20, diff.count_diff))
    if own_frames:
        print("grew, by the innermost frame of our own code:")
        before, after = own_frame_sizes(start), own_frame_sizes(end)
        grown = {where: (size - before.get(where, (0, 0))[0], count - before.get(where, (0, 0))[1])
                 for where, (size, count) in after.items()}
        grown.update({where: (-size, -count) for where, (size, count) in before.items() if where not in after})
        for where, (size, count) in sorted(grown.items(), key=lambda item: -abs(item[1][0]))[:top]:
            print("  %-60s %+8.3f MiB  %+8d blocks" % (where, size / 2**20, count))


def report(snapshot: tracemalloc.Snapshot, rss_kib: int, pods: int, top: int) -> None:
    stats = snapshot.statistics("filename")
    traced = sum(s.size for s in stats)
    print("traced %.1f MiB of VmRSS %.1f MiB (%.0f %%) at %d pods; %.0f B traced per pod"
          % (traced / 2**20, rss_kib / 1024, 100 * traced / (rss_kib * 1024), pods, traced / max(pods, 1)))
    by_owner: dict[str, int] = {}
    for stat in stats:
        name = owner(stat.traceback[0].filename)
        by_owner[name] = by_owner.get(name, 0) + stat.size
    print("by package:")
    for name, size in sorted(by_owner.items(), key=lambda item: -item[1])[:top]:
        print("  %-44s %8.2f MiB  %7.0f B/pod" % (name, size / 2**20, size / max(pods, 1)))
    print("by line:")
    for stat in snapshot.statistics("lineno")[:top]:
        frame = stat.traceback[0]
        print("  %-60s %8.2f MiB  %8d blocks" % ("%s:%d" % (short(frame.filename), frame.lineno),
                                                 stat.size / 2**20, stat.count))


def short(filename: str) -> str:
    parts = Path(filename).parts
    for anchor in ("site-packages", "koordlet", "nri", "proto"):
        if anchor in parts:
            return "/".join(parts[len(parts) - 1 - parts[::-1].index(anchor):])
    return "/".join(parts[-2:])


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--traced-daemon":
        sys.exit(traced_daemon(sys.argv[2], sys.argv[4:]))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--warmup", type=float, default=40.0)
    parser.add_argument("--window", type=float, default=30.0)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--frames", type=int, default=1, help="frames kept per allocation (slower when > 1)")
    parser.add_argument("--drift", type=float, default=0.0,
                        help="seconds of daemon_scale's drift window; report what grew over it (0: one snapshot)")
    parser.add_argument("--scraped", action="store_true",
                        help="report what the first scrapes left (snapshots before and after them)")
    args = parser.parse_args()
    if args.scraped:
        args.drift = args.window  # its start is the sample after the scrapes
    if os.geteuid() != 0:
        sys.exit("daemon_memory: needs root (real cgroups)")
    snapshot_path = os.path.join(tempfile.mkdtemp(prefix="koordlet-memory-"), "daemon.tracemalloc")
    plain_command = daemon_scale.daemon_command
    plain_sample = daemon_scale.proc_sample
    taken: list[int] = []

    def traced_command(*command_args: Path | int) -> list[str]:
        command = plain_command(*command_args)  # type: ignore[arg-type]
        head = 3 if command[1:3] == ["-m", "koordlet"] else 1
        return [sys.executable, "-X", "tracemalloc=%d" % args.frames, "-m", "bench.daemon_memory", "--traced-daemon",
                snapshot_path, "--", *command[head:]]

    # the samples daemon_scale takes: quiet start, quiet end, create end; then with --drift
    # the drift window's start and one after each of its chunks
    chunks = max(1, round(args.drift / args.window)) if args.drift else 0
    if args.scraped:  # the create window's end, then the drift window's start: the scrapes between
        snapshot_at = {3: "start", 4: "end"}
    else:
        snapshot_at = {4: "start", 4 + chunks: "end"} if chunks else {2: "quiet"}

    def sample_and_snapshot(pid: int) -> daemon_scale.ProcSample:
        sample = plain_sample(pid)
        taken.append(sample.rss_kib)
        name = snapshot_at.get(len(taken))
        if name is not None:
            take_snapshot(pid, snapshot_path, "%s.%s" % (snapshot_path, name))
        return sample

    daemon_scale.daemon_command = traced_command  # type: ignore[assignment]
    daemon_scale.proc_sample = sample_and_snapshot
    daemon_scale.configure_logging("warning", "json")
    run_args = daemon_scale.parse_args(["--warmup", str(args.warmup), "--window", str(args.window),
                                        "--creates", "20", "--scrapes", "1", "--drift", str(args.drift)])
    print("daemon_memory: the daemon_scale daemon at %d pods x 2 containers under tracemalloc (%d frames); %s"
          % (args.pods, args.frames, "snapshots before and after the first scrapes" if args.scraped
             else "snapshots at the start and the end of a %.0f s drift window" % args.drift
             if args.drift else "snapshot at the end of a %.0f s quiet window after %.0f s of warm-up"
             % (args.window, args.warmup)), flush=True)
    result = daemon_scale.run_one(run_args, args.pods)
    print("daemon_scale figures of this (traced) run: rss_start_mib %.1f rss_end_mib %.1f hwm_mib %.1f"
          % (result["rss_start_mib"], result["rss_end_mib"], result["hwm_mib"]))
    paths = ["%s.%s" % (snapshot_path, name) for name in snapshot_at.values()]
    if not all(os.path.exists(path) for path in paths):
        sys.exit("daemon_memory: no snapshot from the daemon")
    snapshots = [tracemalloc.Snapshot.load(path) for path in paths]
    if args.scraped:
        report_growth(snapshots[0], snapshots[1], taken[2], taken[3], args.top, args.frames > 1, "over the scrapes")
    elif args.drift:
        report_growth(snapshots[0], snapshots[1], taken[3], taken[-1], args.top, args.frames > 1)
    else:
        report(snapshots[0], taken[1], args.pods, args.top)
        if args.frames > 1:
            by_own_frame(snapshots[0], args.pods, args.top)
    for path in paths:
        os.remove(path)
    os.rmdir(os.path.dirname(snapshot_path))


if __name__ == "__main__":
    main()
