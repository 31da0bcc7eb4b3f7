"""Counters under koordlet's exact names.

Go's client exposes a counter under the name it was given (`koordlet_pod_eviction`);
prometheus_client always adds `_total`. Dashboards and alerts written for koordlet query
the Go name, so these few counters are rendered here as text next to the registry's.
"""

from __future__ import annotations

from koordlet.metrics.text import Family, escape, render_families


class GoCounter:
    def __init__(self, name: str, help_text: str, label_names: tuple[str, ...]) -> None:
        self.name = name
        self.help_text = help_text
        self.label_names = label_names
        self._values: dict[tuple[str, ...], float] = {}

    def inc(self, *label_values: str, amount: float = 1.0) -> None:
        if len(label_values) != len(self.label_names):
            raise ValueError(f"{self.name} takes labels {self.label_names}")
        self._values[label_values] = self._values.get(label_values, 0.0) + amount

    def value(self, *label_values: str) -> float:
        return self._values.get(label_values, 0.0)

    def family(self) -> Family:
        family = Family(self.name, self.help_text, "counter")
        for values, count in sorted(list(self._values.items())):  # list(): one atomic copy
            family.add(",".join('%s="%s"' % (k, escape(v)) for k, v in zip(self.label_names, values)), count)
        return family


def render_counters(counters: tuple[GoCounter, ...], openmetrics: bool) -> bytes:
    return render_families([counter.family() for counter in counters], openmetrics)
