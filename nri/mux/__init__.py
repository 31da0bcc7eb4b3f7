"""The NRI connection multiplexer: a sans-IO frame codec and an asyncio trunk."""
