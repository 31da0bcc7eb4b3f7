"""Which sources `synced()` waits for, per configuration, and when the store is synced."""

from __future__ import annotations

import pytest

from koordlet.daemon.cli import parse_args
from koordlet.statesinformer.model import NodeInfo, Source
from koordlet.statesinformer.nri_feed import NriFeed
from koordlet.statesinformer.sources import expected_sources, unix_socket_path
from koordlet.statesinformer.store import PodStore

NRI, CRI, KUBELET = Source.NRI, Source.CRI, Source.KUBELET
NRI_SOCK = "/run/test-nri/nri.sock"
CRI_SOCK = "/run/test-cri/containerd.sock"


def config_of(mode: str = "auto", cri: str = "unix://" + CRI_SOCK, kubelet: str = "", gates: str = ""):
    args = ["--runtime-hooks-mode", mode, "--runtime-hooks-nri-socket-path", NRI_SOCK, "--cri-endpoint", cri]
    if kubelet:
        args += ["--kubelet-pods-url", kubelet]
    if gates:
        args += ["--feature-gates", gates]
    return parse_args(args)


@pytest.mark.parametrize("mode, cri, kubelet, gates, present, expected", [
    # this machine with default flags: no NRI socket, no CRI socket, no kubelet: nothing to wait for
    ("auto", "unix://" + CRI_SOCK, "", "", set(), set()),
    # both sockets there: NRI lists everything CRI would; CRI is only its fallback, not waited for
    ("auto", "unix://" + CRI_SOCK, "", "", {NRI_SOCK, CRI_SOCK}, {NRI}),
    # NRI socket there, CRI socket absent (the restart that released every allocation)
    ("auto", "unix://" + CRI_SOCK, "", "", {NRI_SOCK}, {NRI}),
    ("auto", "unix://" + CRI_SOCK, "", "", {CRI_SOCK}, {CRI}),
    # nri/both require NRI whether or not its socket exists yet
    ("nri", "unix://" + CRI_SOCK, "", "", set(), {NRI}),
    ("both", "unix://" + CRI_SOCK, "", "", {CRI_SOCK}, {NRI}),
    # bypass, or the gate off, or the plugin disabled: NRI never comes
    ("bypass", "unix://" + CRI_SOCK, "", "", {NRI_SOCK, CRI_SOCK}, {CRI}),
    ("nri", "unix://" + CRI_SOCK, "", "NRIRuntimeHooks=false", {NRI_SOCK}, set()),
    # no CRI endpoint at all; a tcp endpoint cannot be checked, so it is waited for
    ("auto", "", "", "", {NRI_SOCK}, {NRI}),
    ("auto", "tcp://127.0.0.1:1", "", "", set(), {CRI}),
    # kubelet only when configured
    ("auto", "", "http://127.0.0.1:10255/pods", "", set(), {KUBELET}),
    ("nri", "unix://" + CRI_SOCK, "http://127.0.0.1:10255/pods", "", {CRI_SOCK}, {NRI, KUBELET}),
    # NRI that is not waited for (auto, its socket absent at start) leaves CRI to be waited for
    ("auto", "unix://" + CRI_SOCK, "http://127.0.0.1:10255/pods", "", {CRI_SOCK}, {CRI, KUBELET}),
])
def test_expected_sources_follow_the_config_and_the_sockets(mode, cri, kubelet, gates, present, expected) -> None:
    assert expected_sources(config_of(mode, cri, kubelet, gates), present.__contains__) == expected


def test_the_enable_flag_turns_nri_off_too() -> None:
    config = parse_args(["--runtime-hooks-mode", "nri", "--enable-nri-runtime-hook", "false"])
    assert NRI not in expected_sources(config, lambda path: True)


@pytest.mark.parametrize("endpoint, path", [
    ("unix:///run/a.sock", "/run/a.sock"), ("unix:/run/a.sock", "/run/a.sock"), ("/run/a.sock", "/run/a.sock"),
    ("tcp://127.0.0.1:1", None), ("", None)])
def test_unix_socket_path(endpoint, path) -> None:
    assert unix_socket_path(endpoint) == path


def deliver(store: PodStore, source: Source) -> None:
    if source is NRI:
        NriFeed(store).nri_synchronized([], [])
    elif source is CRI:
        store.cri_listed([], [], 0.0)
    else:
        store.kubelet_listed([])


@pytest.mark.parametrize("expected, delivered, synced", [
    (set(), set(), True),
    ({NRI}, set(), False),
    ({NRI}, {CRI}, False),  # CRI listing does not stand in for an NRI that is coming
    ({NRI}, {NRI}, True),
    ({CRI}, {NRI}, False),
    ({NRI, CRI}, {CRI}, False),
    ({NRI, CRI}, {NRI}, False),
    ({NRI, CRI}, {NRI, CRI}, True),
    ({CRI, KUBELET}, {CRI}, False),
    ({CRI, KUBELET}, {CRI, KUBELET}, True),
    ({NRI, CRI, KUBELET}, {NRI, KUBELET}, False),
    ({NRI, CRI, KUBELET}, {NRI, CRI, KUBELET}, True),
    (set(), {KUBELET}, True),  # an unexpected source may deliver; it is not waited for
])
def test_synced_needs_every_expected_source(expected, delivered, synced) -> None:
    store = PodStore(NodeInfo("n"), expected=expected)
    for source in delivered:
        deliver(store, source)
    assert store.synced() is synced
    assert {s for s in Source if store.source_synced(s)} == delivered
