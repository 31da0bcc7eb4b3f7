"""What each koordletctl command shows: the daemon's JSON (or /metrics) to rows. Pure."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from prometheus_client.parser import text_string_to_metric_families

Rows = list[dict[str, Any]]


def status_rows(readyz: Mapping[str, Any], healthz_ok: bool) -> Rows:
    return [{"healthy": healthz_ok, "ready": readyz.get("ready", False),
             "notReady": ",".join(readyz.get("notReady", ())) or "-",
             "degraded": ",".join(f"{k}: {v}" for k, v in readyz.get("degraded", {}).items()) or "-"}]


def _spec_text(spec: Mapping[str, Any]) -> str:
    return " ".join(f"{key}={value}" for key, value in spec.items()) or "-"


def pod_rows(pods: Mapping[str, Any]) -> Rows:
    rows = []
    for pod in pods.get("pods", ()):
        rows.append({"pod": f"{pod['namespace']}/{pod['name']}", "container": "", "qos": pod["qosClass"],
                     "spec": _spec_text(pod["spec"])})
        rows += [{"pod": "", "container": c["name"], "qos": "", "spec": _spec_text(c["spec"])}
                 for c in pod.get("containers", ())]
    return rows


def allocation_rows(topology: Mapping[str, Any]) -> Rows:
    return [{"pod": f"{a['podNamespace']}/{a['podName']}", "container": a["containerName"],
             "resource": a["resourceName"], "result": a["allocationResult"] or a["allocatedQuantity"],
             "numa": ",".join(map(str, a["numaNodes"])) or "-"} for a in topology.get("allocations", ())]


def nodemetric_rows(nodemetric: Mapping[str, Any]) -> Rows:
    status = nodemetric.get("status", {})
    node = status.get("nodeMetric", {})
    rows = []
    for what, usage in (("node", node.get("nodeUsage", {})), ("system", node.get("systemUsage", {}))):
        resources = usage.get("resources", {})
        rows.append({"usage": what, "cpu": resources.get("cpu", "-"), "memory": resources.get("memory", "-")})
    for aggregated in node.get("aggregatedNodeUsages", ()):
        for percentile, usage in sorted(aggregated.get("usage", {}).items()):
            resources = usage.get("resources", {})
            rows.append({"usage": f"{percentile} over {aggregated.get('duration', '?')}",
                         "cpu": resources.get("cpu", "-"), "memory": resources.get("memory", "-")})
    return rows


def annotation_rows(obj: Mapping[str, Any]) -> Rows:
    return [{"key": key, "value": value}
            for key, value in sorted(obj.get("metadata", {}).get("annotations", {}).items())]


def nodeslo_rows(nodeslo: Mapping[str, Any]) -> Rows:
    rows = [{"field": "source", "value": nodeslo.get("source", "-")},
            {"field": "lastError", "value": nodeslo.get("lastError") or "-"}]
    rows += [{"field": path, "value": value} for path, value in _flatten(nodeslo.get("spec", {}), "spec")]
    return rows


def _flatten(value: Any, path: str) -> Iterable[tuple[str, Any]]:
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield from _flatten(item, f"{path}.{key}")
    else:
        yield path, value


_TOP = {
    "koordlet_pod_used_cpu_cores": "cpu",
    "koordlet_pod_used_memory_bytes": "memory",
    "koordlet_pod_cpu_throttled_ratio": "throttled",
}


def top_rows(metrics_text: str) -> Rows:
    """Per pod: CPU cores, memory, throttled ratio, CPI (cycles / instructions summed over
    its containers) and the cpu PSI some avg10."""
    pods: dict[tuple[str, str], dict[str, Any]] = {}
    cycles: dict[tuple[str, str], float] = {}
    instructions: dict[tuple[str, str], float] = {}
    for family in text_string_to_metric_families(metrics_text):
        for sample in family.samples:
            labels = sample.labels
            if "pod_name" not in labels:
                continue
            key = (labels.get("pod_namespace", ""), labels["pod_name"])
            row = pods.setdefault(key, {"pod": f"{key[0]}/{key[1]}"})
            column = _TOP.get(sample.name)
            if column is not None:
                row[column] = sample.value
            elif sample.name == "koordlet_container_cpi":
                target = cycles if labels.get("cpi_field") == "cycles" else instructions
                target[key] = target.get(key, 0.0) + sample.value
            elif sample.name == "koordlet_pod_psi" and labels.get("psi_resource_type") == "cpu" \
                    and labels.get("psi_degree") == "some" and labels.get("psi_precision") == "avg10":
                row["cpu_psi_avg10"] = sample.value
    for key, row in pods.items():
        if instructions.get(key):
            row["cpi"] = round(cycles.get(key, 0.0) / instructions[key], 3)
    columns = ("pod", "cpu", "memory", "throttled", "cpi", "cpu_psi_avg10")
    rows = [{c: row.get(c, "-") for c in columns} for row in pods.values()]
    return sorted(rows, key=lambda r: -(r["cpu"] if isinstance(r["cpu"], float) else 0.0))


def table(rows: Rows) -> str:
    if not rows:
        return "(nothing)\n"
    columns = list(rows[0])
    cells = [[_cell(row.get(c)) for c in columns] for row in rows]
    widths = [max(len(c), *(len(line[i]) for line in cells)) for i, c in enumerate(columns)]
    lines = ["  ".join(c.upper().ljust(w) for c, w in zip(columns, widths)).rstrip()]
    lines += ["  ".join(v.ljust(w) for v, w in zip(line, widths)).rstrip() for line in cells]
    return "\n".join(lines) + "\n"


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 1e6 else f"{value:.0f}"
    return "-" if value is None else str(value)
