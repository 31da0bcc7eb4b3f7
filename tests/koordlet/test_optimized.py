"""The daemon as deployed runs under PYTHONOPTIMIZE=2 (python -OO: no docstrings, no asserts;
~1.4 MiB less RSS): it serves as it does without, its CLI works there, and every way the
project runs it (image, systemd unit, `make run`, the benches) sets the same level."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

from bench.daemon_scale import DEPLOYED_PYTHONOPTIMIZE, daemon_env
from tests.koordlet.daemon_process import PROJECT_ROOT, child_env, start_daemon


def optimized_env() -> dict[str, str]:
    return child_env(PYTHONOPTIMIZE=DEPLOYED_PYTHONOPTIMIZE)


def test_the_daemon_serves_without_docstrings_and_asserts(tmp_path):
    probe = "import sys; print(sys.flags.optimize, __doc__ is None)"
    assert subprocess.run([sys.executable, "-c", '"""doc"""\n' + probe], env=optimized_env(), capture_output=True,
                          text=True, check=True).stdout.split() == [DEPLOYED_PYTHONOPTIMIZE, "True"]
    daemon = start_daemon(tmp_path / "state", wait=60, env=optimized_env())
    try:
        deadline = time.monotonic() + 60
        while daemon.get("/readyz")[0] != 200:  # polled to a deadline: 200 once every module started
            assert daemon.proc.poll() is None and time.monotonic() < deadline, "not ready"
            time.sleep(0.05)
        while True:  # the collectors' first rates come a round after their first readings
            status, body, _ = daemon.get("/metrics")
            assert status == 200
            if b"\nkoordlet_node_used_cpu_cores{" in body:
                break
            assert time.monotonic() < deadline, "no node usage: " + body.decode()[-2000:]
            time.sleep(0.2)
        for family in (b"# TYPE koordlet_build_info gauge", b"# TYPE koordlet_collector_runs_total counter"):
            assert family in body, family
    finally:
        code, _ = daemon.terminate()
        assert code == 0, daemon.stderr()[-3000:]


def test_koordletctl_helps_without_its_docstring():
    result = subprocess.run([sys.executable, "-m", "koordlet.ctl", "--help"], cwd=PROJECT_ROOT, env=optimized_env(),
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: koordletctl")


def test_every_way_of_running_it_sets_the_same_level():
    level = DEPLOYED_PYTHONOPTIMIZE
    dockerfile = (PROJECT_ROOT / "deploy" / "Dockerfile").read_text()
    final_stage = dockerfile[dockerfile.rindex("\nFROM "):]
    env_at, compile_at = final_stage.index("ENV PYTHONOPTIMIZE=%s\n" % level), final_stage.index("compileall")
    assert env_at < compile_at < final_stage.index("ENTRYPOINT")  # compiled at that level, at build
    unit = (PROJECT_ROOT / "systemd" / "koordlet.service").read_text()
    assert re.search(r"^Environment=.*\bPYTHONOPTIMIZE=%s\b.*\bPYTHONPYCACHEPREFIX=/var/cache/koordlet/" % level,
                     unit, re.M)
    assert re.search(r"^CacheDirectory=koordlet$", unit, re.M)  # writable under ProtectSystem=strict
    run_recipe = re.search(r"^run:.*\n((?:\t.*\n)+)", (PROJECT_ROOT / "Makefile").read_text(), re.M)
    assert run_recipe is not None and "PYTHONOPTIMIZE=%s " % level in run_recipe.group(1)
    saved = os.environ.pop("PYTHONOPTIMIZE", None)
    try:
        assert daemon_env()["PYTHONOPTIMIZE"] == level  # the benches run it as deployed
    finally:
        if saved is not None:
            os.environ["PYTHONOPTIMIZE"] = saved
