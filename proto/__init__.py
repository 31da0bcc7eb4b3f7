"""Protocol definitions (.proto sources) and the Python modules generated from
them: NRI API, the ttrpc envelope, google.rpc.Status, kubelet PodResources v1.

Generated modules are never edited by hand; `make proto` regenerates them.
"""
