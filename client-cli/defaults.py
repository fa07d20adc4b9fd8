"""What every command of the terminal client assumes unless told otherwise."""

from __future__ import annotations

from typing import Final

#: The server a command talks to without `--server`: `solrace serve`'s own default address.
DEFAULT_SERVER_URL: Final = "ws://127.0.0.1:8765"
