"""The embedded server of `solrace play` without `--server`: the real server, in-process.

It uses the server's public entry point (`solrace.server.app.App`) on a free loopback port with
a SQLite store in the user's data folder, so a newcomer races with one command and keeps an
identity between runs. The import is lazy: the client never loads the server's runtime
otherwise.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from solrace.server.app import App


class EmbeddedServerError(Exception):
    """The embedded server cannot start (the message says why, in one line)."""


class EmbeddedServerBusyError(EmbeddedServerError):
    """Another process (another `solrace play`) runs an embedded server on the same data."""

    def __init__(self, folder: Path, holder_pid: int | None) -> None:
        self.folder = folder
        self.holder_pid = holder_pid
        who = "another solrace play" if holder_pid is None else f"process {holder_pid}"
        super().__init__(
            f"{who} is already racing on the embedded server's data ({folder}): finish that "
            "game first, or share a server: 'solrace serve' in one terminal and "
            "'solrace play --server ws://127.0.0.1:8765' in each of the others"
        )


class EmbeddedServer:
    def __init__(self, folder: Path, **settings: Any) -> None:
        self.folder = folder
        self.settings = settings
        self._app: App | None = None

    @property
    def url(self) -> str:
        if self._app is None:
            raise RuntimeError("the embedded server is not running")
        return f"ws://127.0.0.1:{self._app.port}"

    async def start(self) -> str:
        from solrace.server.app import App
        from solrace.server.settings import Settings
        from solrace.server.startup_errors import StartupError, StoreBusyError

        self.folder.mkdir(parents=True, exist_ok=True)
        options: dict[str, Any] = {
            "host": "127.0.0.1",
            "port": 0,
            "data_dir": self.folder,
            "store": f"sqlite:{self.folder / 'solrace.sqlite3'}",
            "log_level": "WARNING",
            "countdown_s": 3.0,
        }
        options.update(self.settings)
        try:
            # `App()` itself may refuse (the token secret in the data folder cannot be read).
            app = App(Settings(**options))
            await app.start()
        except StoreBusyError as exc:  # one SQLite file: one server at a time
            raise EmbeddedServerBusyError(self.folder, exc.holder_pid) from None
        except StartupError as exc:
            raise EmbeddedServerError(f"cannot start the embedded server: {exc}") from exc
        self._app = app
        return self.url

    async def stop(self) -> None:
        app, self._app = self._app, None
        if app is not None:
            await app.stop()
