"""The runtime hooks: one policy for every container, applied through NRI and the reconcile loop."""
