"""The states informer's bypass sources: how often CRI is listed, and kubelet's /pods."""

from __future__ import annotations

from dataclasses import dataclass

from koordlet.config import defaults
from koordlet.config.option import option
from koordlet.config.parsers import parse_positive_duration
from koordlet.statesinformer.kubelet_client import PodsUrl


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
        "", "kubelet's read-only `/pods` (e.g. `http://127.0.0.1:10255/pods`) for priority, QoS class and "
        "container requests/limits; empty = off", parse_pods_url)
    states_kubelet_sync_interval: float = option(
        defaults.STATES_KUBELET_SYNC_INTERVAL_SECONDS, "how often the states informer reads kubelet's /pods",
        parse_positive_duration, shown_default="10s")
