"""The states informer's bypass sources: how often CRI is listed, and kubelet's /pods."""

from __future__ import annotations

from dataclasses import dataclass

from koordlet.config import defaults
from koordlet.config.option import option
from koordlet.config.parsers import parse_bool, parse_positive_duration
from koordlet.statesinformer.kubelet_client import KubeletAuth, PodsUrl


def parse_pods_url(text: str) -> str:
    """kubelet's /pods URL, checked now (a bad one is a configuration error, not a crash
    later); empty turns the source off."""
    if text.strip():
        PodsUrl.parse(text.strip())
    return text.strip()


@dataclass(frozen=True, slots=True)
class StatesOptions:
    states_cri_sync_interval: float = option(
        defaults.STATES_CRI_SYNC_INTERVAL_SECONDS,
        "how often the states informer lists over CRI (status calls only for new containers)",
        parse_positive_duration, shown_default="10s")
    kubelet_pods_url: str = option(
        "", "kubelet's `/pods` for priority, QoS class and container requests/limits: its secure port "
        "(`https://$(NODE_IP):10250/pods`, service-account token, RBAC `get` on `nodes/proxy`) or its read-only "
        "port (`http://127.0.0.1:10255/pods`, no token, no TLS); empty = off", parse_pods_url)
    states_kubelet_sync_interval: float = option(
        defaults.STATES_KUBELET_SYNC_INTERVAL_SECONDS, "how often the states informer reads kubelet's /pods",
        parse_positive_duration, shown_default="10s")
    states_kubelet_sync_timeout: float = option(
        defaults.STATES_KUBELET_SYNC_TIMEOUT_SECONDS, "how long one read of kubelet's /pods may take",
        parse_positive_duration, shown_default="5s")
    kubelet_token_file: str = option(
        defaults.KUBELET_TOKEN_FILE, "https `--kubelet-pods-url` only: the bearer token sent to kubelet, re-read "
        "on every request (projected tokens rotate); empty = none (kubelet's anonymous auth)", str.strip)
    kubelet_ca_file: str = option(
        defaults.KUBELET_CA_FILE, "https `--kubelet-pods-url` only: the CA bundle kubelet's serving certificate "
        "must chain to (right for kubelets with `serverTLSBootstrap`)", str.strip)
    kubelet_insecure_tls: bool = option(
        False, "https `--kubelet-pods-url` only: do not verify kubelet's certificate (a warning is logged); "
        "for kubelets with self-signed certificates you cannot distribute", parse_bool)

    def kubelet_auth(self) -> KubeletAuth:
        return KubeletAuth(self.kubelet_token_file, self.kubelet_ca_file, self.kubelet_insecure_tls)
