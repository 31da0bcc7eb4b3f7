"""The daemon's registry: process_* as prometheus_client spells them, fds counted cheaply."""

from __future__ import annotations

import os
from types import SimpleNamespace

from prometheus_client import CollectorRegistry, ProcessCollector, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from koordlet.metrics import registry as registry_module
from koordlet.metrics.registry import ProcessFigures, open_fd_count


def process_samples(collector_type: type) -> dict[str, float]:
    registry = CollectorRegistry()
    collector_type(registry=registry)
    text = generate_latest(registry).decode()
    return {s.name: s.value for f in text_string_to_metric_families(text) for s in f.samples}


def test_process_series_are_prometheus_clients():
    ours, theirs = process_samples(ProcessFigures), process_samples(ProcessCollector)
    assert ours.keys() == theirs.keys() and len(ours) == 6
    assert ours["process_max_fds"] == theirs["process_max_fds"]
    assert ours["process_start_time_seconds"] == theirs["process_start_time_seconds"]
    # prometheus_client's listing holds one more fd (the directory it reads) while it counts
    assert theirs["process_open_fds"] - 1 <= ours["process_open_fds"] <= theirs["process_open_fds"]


def test_the_fd_count_is_the_listing_without_the_listings_own_fd():
    listed = len(os.listdir("/proc/self/fd"))
    assert open_fd_count("/proc/self/fd") in (listed - 1, listed)  # listed: a kernel before 6.2


def test_a_directory_without_a_size_is_listed(tmp_path, monkeypatch):
    for name in ("0", "1", "2"):
        (tmp_path / name).touch()
    monkeypatch.setattr(registry_module.os, "stat", lambda path: SimpleNamespace(st_size=0))
    assert open_fd_count(str(tmp_path)) == 3
