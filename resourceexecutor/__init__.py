"""The single door for every cgroup and resctrl write: updaters, a
write-if-different cache, levelled batch updates and typed results.

It knows about cgroup files, not about pods.
"""
