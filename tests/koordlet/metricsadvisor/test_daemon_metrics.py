"""The running daemon: node figures on /metrics, promtool-clean, and samples kept over a restart."""

from __future__ import annotations

import shutil
import sqlite3
import time
from contextlib import closing
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.koordlet.daemon_process import start_daemon
from tests.promtool import promtool_problems


def wait_for_family(daemon, name: str, timeout: float = 10.0) -> bytes:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, body, _ = daemon.get("/metrics")
        assert status == 200
        if any(f.name == name for f in text_string_to_metric_families(body.decode())):
            return body
        time.sleep(0.2)
    raise AssertionError("%s never appeared on /metrics" % name)


@pytest.mark.slow
def test_live_scrape_has_node_usage_and_passes_promtool(tmp_path: Path):
    daemon = start_daemon(tmp_path)
    try:
        body = wait_for_family(daemon, "koordlet_node_used_cpu_cores")
        families = {f.name: f for f in text_string_to_metric_families(body.decode())}
        assert families["koordlet_node_used_memory_bytes"].samples[0].value > 0
        assert "koordlet_collector_runs" in families
        if shutil.which("promtool"):
            assert promtool_problems(body) == []
    finally:
        code, _ = daemon.terminate()
    assert code == 0
    with closing(sqlite3.connect(tmp_path / "metric-cache.sqlite")) as db, db:
        (rows,) = db.execute("SELECT count(*) FROM samples").fetchone()
    assert rows >= 1  # node memory at least: flushed at stop
