"""deploy/monitoring.yaml scrapes what deploy/koordlet.yaml serves: each monitor's selector
matches the Service (or the DaemonSet's pods) and names a port they have."""

from __future__ import annotations

from pathlib import Path

import yaml

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def documents(name: str) -> dict[str, dict]:
    return {doc["kind"]: doc for doc in yaml.safe_load_all((DEPLOY / name).read_text()) if doc}


def test_the_service_monitor_selects_the_service_and_its_port():
    monitor, service = documents("monitoring.yaml")["ServiceMonitor"], documents("koordlet.yaml")["Service"]
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert service["metadata"]["namespace"] in monitor["spec"]["namespaceSelector"]["matchNames"]
    ports = {port["name"] for port in service["spec"]["ports"]}
    assert {endpoint["port"] for endpoint in monitor["spec"]["endpoints"]} <= ports


def test_the_pod_monitor_selects_the_daemonsets_pods_and_their_port():
    monitor, daemonset = documents("monitoring.yaml")["PodMonitor"], documents("koordlet.yaml")["DaemonSet"]
    template = daemonset["spec"]["template"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= template["metadata"]["labels"].items()
    ports = {port["name"] for container in template["spec"]["containers"] for port in container.get("ports", ())}
    assert {endpoint["port"] for endpoint in monitor["spec"]["podMetricsEndpoints"]} <= ports
    assert all(endpoint["path"] == "/metrics" for endpoint in monitor["spec"]["podMetricsEndpoints"])
