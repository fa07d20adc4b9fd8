"""Sans-I/O core of the server: wire messages, codec and pure state machines."""
