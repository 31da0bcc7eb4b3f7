"""The shipped manifests, unit file and containerd snippets parse and say what they must."""

from __future__ import annotations

import tomllib
from collections import defaultdict
from pathlib import Path

import yaml

from koordlet.config import defaults

ROOT = Path(__file__).resolve().parents[2]


def documents() -> dict[str, dict]:
    docs = [d for d in yaml.safe_load_all((ROOT / "deploy" / "koordlet.yaml").read_text()) if d]
    return {d["kind"]: d for d in docs}


def test_daemonset_has_host_access_probes_and_downward_node_name():
    ds = documents()["DaemonSet"]
    pod = ds["spec"]["template"]["spec"]
    assert pod["hostPID"] is True
    container = pod["containers"][0]
    assert "--node-name=$(NODE_NAME)" in container["args"]
    env = {e["name"]: e for e in container["env"]}
    assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": 9316}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": 9316}
    assert {"requests", "limits"} <= set(container["resources"])
    host_paths = {v["name"]: v["hostPath"]["path"] for v in pod["volumes"]}
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert host_paths["host-cgroup"] == "/sys/fs/cgroup/"
    assert host_paths["host-proc"] == "/proc/"
    assert host_paths["host-sys"] == "/sys/"
    assert host_paths["nri"] == "/var/run/nri" == mounts["nri"]
    assert host_paths["host-kubelet"] == "/var/lib/kubelet"
    assert host_paths["state"] == str(defaults.STATE_DIR) == mounts["state"]
    # The flags point at the mounts.
    args = dict(a.lstrip("-").split("=", 1) for a in container["args"])
    assert args["cgroup-root-dir"] == mounts["host-cgroup"]
    assert args["proc-root-dir"] == mounts["host-proc"]
    assert args["sys-root-dir"] == mounts["host-sys"]
    assert args["state-dir"] == mounts["state"]
    assert args["kubelet-root-dir"] == mounts["host-kubelet"]


def test_daemonset_args_are_all_known_flags():
    from koordlet.daemon.cli import build_parser

    container = documents()["DaemonSet"]["spec"]["template"]["spec"]["containers"][0]
    args = [a.replace("$(NODE_NAME)", "node-a") for a in container["args"]]
    build_parser().parse_args(args)  # exits 2 on an unknown flag


def test_the_role_is_bound_to_the_service_account():
    # What the role grants is checked against the code in tests/deploy/test_rbac.py.
    role = documents()["ClusterRole"]
    binding = documents()["ClusterRoleBinding"]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"][0]["name"] == documents()["ServiceAccount"]["metadata"]["name"]


def test_metrics_service_is_headless_on_9316():
    service = documents()["Service"]
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["ports"][0]["port"] == 9316
    assert service["spec"]["selector"] == documents()["DaemonSet"]["spec"]["selector"]["matchLabels"]


def unit_entries() -> dict[str, dict[str, list[str]]]:
    sections: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    current = ""
    for line in (ROOT / "systemd" / "koordlet.service").read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            current = line.strip("[]")
            continue
        key, _, value = line.partition("=")
        sections[current][key].append(value)
    return sections


def test_systemd_unit_has_readiness_restart_state_and_keeps_cgroups_writable():
    service = unit_entries()["Service"]
    assert service["Type"] == ["notify"]
    assert service["Restart"] == ["on-failure"]
    assert service["StateDirectory"] == ["koordlet"]
    assert "/sys/fs/cgroup" in service["ReadWritePaths"]
    assert service["ProtectSystem"] == ["strict"]
    # Either of these would remount /sys/fs/cgroup read-only.
    assert "ProtectControlGroups" not in service and "ProtectKernelTunables" not in service
    exec_start = service["ExecStart"][0].split()
    assert "--state-dir=/var/lib/koordlet" in exec_start
    from koordlet.daemon.cli import build_parser
    assert exec_start[-1] == "$KOORDLET_ARGS"  # the env file's flags, expanded by systemd
    build_parser().parse_args(exec_start[1:-1])
    assert unit_entries()["Install"]["WantedBy"] == ["multi-user.target"]


def test_containerd_snippets_enable_nri_on_the_default_socket():
    for name in ("containerd-nri-1.7.toml", "containerd-nri-2.x.toml"):
        nri = tomllib.loads((ROOT / "deploy" / name).read_text())["plugins"]["io.containerd.nri.v1.nri"]
        assert nri["disable"] is False and nri["disable_connections"] is False
        assert nri["socket_path"] == str(defaults.NRI_SOCKET)
        assert nri["plugin_request_timeout"] == "2s"
