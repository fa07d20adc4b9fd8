"""The terminal client: connection, state, rendering, TUI app and bots."""
