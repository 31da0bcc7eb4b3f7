"""Prometheus metrics of the daemon: the registry every module registers on,
and the collectors for the daemon's own health."""

from prometheus_client import disable_created_metrics

# Go's client emits no *_created series; dashboards and alerts written for koordlet see
# none here either (and each one is a series Prometheus would store). Every package that
# defines or serves metrics imports koordlet.metrics first.
disable_created_metrics()
