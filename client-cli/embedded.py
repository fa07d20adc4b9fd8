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
        self._app = App(Settings(**options))
        await self._app.start()
        return self.url

    async def stop(self) -> None:
        app, self._app = self._app, None
        if app is not None:
            await app.stop()
