"""Reading a replay file (`solrace verify`, `solrace replay`).

Shared by the server's verifier and the client (it belongs to neither layer); the protocol
layer parses the bytes (`parse_replay`) and does no I/O of its own.
"""

from __future__ import annotations

from pathlib import Path

from solrace.server.protocol.messages import ReplayModel
from solrace.server.protocol.replay import ReplayFileError, parse_replay

#: The largest replay file read, in bytes. A client takes replays in frames of 1 MiB at most,
#: and one saved as JSON is about three times its msgpack size: this leaves room five times
#: over. A larger file, or an endless one (`/dev/zero`), is refused after reading this much,
#: not read into memory to its end.
MAX_REPLAY_FILE_BYTES = 16 * 2**20


def load_replay(path: Path) -> ReplayModel:
    """The replay in the file at `path`: `parse_replay` of its bytes.

    `OSError` if the file cannot be read; `ReplayFileError` (one line, naming the file) if it
    is not a replay, or is larger than `MAX_REPLAY_FILE_BYTES`."""
    with path.open("rb") as file:
        data = file.read(MAX_REPLAY_FILE_BYTES + 1)
    try:
        if len(data) > MAX_REPLAY_FILE_BYTES:
            raise ReplayFileError(
                f"larger than any replay (at most {MAX_REPLAY_FILE_BYTES // 2**20} MiB)"
            )
        return parse_replay(data)
    except ReplayFileError as exc:
        raise ReplayFileError(f"{path} is not a solrace replay: {exc}") from None


__all__ = ["load_replay"]
