"""The plugin side of NRI: connect, register, configure, dispatch events, reconnect."""
