"""Draw a dashboard's panels as Prometheus answered them over a run: one small chart per
panel, in the dashboard's order, so a reviewer can see what an operator would."""

from __future__ import annotations

import math
from pathlib import Path

from tests.deploy.dashboard_run import Prometheus, panel_targets

LEGEND_LIMIT = 6


def series_of(prometheus: Prometheus, expr: str, legend: str, start: float, end: float) -> list[tuple[str, list[float], list[float]]]:
    step = max(1.0, (end - start) / 300)
    answer = prometheus.api("query_range", query=expr, start=str(start), end=str(end), step=str(step))
    out = []
    for result in answer.get("data", {}).get("result", []):
        label = legend
        for key, value in result["metric"].items():
            label = label.replace("{{%s}}" % key, value)
        xs = [float(t) - start for t, _ in result["values"]]
        ys = [float(v) for _, v in result["values"]]
        out.append((label, xs, ys))
    return out


def draw(dashboard: dict, prometheus: Prometheus, start: float, end: float, target: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [p for p in dashboard["panels"] if p["type"] != "row"]
    columns = 3
    rows = math.ceil(len(panels) / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(6 * columns, 3.2 * rows), squeeze=False)
    expressions = iter(panel_targets({"panels": panels}))
    for index, panel in enumerate(panels):
        axis = axes[index // columns][index % columns]
        drawn = 0
        for query in panel["targets"]:
            _, expr = next(expressions)
            for label, xs, ys in series_of(prometheus, expr, query.get("legendFormat", ""), start, end):
                axis.plot(xs, ys, label=label if drawn < LEGEND_LIMIT else None, linewidth=1.2)
                drawn += 1
        unit = panel.get("fieldConfig", {}).get("defaults", {}).get("unit", "")
        axis.set_title("%s [%s]" % (panel["title"], unit), fontsize=9)
        axis.tick_params(labelsize=7)
        axis.set_xlabel("seconds into the run", fontsize=7)
        if drawn:
            axis.legend(fontsize=6, loc="upper left")
        else:
            axis.text(0.5, 0.5, "no data in this run", ha="center", va="center", transform=axis.transAxes, fontsize=8)
    for index in range(len(panels), rows * columns):
        axes[index // columns][index % columns].axis("off")
    figure.suptitle("%s — %d s of one node" % (dashboard["title"], end - start))
    figure.tight_layout(rect=(0, 0, 1, 0.97))
    target.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(target, dpi=80)
    plt.close(figure)
