"""Flags, config file merge and feature gates."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from koordlet.config import ConfigError, defaults, parse_addr
from koordlet.config.features import SPECS, FeatureGateError, parse_feature_gates, resolve
from koordlet.config.parsers import parse_bool, parse_duration
from koordlet.daemon.cli import TABLES, parse_args, table_span


def test_defaults_come_from_the_defaults_module():
    config = parse_args([])
    assert config.common.addr == defaults.ADDR == ":9316"
    assert config.common.cgroup_root_dir == defaults.CGROUP_ROOT_DIR
    assert config.common.proc_root_dir == defaults.PROC_ROOT_DIR
    assert config.common.sys_root_dir == defaults.SYS_ROOT_DIR
    assert config.runtime.nri_socket == Path("/var/run/nri/nri.sock")
    assert config.common.state_dir == Path("/var/lib/koordlet")
    assert config.common.node_name  # the host name
    assert config.common.kubeconfig is None
    assert all(config.common.feature_gates.enabled(name) == spec.default for name, spec in SPECS.items())


def test_flags_override_defaults():
    config = parse_args(["--addr", "127.0.0.1:1234", "--node-name", "n1", "--cgroup-root-dir", "/tmp/cg",
                         "--feature-gates", "CPUBurst=false,CPICollector=true"])
    assert config.common.addr == "127.0.0.1:1234"
    assert config.common.node_name == "n1"
    assert config.common.cgroup_root_dir == Path("/tmp/cg")
    assert not config.common.feature_gates.enabled("CPUBurst")
    assert config.common.feature_gates.enabled("CPICollector")
    assert config.common.feature_gates.overridden() == {"CPUBurst": False, "CPICollector": True}


def test_config_file_yaml_is_merged_and_flags_win(tmp_path):
    path = tmp_path / "koordlet.yaml"
    path.write_text("addr: 127.0.0.1:7000\nnode_name: from-file\nlog-level: debug\n"
                    "feature-gates:\n  CPUBurst: false\n")
    config = parse_args(["--config", str(path), "--node-name", "from-flag"])
    assert config.common.addr == "127.0.0.1:7000"
    assert config.common.node_name == "from-flag"
    assert config.common.log_level == "debug"
    assert not config.common.feature_gates.enabled("CPUBurst")
    assert config.config_file == path


def test_config_file_json_with_gate_string(tmp_path):
    path = tmp_path / "koordlet.json"
    path.write_text(json.dumps({"state-dir": "/tmp/s", "feature-gates": "PSICollector=false"}))
    config = parse_args(["--config", str(path)])
    assert config.common.state_dir == Path("/tmp/s")
    assert not config.common.feature_gates.enabled("PSICollector")


@pytest.mark.parametrize("content, message", [
    ("addr: [1, 2]\n", "expected a single value"),
    ("no-such-key: 1\n", "unknown key"),
    ("- a\n- b\n", "must hold a mapping"),
    ("addr: :1\n  bad: indent\n", "not valid YAML"),
    ("log-level: loud\n", "not one of"),
    ("feature-gates: {CPUBurst: maybe}\n", "not a boolean"),
])
def test_bad_config_file_is_a_clear_error(tmp_path, content, message):
    path = tmp_path / "c.yaml"
    path.write_text(content)
    with pytest.raises(ConfigError, match=message):
        parse_args(["--config", str(path)])


def test_missing_config_file_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read config file"):
        parse_args(["--config", str(tmp_path / "absent.yaml")])


def test_unknown_gate_and_bad_value_are_errors():
    with pytest.raises(FeatureGateError, match="unknown feature gate 'Nope'"):
        parse_feature_gates("Nope=true")
    with pytest.raises(FeatureGateError, match="not a boolean"):
        parse_feature_gates("CPUBurst=perhaps")
    with pytest.raises(FeatureGateError, match="NAME=true"):
        parse_feature_gates("CPUBurst")
    with pytest.raises(ConfigError, match="feature-gates"):
        parse_args(["--feature-gates", "Nope=true"])


@given(st.dictionaries(st.sampled_from(sorted(SPECS)), st.booleans()))
def test_feature_gate_text_round_trips(states):
    text = ",".join(f"{name}={str(on).lower()}" for name, on in states.items())
    assert parse_feature_gates(text) == states
    gates = resolve(states)
    for name, spec in SPECS.items():
        assert gates.enabled(name) == states.get(name, spec.default)


@pytest.mark.parametrize("addr, expected", [
    (":9316", (None, 9316)),
    ("127.0.0.1:80", ("127.0.0.1", 80)),
    ("[::1]:9316", ("::1", 9316)),
    ("0.0.0.0:0", ("0.0.0.0", 0)),
])
def test_parse_addr(addr, expected):
    assert parse_addr(addr) == expected


@pytest.mark.parametrize("addr", ["9316", "host:port", ":70000"])
def test_parse_addr_rejects_bad_input(addr):
    with pytest.raises(ConfigError):
        parse_addr(addr)


def test_standalone_unless_kubeconfig_or_in_pod(monkeypatch):
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert parse_args([]).common.standalone
    assert not parse_args(["--kubeconfig", "/etc/kube.conf"]).common.standalone
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    assert not parse_args([]).common.standalone


@pytest.mark.parametrize("text, seconds", [
    ("10s", 10.0), ("500ms", 0.5), ("1m30s", 90.0), ("2h", 7200.0), ("250us", 0.00025),
    ("1.5", 1.5), ("0", 0.0), (" 3s ", 3.0),
])
def test_parse_duration_accepts_go_style_and_bare_seconds(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "s", "10x", "-1", "-1s", "inf", "nan", "1s-2s"])
def test_parse_duration_rejects_bad_text(text):
    with pytest.raises(ValueError):
        parse_duration(text)


@pytest.mark.parametrize("text, value", [("true", True), ("False", False), ("1", True), ("off", False)])
def test_parse_bool(text, value):
    assert parse_bool(text) is value


def test_parse_bool_rejects_other_words():
    with pytest.raises(ValueError, match="not a boolean"):
        parse_bool("maybe")


def test_gates_on_for_unbuilt_features_are_named_built_ones_are_not(monkeypatch):
    from koordlet.config import features

    unbuilt_specs = dict(features.SPECS)
    for name in ("RdtResctrl", "NodeTopologyReport"):
        unbuilt_specs[name] = dataclasses.replace(features.SPECS[name], implemented=False)
    unbuilt_specs["BECPUSuppress"] = dataclasses.replace(features.SPECS["BECPUSuppress"], implemented=True)
    monkeypatch.setattr(features, "SPECS", unbuilt_specs)
    gates = features.resolve({"RdtResctrl": True, "NodeTopologyReport": True, "BECPUSuppress": True})
    assert gates.enabled_unimplemented() == ("NodeTopologyReport", "RdtResctrl")
    assert features.resolve({"RdtResctrl": False, "NodeTopologyReport": False}).enabled_unimplemented() == ()


@pytest.mark.parametrize("name", sorted(TABLES))
def test_readme_tables_are_the_ones_the_declarations_make(name):
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    begin, end = table_span(readme, name)
    rows = [line for line in readme[begin:end].splitlines() if line.startswith("| ") and not line.startswith("| flag")
            and not line.startswith("| koordlet flag") and not line.startswith("| gate")]
    assert rows == TABLES[name][1](), "run `make docs` to regenerate README's tables"


def test_each_section_default_is_what_its_flag_parses_to():
    """A declared default must be the value its own shown text would parse to (no literal
    that bypasses defaults.py and disagrees with it)."""
    from koordlet.config.command_line import BUILT_IN
    from koordlet.config.option import declared
    from koordlet.daemon.cli import SECTIONS

    for section in BUILT_IN + SECTIONS:
        for item in declared(section):
            if item.option.shown_default is not None or item.default in (None, ""):
                continue
            assert item.option.parse(item.shown_default) == item.default, item.flag


def test_values_below_a_documented_minimum_are_refused():
    with pytest.raises(ConfigError, match="report-interval-seconds: 1 must be at least 30"):
        parse_args(["--report-interval-seconds", "1"])
    with pytest.raises(ConfigError, match="aggregate-duration-seconds: 59 must be at least 60"):
        parse_args(["--aggregate-duration-seconds", "59"])
