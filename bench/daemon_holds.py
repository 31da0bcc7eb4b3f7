"""Who holds the daemon's event loop: bench.daemon_scale with a lag probe inside the daemon.

    python -m bench.daemon_holds [--pods 1000] [--warmup 40] [--window 30] [--creates 200]
                                 [--hold-ms 3] [--gc-freeze-after S] [--out holds.json]

Runs bench.daemon_scale for one N, but starts koordlet through this module, which first
installs, in the daemon's process:
  - a probe thread that posts a callback to the daemon's loop every PROBE_GAP s and times
    how long the loop takes to run it (the lag: how long the loop was held);
  - while a posted callback waits, samples of the loop thread's stack (the innermost and
    outermost project frames), so each hold names who held the loop, and of the other
    threads' (asyncio.to_thread workers): when the loop thread shows no project frame, a
    worker holding the GIL is named instead ("thread: ..."), and when no worker is in
    project code either, the loop thread's innermost frame of any code ("? ~file:function";
    the probe needs the GIL to sample, so a sample shows where the loop waited, e.g. in
    the loop's own C code re-taking the GIL after a system call, not always who held it);
  - gc.callbacks timing every collection by generation (a full collection holds the GIL
    and so the loop; the probe thread cannot sample it, the callback times it);
  - with --callbacks, the daemon runs on asyncio's own loop instead of uvloop, and every
    callback the loop runs is timed (wall and the loop thread's CPU); a hold is then named
    by the callbacks that ran inside it (a task by its coroutine and where it suspended),
    and what no callback covers is the loop's own work between them. This names holds the
    sampler cannot: it needs the GIL, and gets it only once the holder has returned.
The daemon applies its own collector policy after start-up (koordlet/daemon/gc_policy.py);
--gc-freeze-after S (another settle_heap() S seconds after the loop starts), --gc-refreeze
for experiments on top of it, --gc-young N sets its --gc-young-threshold, --gc-freeze-from G
its FREEZE_FROM_GENERATION (what survives a pass of G or older is frozen), --switch-interval
S its sys.setswitchinterval.

Prints the daemon_scale JSON line, then: the lag distribution over the create window, each
hold longer than --hold-ms with its holder, gen-2 collections (count, p50, max ms) and the
passes of each generation in the window.
The floor is the probe's own lag on the empty plugin's process is not measured; the
CreateContainer floor (empty plugin) is daemon_scale's.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import gc
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

PROBE_GAP = 0.002  # s between two posted callbacks when the loop is free
SAMPLE_GAP = 0.001  # s between two stack samples while a callback waits
CALLBACK_MS = 0.3  # with --callbacks: callbacks at least this long are recorded
PROJECT_DIRS = ("koordlet", "nri", "resourceexecutor", "system", "prometheus_client", "structlog")
LOOP_FRAMES = ("koordlet/__main__.py", "/asyncio/", "bench/daemon_holds.py")


# -- in the daemon ------------------------------------------------------------------------


_ROOT = str(Path(__file__).resolve().parents[1]) + "/"  # frames are named relative to the project


def _where(frame) -> tuple[str, str]:
    """(innermost project frame, the task's two outermost project frames below the loop),
    each as path:function."""
    names = []
    innermost = frame
    while frame is not None:
        path = frame.f_code.co_filename
        if any("/%s/" % d in path for d in PROJECT_DIRS) and not any(f in path for f in LOOP_FRAMES):
            names.append("%s:%s" % (path.split("/site-packages/")[-1].removeprefix(_ROOT), frame.f_code.co_name))
        frame = frame.f_back
    if not names:  # no project frame: name the innermost frame of any code (stdlib, asyncio), marked "~"
        return "", ("~%s:%s" % (innermost.f_code.co_filename.split("/lib/python3")[-1], innermost.f_code.co_name)
                    if innermost is not None else "")
    outer = [n for n in names if not n.startswith("koordlet/util/periodic.py")][-2:]
    return names[0], " < ".join(reversed(outer))


class Probe:
    def __init__(self, out: Path, hold_ms: float) -> None:
        self.out = out
        self.hold_s = hold_ms / 1000.0
        self.loop = None
        self.lags: list[tuple[float, float]] = []  # (monotonic at post, lag s)
        self.holds: list[dict] = []
        self.gcs: list[tuple[float, int, float]] = []  # (monotonic at start, generation, s)
        self._gc_start = 0.0
        self._main = threading.main_thread().ident
        self._schedstat = "/proc/self/task/%d/schedstat" % threading.main_thread().native_id
        self.froze_at = None
        self.callbacks: list[tuple[float, float, float, str]] = []  # (monotonic at start, wall s, cpu s, name)

    def gc_callback(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._gc_start = time.monotonic()
        else:
            self.gcs.append((self._gc_start, info["generation"], time.monotonic() - self._gc_start))

    def loop_cpu(self) -> float:
        """CPU time of the loop's thread, s (a hold can be the loop working or the loop
        descheduled on a busy machine: only the first is the holder's cost)."""
        with open(self._schedstat) as f:
            return int(f.read().split()[0]) / 1e9

    def run(self) -> None:
        while True:
            if self.loop is None or self.loop.is_closed():
                time.sleep(0.05)
                continue
            ran = threading.Event()
            posted, cpu = time.monotonic(), self.loop_cpu()
            try:
                self.loop.call_soon_threadsafe(ran.set)
            except RuntimeError:
                return
            samples: collections.Counter = collections.Counter()
            workers: collections.Counter = collections.Counter()  # other threads in project code meanwhile
            me = threading.get_ident()
            while not ran.wait(SAMPLE_GAP):
                frames = sys._current_frames()
                frame = frames.get(self._main)
                if frame is not None:
                    samples[_where(frame)] += 1
                for ident, other in frames.items():
                    if ident not in (self._main, me) and _where(other)[0]:
                        workers[" < ".join(_where(other))] += 1
            lag = time.monotonic() - posted
            cpu = self.loop_cpu() - cpu
            self.lags.append((posted, lag))
            if lag >= self.hold_s:
                done = time.monotonic()
                gc_s = sum(min(at + s, done) - max(at, posted) for at, _, s in self.gcs[-20:]
                           if at < done and at + s > posted)
                self.holds.append({"at": posted, "ms": lag * 1000, "cpu_ms": cpu * 1000, "gc_ms": gc_s * 1000,
                                   "holders": [[inner, outer, n] for (inner, outer), n in samples.most_common(3)],
                                   "threads": workers.most_common(2)})
            time.sleep(PROBE_GAP)

    def dump(self) -> None:
        """Once, as the daemon exits: writing the whole record holds the GIL (and so the loop)
        for tens of ms at the end of a run, unseen by the probe, which is busy writing it.
        Dumped every 5 s that was the CreateContainer tail of this bench (p99 33-45 ms, max
        47-51 ms at 1,000 pods, against 3.9 / 5.1 ms under bench.daemon_scale alone)."""
        data = {"lags": self.lags, "holds": self.holds, "gcs": self.gcs, "froze_at": self.froze_at,
                "callbacks": self.callbacks}
        tmp = self.out.with_suffix(".tmp")
        tmp.write_text(json.dumps(data))
        os.replace(tmp, self.out)


def _callback_name(handle) -> str:
    """What a loop callback runs: a task's name and the two innermost coroutines it now waits
    in (with their lines; "done" when it finished), else the callback's own qualified name."""
    callback = handle._callback
    task = getattr(callback, "__self__", None)
    if isinstance(task, asyncio.Task):
        return "task %s @ %s" % (task.get_name(), _suspended_at(task.get_coro()))
    inner = getattr(callback, "func", callback)  # functools.partial
    return "%s.%s" % (getattr(inner, "__module__", "?"), getattr(inner, "__qualname__", repr(inner)[:80]))


def _suspended_at(coro) -> str:
    """Where a task's coroutine waits: its two innermost coroutines, and when the innermost
    drives a generator in steps (a collection round, framework.drive_async; steps.run_steps_on_loop),
    that generator's two innermost frames."""
    chain, round_, awaited = [], None, coro
    while awaited is not None and getattr(awaited, "cr_frame", None) is not None:
        frame = awaited.cr_frame
        chain.append("%s:%d" % (awaited.cr_code.co_qualname, frame.f_lineno))
        if awaited.cr_code.co_name in ("drive_async", "run_steps_on_loop"):  # what they drive: a generator
            round_ = frame.f_locals.get("round_") or frame.f_locals.get("steps")
        awaited = awaited.cr_await
    where = " > ".join(chain[-2:]) or "done"
    steps = []
    while round_ is not None and getattr(round_, "gi_frame", None) is not None:
        steps.append("%s:%d" % (round_.gi_code.co_qualname, round_.gi_frame.f_lineno))
        round_ = round_.gi_yieldfrom
    return where + (" [%s]" % " > ".join(steps[-2:]) if steps else "")


def time_callbacks(probe: Probe) -> None:
    """Wrap asyncio's Handle._run (the pure-Python loop's one way to run a callback) to
    record every callback of CALLBACK_MS or more."""
    run = asyncio.events.Handle._run
    least = CALLBACK_MS / 1000.0
    monotonic, thread_time = time.monotonic, time.thread_time

    def timed_run(handle) -> None:
        task = getattr(handle._callback, "__self__", None)
        resumed = _suspended_at(task.get_coro()) if isinstance(task, asyncio.Task) else ""
        start, cpu = monotonic(), thread_time()
        run(handle)
        wall = monotonic() - start
        if wall >= least:
            name = _callback_name(handle)
            probe.callbacks.append((start, wall, thread_time() - cpu, name + (" from " + resumed if resumed else "")))

    asyncio.events.Handle._run = timed_run  # type: ignore[method-assign]


def as_daemon(out: str, hold_ms: float, freeze_after: float, argv: list[str]) -> int:
    import koordlet.daemon.wiring as wiring
    from koordlet.__main__ import main

    probe = Probe(Path(out), hold_ms)
    if os.environ.get("DAEMON_HOLDS_SWITCH_INTERVAL"):
        sys.setswitchinterval(float(os.environ["DAEMON_HOLDS_SWITCH_INTERVAL"]))
    if os.environ.get("DAEMON_HOLDS_FREEZE_FROM"):
        from koordlet.daemon import gc_policy

        gc_policy.FREEZE_FROM_GENERATION = int(os.environ["DAEMON_HOLDS_FREEZE_FROM"])
    gc.callbacks.append(probe.gc_callback)
    make_loop = wiring.loop_factory()
    if os.environ.get("DAEMON_HOLDS_CALLBACKS"):
        make_loop = asyncio.new_event_loop
        time_callbacks(probe)

    def probed_loop():
        loop = make_loop()
        probe.loop = loop
        if freeze_after > 0:
            from koordlet.util.heap import keep_heap_settled, settle_heap

            def settle() -> None:
                probe.froze_at = time.monotonic()
                settle_heap()
                if os.environ.get("DAEMON_HOLDS_REFREEZE"):
                    keep_heap_settled()
            loop.call_later(freeze_after, settle)
        return loop

    wiring.loop_factory = lambda: probed_loop
    threading.Thread(target=probe.run, name="lag-probe", daemon=True).start()
    try:
        return main(argv)
    finally:
        probe.dump()


# -- in the bench -------------------------------------------------------------------------


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def passes(ms: list[float]) -> dict[str, float]:
    return {"n": len(ms), "p50_ms": pct(ms, 0.5), "max_ms": max(ms, default=0.0), "sum_ms": sum(ms)}


def _named_by_callbacks(hold: dict, callbacks: list) -> str:
    """The callback that covers most of the hold (with --callbacks), or what covers none of it."""
    start, end = hold["at"], hold["at"] + hold["ms"] / 1000.0
    cover: collections.Counter = collections.Counter()
    for at, wall, _, name in callbacks:
        overlap = min(at + wall, end) - max(at, start)
        if overlap > 0:
            cover[name] += overlap
    if not cover:
        return "between callbacks"
    name, covered = cover.most_common(1)[0]
    return ("cb: " if covered >= 0.5 * (end - start) else "partly cb: ") + name


def _callback_table(callbacks: list, hold_ms: float) -> dict:
    """Callbacks of hold_ms or more, by name: n, max wall and cpu ms."""
    long: dict[str, list[tuple[float, float]]] = collections.defaultdict(list)
    for _, wall, cpu, name in callbacks:
        if wall * 1000 >= hold_ms:
            long[name].append((wall * 1000, cpu * 1000))
    return {k: {"n": len(v), "max_ms": round(max(w for w, _ in v), 2), "max_cpu_ms": round(max(c for _, c in v), 2)}
            for k, v in sorted(long.items(), key=lambda kv: -max(w for w, _ in kv[1]))}


def report(data: dict, window: tuple[float, float], hold_ms: float) -> dict:
    lo, hi = window
    lags = [lag * 1000 for at, lag in data["lags"] if lo <= at <= hi]
    holds = [h for h in data["holds"] if lo <= h["at"] <= hi]
    gen2 = [s * 1000 for at, gen, s in data["gcs"] if gen == 2 and lo <= at <= hi]
    gen2_all = [s * 1000 for _, gen, s in data["gcs"] if gen == 2]
    callbacks = [c for c in data.get("callbacks", ()) if lo <= c[0] <= hi]
    by_holder: dict[str, list[tuple[float, float]]] = collections.defaultdict(list)
    for h in holds:
        named = _named_by_callbacks(h, callbacks) if callbacks else None
        name = named if named else "gc" if h["gc_ms"] >= 0.5 * h["ms"] else (
            " <- ".join(h["holders"][0][:2]) if h["holders"] and h["holders"][0][0] else
            "thread: " + h["threads"][0][0] if h.get("threads") else
            "? " + h["holders"][0][1] if h["holders"] and h["holders"][0][1] else "?")
        by_holder[name].append((h["ms"], h["cpu_ms"]))
    return {
        "lag_ms": {"p50": pct(lags, 0.5), "p99": pct(lags, 0.99), "max": max(lags, default=0.0), "n": len(lags)},
        "holds_over_ms": hold_ms, "holds": len(holds),
        "by_holder": {k: {"n": len(v), "max_ms": max(w for w, _ in v), "max_cpu_ms": max(c for _, c in v),
                          "sum_ms": sum(w for w, _ in v)}
                      for k, v in sorted(by_holder.items(), key=lambda kv: -max(c for _, c in kv[1]))},
        "callbacks": _callback_table(callbacks, hold_ms),
        "gen2_in_window": {"n": len(gen2), "p50_ms": pct(gen2, 0.5), "max_ms": max(gen2, default=0.0)},
        "passes_in_window": {gen: passes([s * 1000 for at, g, s in data["gcs"] if g == gen and lo <= at <= hi])
                             for gen in (0, 1, 2)},
        "gen2_whole_run": {"n": len(gen2_all), "p50_ms": pct(gen2_all, 0.5), "max_ms": max(gen2_all, default=0.0)},
    }


def scale_arguments(args: argparse.Namespace) -> argparse.Namespace:
    """daemon_scale's options for `run_one`: its defaults, with this bench's window."""
    from bench import daemon_scale as scale
    return scale.parse_args(["--warmup", str(args.warmup), "--window", str(args.window),
                             "--creates", str(args.creates), "--scrapes", "2"])


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--as-daemon":
        out, hold_ms, freeze_after = sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
        sys.exit(as_daemon(out, hold_ms, freeze_after, sys.argv[5:]))
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--warmup", type=float, default=40.0)
    parser.add_argument("--window", type=float, default=30.0)
    parser.add_argument("--creates", type=int, default=200)
    parser.add_argument("--hold-ms", type=float, default=3.0)
    parser.add_argument("--gc-freeze-after", type=float, default=0.0,
                        help="settle_heap() this many s after the daemon's loop starts (0: never)")
    parser.add_argument("--gc-refreeze", action="store_true",
                        help="with --gc-freeze-after: keep_heap_settled() too (freeze after every full collection)")
    parser.add_argument("--gc-young", type=int, default=0,
                        help="the daemon's --gc-young-threshold (0: its default)")
    parser.add_argument("--gc-freeze-from", type=int, default=-1,
                        help="the daemon's gc_policy.FREEZE_FROM_GENERATION (-1: its default; 2: full passes only)")
    parser.add_argument("--switch-interval", type=float, default=0.0,
                        help="the daemon's sys.setswitchinterval (0: the interpreter's 0.005 s): how long a worker "
                             "thread (asyncio.to_thread) running Python keeps the GIL while the loop waits for it")
    parser.add_argument("--callbacks", action="store_true",
                        help="run the daemon on asyncio's own loop and time every callback (names each hold)")
    parser.add_argument("--out", default=None,
                        help="where the daemon's probe writes its samples (default: a new temp dir a run, so "
                             "two runs at once never share one file)")
    args = parser.parse_args()
    if args.out is None:
        args.out = os.path.join(tempfile.mkdtemp(prefix="daemon-holds-"), "holds.json")
    from bench import daemon_scale as scale

    scale.configure_logging("warning", "json")
    if os.geteuid() != 0:
        sys.exit("daemon_holds: needs root (real cgroups)")
    plain_command = scale.daemon_command

    def probed_command(*a):
        plain = plain_command(*a)
        flags = plain[plain.index("--addr"):]
        young = ["--gc-young-threshold", str(args.gc_young)] if args.gc_young else []
        return [sys.executable, "-m", "bench.daemon_holds", "--as-daemon", args.out, str(args.hold_ms),
                str(args.gc_freeze_after)] + flags + young

    scale.daemon_command = probed_command
    if args.switch_interval > 0:
        os.environ["DAEMON_HOLDS_SWITCH_INTERVAL"] = str(args.switch_interval)
    if args.gc_freeze_from >= 0:
        os.environ["DAEMON_HOLDS_FREEZE_FROM"] = str(args.gc_freeze_from)  # the daemon inherits it
    if args.gc_refreeze:
        os.environ["DAEMON_HOLDS_REFREEZE"] = "1"  # the daemon inherits it
    if args.callbacks:
        os.environ["DAEMON_HOLDS_CALLBACKS"] = "1"  # the daemon inherits it
    window: list[float] = []
    plain_probes = scale.create_probes

    async def timed_probes(*a):
        window.append(time.monotonic())
        try:
            return await plain_probes(*a)
        finally:
            window.append(time.monotonic())

    scale.create_probes = timed_probes
    result = scale.run_one(scale_arguments(args), args.pods)
    print(json.dumps({k: result[k] for k in ("pods", "create", "floor", "ratio_p50", "ratio_p99",
                                             "cpu_pct_quiet", "cpu_pct_creates", "rss_end_mib")}))
    data = json.loads(Path(args.out).read_text())
    print("samples:", args.out)
    print("create window:", json.dumps(report(data, (window[0], window[1]), args.hold_ms), indent=1))
    print("whole run:", json.dumps(report(data, (0.0, float("inf")), args.hold_ms)["by_holder"], indent=1))


if __name__ == "__main__":
    main()
