"""The hook timing histograms: koordlet's series per (hook, stage, status), the failed one
only once a hook has failed (Go's children appear on first use)."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from koordlet.apis.qos import KoordQoSClass
from koordlet.runtimehooks.allocations import NO_ALLOCATIONS
from koordlet.runtimehooks.engine import HookMetrics
from koordlet.runtimehooks.hook_config import HookConfig
from koordlet.runtimehooks.hooks import Hook
from koordlet.runtimehooks.spec import EMPTY_SPEC
from tests.koordlet.runtimehooks.fixtures import make_pod

CONFIG = HookConfig(node_cpus=frozenset(range(8)))
FAMILY = "koordlet_runtime_hook_invoked_duration_milliseconds_count"


def counts(registry: CollectorRegistry) -> dict[str, float]:
    out = {}
    for line in generate_latest(registry).decode().splitlines():
        if line.startswith(FAMILY):
            labels, value = line[len(FAMILY):].rsplit(" ", 1)
            out[labels] = float(value)
    return out


def test_the_failed_series_appears_with_the_first_failure() -> None:
    registry = CollectorRegistry()
    metrics = HookMetrics(registry, node="n1")
    calls = []

    def flaky(pod, container, config, allocations):
        calls.append(pod.uid)
        if len(calls) == 2:
            raise RuntimeError("boom")
        return EMPTY_SPEC

    timed = metrics.timed(Hook("Flaky", "Flaky", flaky), "create_container")
    pod = make_pod("p1", KoordQoSClass.LS)
    timed.decide(pod, None, CONFIG, NO_ALLOCATIONS)  # no loop: observed at once
    assert counts(registry) == {'{hook="Flaky",node="n1",stage="create_container",status="succeeded"}': 1.0}
    with pytest.raises(RuntimeError):
        timed.decide(pod, None, CONFIG, NO_ALLOCATIONS)
    assert counts(registry) == {'{hook="Flaky",node="n1",stage="create_container",status="succeeded"}': 1.0,
                                '{hook="Flaky",node="n1",stage="create_container",status="failed"}': 1.0}
