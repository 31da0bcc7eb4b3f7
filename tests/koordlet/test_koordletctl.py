"""koordletctl against a running daemon (standalone), and against none."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from koordlet.ctl import views
from tests.koordlet.daemon_process import PROJECT_ROOT, free_port, start_daemon


def ctl(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "koordlet.ctl", *args], cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    proc = start_daemon(tmp_path_factory.mktemp("ctl") / "state")
    yield proc
    proc.terminate()


@pytest.mark.parametrize("command", ["status", "pods", "nodeslo"])
def test_each_command_answers_in_every_output(daemon, command):
    addr = f"127.0.0.1:{daemon.port}"
    table = ctl(command, "--addr", addr)
    assert table.returncode == 0, table.stderr
    assert table.stdout.strip()
    as_json = ctl(command, "--addr", addr, "-o", "json")
    document = json.loads(as_json.stdout)
    assert yaml.safe_load(ctl(command, "--addr", addr, "-o", "yaml").stdout) == document


def test_status_says_ready_and_nodeslo_names_its_source(daemon):
    addr = f"127.0.0.1:{daemon.port}"
    assert json.loads(ctl("status", "--addr", addr, "-o", "json").stdout)["ready"] is True
    table = ctl("nodeslo", "--addr", addr).stdout
    assert "source" in table and "spec.resourceUsedThresholdWithBE.enable" in table


def test_top_reads_metrics_once(daemon):
    result = ctl("top", "--addr", f"127.0.0.1:{daemon.port}", "-n", "1", "-o", "json")
    assert result.returncode == 0, result.stderr
    assert isinstance(json.loads(result.stdout), list)


def test_an_unreachable_daemon_is_one_line_and_exit_1():
    result = ctl("status", "--addr", f"127.0.0.1:{free_port()}")
    assert result.returncode == 1
    assert result.stderr.startswith("koordletctl: cannot reach koordlet at") and result.stderr.count("\n") == 1


def test_top_rows_sum_cpi_over_a_pods_containers_and_sort_by_cpu():
    text = "\n".join([
        'koordlet_pod_used_cpu_cores{pod_name="a",pod_namespace="d"} 0.5',
        'koordlet_pod_used_cpu_cores{pod_name="b",pod_namespace="d"} 1.5',
        'koordlet_container_cpi{pod_name="a",pod_namespace="d",container_id="1",cpi_field="cycles"} 300',
        'koordlet_container_cpi{pod_name="a",pod_namespace="d",container_id="1",cpi_field="instructions"} 100',
        'koordlet_container_cpi{pod_name="a",pod_namespace="d",container_id="2",cpi_field="cycles"} 100',
        'koordlet_container_cpi{pod_name="a",pod_namespace="d",container_id="2",cpi_field="instructions"} 100',
    ]) + "\n"
    rows = views.top_rows(text)
    assert [r["pod"] for r in rows] == ["d/b", "d/a"]
    assert rows[1]["cpi"] == 2.0 and rows[0]["cpi"] == "-"


def test_table_aligns_columns():
    out = views.table([{"a": "x", "bb": 1.0}, {"a": "longer", "bb": None}])
    assert out.splitlines() == ["A       BB", "x       1.000", "longer  -"]
