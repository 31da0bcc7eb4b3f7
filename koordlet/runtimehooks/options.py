"""The runtime hooks' own option; how the runtime is reached is koordlet.config.RuntimeOptions."""

from __future__ import annotations

from dataclasses import dataclass

from koordlet.config import defaults
from koordlet.config.option import option
from koordlet.config.parsers import parse_positive_duration


@dataclass(frozen=True, slots=True)
class HooksOptions:
    runtime_hooks_reconcile_interval: float = option(
        defaults.RUNTIME_HOOKS_RECONCILE_INTERVAL_SECONDS,
        "period of the reconcile loop's full pass: it writes every pod's plan, reads back the kube-QoS files and"
        " a rotating share of the pods' so that each file is checked once a force-update window (60 s); it"
        " also runs at once on a pod change, and reads back every file after each NRI (re)synchronize",
        parse_positive_duration, shown_default="10s")
