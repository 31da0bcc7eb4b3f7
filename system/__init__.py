"""Facts about the host and typed access to kernel files: cgroup v1/v2 resource
registry and layouts, procfs and sysfs readers, PSI, CPU/NUMA topology.

It decides no policy and holds no state about pods.
"""
