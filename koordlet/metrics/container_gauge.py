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
        # sets that changed a row and removals so far, and (that count, the encoded lines)
        # of the last scrape: a scrape after none reuses the block as it is (a set every
        # second mostly repeats the value); after one every line is spelled again, ~0.3 ms
        # at 800 containers, not kept a line each (0.3 MiB)
        self._changes = 0
        self._block: tuple[int, bytes] = (-1, b"")

    def set(self, labels: tuple[str, ...], value: float) -> None:
        """`labels` in LABEL_NAMES order; the container id is the series' identity."""
        if len(labels) != len(LABEL_NAMES):
            raise ValueError("%s takes labels %s" % (self.name, LABEL_NAMES))
        value = float(value)
        row = self._rows.get(labels[3])
        if row is not None and row[0] == labels:
            if _same(value, row[2]):
                return
            prefix = row[1]
        else:
            prefix = "%s{%s} " % (self.name, ",".join('%s="%s"' % (k, escape(v)) for k, v in zip(LABEL_NAMES, labels)))
        self._rows[labels[3]] = (labels, prefix, value)
        self._changes += 1

    def value(self, container_id: str) -> float | None:
        row = self._rows.get(container_id)
        return None if row is None else row[2]

    def remove(self, container_id: str) -> None:
        if self._rows.pop(container_id, None) is not None:
            self._changes += 1

    def container_ids(self) -> list[str]:
        return list(self._rows)

    def family(self) -> Family:
        family = Family(self.name, self.help_text)
        # read before the rows: a set meanwhile (the loop's, while this runs in the scrape's
        # thread) leaves a later count, so the next scrape makes the block again
        changes = self._changes
        block = self._block
        if block[0] != changes:
            block = (changes, "".join(self._lines_now()).encode())
            self._block = block
        family.blocks = [block[1]] if block[1] else []
        return family

    def _lines_now(self) -> list[str]:
        # list(): one atomic copy, the scrape runs in a thread while the loop sets values
        return [prefix + number(value) + "\n" for _, prefix, value in list(self._rows.values())]


def _same(value: float, other: float) -> bool:
    """Equal and spelled the same: 0.0 == -0.0 is written differently (NaN is never the same)."""
    return value == other and (value != 0.0 or copysign(1.0, value) == copysign(1.0, other))
