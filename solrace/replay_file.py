"""Reading a replay file (`solrace verify`, `solrace replay`).

Shared by the server's verifier and the client (it belongs to neither layer); the protocol
layer parses the bytes (`parse_replay`) and does no I/O of its own.
"""

from __future__ import annotations

from pathlib import Path

from solrace.server.protocol.messages import ReplayModel
from solrace.server.protocol.replay import ReplayFileError, parse_replay


def load_replay(path: Path) -> ReplayModel:
    """The replay in the file at `path`: `parse_replay` of its bytes.

    `OSError` if the file cannot be read; `ReplayFileError` (one line, naming the file) if it
    is not a replay."""
    try:
        return parse_replay(path.read_bytes())
    except ReplayFileError as exc:
        raise ReplayFileError(f"{path} is not a solrace replay: {exc}") from None


__all__ = ["load_replay"]
