"""The metrics advisor: collectors on one scheduler feeding the metric cache, and the
Prometheus figures they produce. `agent.SPEC` is its entry in the daemon's agent registry."""
