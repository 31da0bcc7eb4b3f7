"""A gauge with one series per container, rendered by hand.

CPU burst sets a value for every limited container each second (800 at 1,000 pods):
through prometheus_client that is a labels() lookup per set and a validated, formatted
sample line per scrape. Here a container's line start is made once per label set and a
set is a dict store; the family is rendered like the advisor's (text.Family)."""

from __future__ import annotations

from math import copysign

from koordlet.metrics.text import Family, escape, number

LABEL_NAMES = ("node", "pod_namespace", "pod_name", "container_id", "container_name")


class ContainerGauge:
    def __init__(self, name: str, help_text: str) -> None:
        self.name = name
        self.help_text = help_text
        # container id -> (its label values, "name{labels} ", value)
        self._rows: dict[str, tuple[tuple[str, ...], str, float]] = {}
        # container id -> ("name{labels} ", value, the line) of the last scrape: a set every
        # second mostly repeats the value, and spelling it was half of the family's render
        self._lines: dict[str, tuple[str, float, str]] = {}

    def set(self, labels: tuple[str, ...], value: float) -> None:
        """`labels` in LABEL_NAMES order; the container id is the series' identity."""
        if len(labels) != len(LABEL_NAMES):
            raise ValueError("%s takes labels %s" % (self.name, LABEL_NAMES))
        row = self._rows.get(labels[3])
        prefix = row[1] if row is not None and row[0] == labels else "%s{%s} " % (
            self.name, ",".join('%s="%s"' % (k, escape(v)) for k, v in zip(LABEL_NAMES, labels)))
        self._rows[labels[3]] = (labels, prefix, float(value))

    def value(self, container_id: str) -> float | None:
        row = self._rows.get(container_id)
        return None if row is None else row[2]

    def remove(self, container_id: str) -> None:
        self._rows.pop(container_id, None)

    def container_ids(self) -> list[str]:
        return list(self._rows)

    def family(self) -> Family:
        family = Family(self.name, self.help_text)
        kept, lines = self._lines, {}
        # list(): one atomic copy, the scrape runs in a thread while the loop sets values
        for container_id, (_, prefix, value) in list(self._rows.items()):
            line = kept.get(container_id)
            # 0.0 == -0.0, written differently: a zero's sign is compared too
            if line is None or line[0] is not prefix or line[1] != value or (
                    not value and copysign(1.0, value) != copysign(1.0, line[1])):
                line = (prefix, value, prefix + number(value) + "\n")
            lines[container_id] = line
        self._lines = lines  # containers gone since the last scrape drop out here
        family.lines = [line[2] for line in lines.values()]
        return family
