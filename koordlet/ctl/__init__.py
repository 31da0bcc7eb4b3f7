"""koordletctl: the operator's view of a running daemon, read from its HTTP API."""
