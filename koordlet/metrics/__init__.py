"""Prometheus metrics of the daemon: the registry every module registers on,
and the collectors for the daemon's own health."""
