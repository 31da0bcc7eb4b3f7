"""A reusable NRI (Node Resource Interface) plugin library.

Sans-IO ttrpc and multiplexer codecs, an asyncio transport, a plugin stub and a
runtime-side test peer. It knows nothing about koordlet.
"""
