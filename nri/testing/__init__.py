"""The runtime side of NRI, in Python, for tests: a peer that behaves like containerd.

    async with RuntimePeer(path, PeerConfig(nri_version=NriVersion(0, 8, 0))) as peer:
        (plugin,) = await peer.wait_plugins(1)
        created = await peer.create_container(pod, container)   # adjustments applied
"""

from nri.testing.peer import Misbehaviour, PeerConfig, RuntimePeer
from nri.testing.peer_plugin import PeerPlugin
from nri.testing.relay import RuntimeOperationFailed

__all__ = ["Misbehaviour", "PeerConfig", "PeerPlugin", "RuntimeOperationFailed", "RuntimePeer"]
