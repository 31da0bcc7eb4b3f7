"""kubelet's PodResources v1 API served from the ORM's allocations."""
