"""What a default daemon imports at start: modules for features that are off stay unloaded."""

from __future__ import annotations

import subprocess
import sys

from koordlet.daemon.cli import parse_args
from koordlet.qosmanager.agent import STRATEGIES, strategies_for

# the daemon's entry modules and its default agents' build, as koordlet.__main__ runs them
# (the agents are only selected here: building them needs a host)
DEFAULT_START = """
import sys
import koordlet.__main__, koordlet.daemon.wiring
from koordlet.agents import AGENTS
from koordlet.daemon.cli import parse_args
from koordlet.qosmanager.agent import strategies_for
config = parse_args([])
enabled = [spec.name for spec in AGENTS if spec.enabled(config)]
strategies_for(config)
print(" ".join(sorted(sys.modules)))
"""


def test_default_start_leaves_off_features_unimported():
    loaded = set(subprocess.run([sys.executable, "-c", DEFAULT_START], check=True, capture_output=True,
                                text=True).stdout.split())
    assert "koordlet.qosmanager.cpu_suppress" in loaded  # on by default: the check below can see a module
    for off in ("koordlet.qosmanager.cpu_evict", "koordlet.qosmanager.memory_evict", "koordlet.qosmanager.victims",
                "koordlet.qosmanager.api_evictor", "koordlet.orm.module"):
        assert off not in loaded, off
    # grpc (~10 MiB) comes with the CRI client, made only when the informer starts with an endpoint
    assert "koordlet.statesinformer.module" in loaded
    assert "grpc" not in loaded and "koordlet.statesinformer.cri_client" not in loaded


def test_each_strategy_is_built_for_its_own_gate():
    all_on = parse_args(["--feature-gates=" + ",".join(gate + "=true" for gate, _ in STRATEGIES)])
    assert [strategy.gate for strategy in strategies_for(all_on)] == [gate for gate, _ in STRATEGIES]
