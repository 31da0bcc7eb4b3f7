"""Out-of-band resource manager: exclusive CPUs and memory nodes, QRM plugins, checkpoint."""
