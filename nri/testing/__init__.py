"""The runtime side of NRI, in Python, for tests: a peer that behaves like containerd."""
