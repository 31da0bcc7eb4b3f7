"""One module per collector; each is registered in metricsadvisor/registry.py."""
