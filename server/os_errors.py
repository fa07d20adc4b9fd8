"""An `OSError` in words for a one-line message: its text without the errno number.

Imported by the store (a database it cannot open) and by `app` (a data folder or a port the
node cannot use); it imports nothing of the server, so any layer above the protocol may use it.
"""

from __future__ import annotations


def describe_os_error(exc: OSError) -> str:
    """The system's words for `exc` and the file it names, without "[Errno 20]":
    "Not a directory: 'data/x'". An error without those words (raised with a message of its
    own) is its message."""
    if not exc.strerror:
        return str(exc)
    return f"{exc.strerror}: {exc.filename!r}" if exc.filename else exc.strerror
