"""How a node that cannot start says why: `StartupError`, a setting or environment problem
the operator can fix, told in one line, and `StoreBusyError`, a SQLite file another server holds.

Raised by `App` (`app.py`) and `load_secret` (`node_secret.py`); `solrace serve`
(`serve_cli.py`) prints them, and the embedded server of `solrace play` tells them apart."""

from __future__ import annotations

__all__ = ["StartupError", "StoreBusyError"]


class StartupError(Exception):
    """The node cannot start for a reason the operator can fix (a port in use, a data
    folder it cannot write, an unreachable Redis, ...): the message says which, in one line."""


class StoreBusyError(StartupError):
    """Another server holds the node's SQLite file (one server a file): its process id, when
    the lock says it."""

    def __init__(self, message: str, holder_pid: int | None) -> None:
        super().__init__(message)
        self.holder_pid = holder_pid
