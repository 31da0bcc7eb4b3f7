"""koordlet's command lines run unchanged (facts: koordlet's flag definitions in
cmd/koordlet/options and pkg/koordlet/*/config.go, klog's flags, Koordinator's gates)."""

from __future__ import annotations

import pytest

from koordlet.config import ConfigError
from koordlet.config.command_line import flag_names
from koordlet.config.features import SPECS, gates_from_text
from koordlet.config.go_flags import KLOG_FLAGS, KOORDLET_FLAGS, KOORDLET_SAME_NAME, normalize
from koordlet.daemon.cli import SECTIONS, parse_args
from koordlet.metricsadvisor.options import AdvisorOptions
from koordlet.reporter.options import ReporterOptions
from koordlet.statesinformer.options import StatesOptions

# koordlet's gate names and defaults (pkg/features/koordlet_features.go and the runtime
# hooks' gates in pkg/koordlet/runtimehooks/config.go)
KOORDLET_GATES = {
    "AuditEvents": False, "AuditEventsHTTPHandler": False, "BECPUSuppress": True, "BECPUManager": False,
    "BECPUEvict": False, "CPUEvict": False, "CPUAllocatableEvict": False, "BEMemoryEvict": False,
    "MemoryEvict": False, "MemoryAllocatableEvict": False, "CPUBurst": True, "SystemConfig": False,
    "RdtResctrl": True, "ResctrlCollector": False, "CgroupReconcile": False, "NodeTopologyReport": True,
    "Accelerators": False, "RDMADevices": False, "CPICollector": False, "Libpfm4": False, "PSICollector": False,
    "BlkIOReconcile": False, "ColdPageCollector": False, "HugePageReport": False, "PodResourcesProxy": False,
    "HamiCoreVGPUMonitor": False, "PerCPUMetric": False, "NodeMetricPromMetrics": False,
    "GroupIdentity": True, "CPUSetAllocator": True, "GPUEnvInject": False, "RDMADeviceInject": False,
    "BatchResource": True, "CPUNormalization": False, "CoreSched": False, "TerwayQoS": False,
    "TCNetworkQoS": False, "Resctrl": False, "OOMScoreAdj": False,
}


def test_every_koordlet_gate_is_known_with_koordlets_default():
    assert {name: SPECS[name].koordlet_default for name in KOORDLET_GATES} == KOORDLET_GATES


def test_the_koordinator_charts_gates_parse_and_unbuilt_ones_are_named():
    gates = parse_args(["--feature-gates=Accelerators=true,CPUBurst=false,BECPUEvict=true"]).common.feature_gates
    assert not gates.enabled("CPUBurst") and gates.enabled("BECPUEvict")
    assert "Accelerators" in gates.enabled_unimplemented()


def test_all_beta_turns_on_every_beta_gate_not_named():
    gates = gates_from_text("AllBeta=false,CPUBurst=true")
    assert gates.enabled("CPUBurst")
    assert not gates.enabled("BECPUSuppress") and not gates.enabled("GroupIdentity")


@pytest.mark.parametrize("argv, addr", [
    (["-addr=:9400"], ":9400"), (["-addr", ":9400"], ":9400"), (["--addr=:9400"], ":9400"),
    (["--addr", ":9400"], ":9400"),
])
def test_go_flag_forms(argv, addr):
    assert parse_args(argv).common.addr == addr


@pytest.mark.parametrize("argv, want", [
    (["--enable-nri-runtime-hook"], True), (["-enable-nri-runtime-hook=false"], False),
    (["--enable-nri-runtime-hook", "false"], False), (["--enable-nri-runtime-hook=true"], True),
])
def test_a_bare_boolean_is_true_and_a_word_after_it_is_its_value(argv, want):
    assert parse_args(argv).runtime.enable_nri_runtime_hook is want


def test_a_negative_number_after_a_flag_is_a_value_not_a_flag():
    args, _ = normalize(["--x", "-1"], {"x": False})
    assert args == ["--x", "-1"]


def sample(flag) -> list[str]:
    return [f"--{flag.name}"] if flag.boolean else [f"--{flag.name}", "10s"]


@pytest.mark.parametrize("flag", [f for f in KOORDLET_FLAGS if f.ours is None], ids=lambda f: f.name)
def test_each_koordlet_flag_we_do_not_have_is_accepted_and_named_once(flag):
    config = parse_args(sample(flag) + sample(flag))
    assert len(config.notices) == 1 and f"--{flag.name} " in config.notices[0]


def test_ignored_flags_change_nothing():
    base = parse_args(["--node-name", "n"])
    argv = ["--node-name", "n"]
    for flag in KOORDLET_FLAGS:
        if flag.ours is None:
            argv += sample(flag)
    config = parse_args(argv)
    assert len(config.notices) == sum(1 for f in KOORDLET_FLAGS if f.ours is None)
    assert (config.common, config.runtime, dict(config.sections)) == (base.common, base.runtime, dict(base.sections))


def test_renamed_koordlet_flags_set_ours_in_our_units():
    config = parse_args(["-collect-res-used-interval=2s", "--psi-collector-interval", "1m",
                         "--report-interval=2m", "--var-lib-kubelet-dir=/k", "--kubelet-sync-interval", "30s"])
    advisor = config[AdvisorOptions]
    assert (advisor.collect_res_used_interval_seconds, advisor.psi_collector_interval_seconds) == (2.0, 60.0)
    assert config[ReporterOptions].report_interval_seconds == 120
    assert str(config[ReporterOptions].kubelet_root_dir) == "/k"
    assert config.notices == ()


def test_koordlets_kubelet_flags_set_the_timeout_and_skip_tls_verification():
    states = parse_args(["-kubelet-sync-timeout=3s", "-kubelet-insecure-tls"])[StatesOptions]
    assert (states.states_kubelet_sync_timeout, states.kubelet_insecure_tls) == (3.0, True)
    assert parse_args(["-kubelet-insecure-tls=false"])[StatesOptions].kubelet_insecure_tls is False


@pytest.mark.parametrize("name", sorted(KLOG_FLAGS))
def test_klog_flags_are_accepted_with_one_notice(name):
    value = ["-" + name] if KLOG_FLAGS[name] else ["-" + name + "=4"]
    config = parse_args(value + value)
    assert len(config.notices) == 1 and name in config.notices[0]


def test_v_is_not_an_abbreviation_of_version():
    assert parse_args(["--v=4"]).notices  # taken as klog's -v, not --version


def test_a_flag_neither_koordlet_nor_we_have_is_still_an_error():
    with pytest.raises(ConfigError, match="unrecognized arguments: -no-such-flag=1"):
        parse_args(["-no-such-flag=1"])


def test_same_name_flags_are_ours():
    assert KOORDLET_SAME_NAME <= set(flag_names(SECTIONS))
    assert not {f.name for f in KOORDLET_FLAGS} & set(flag_names(SECTIONS))
