"""ttrpc (containerd's lightweight RPC): sans-IO framing plus an asyncio client and server."""
