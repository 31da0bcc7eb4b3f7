"""The metrics advisor: collectors on one scheduler feeding the metric cache, and the
Prometheus figures they produce. `builder.build_metrics_advisor` wires it into the daemon."""
