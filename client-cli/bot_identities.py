"""The bots' identities: a token per server and bot name, so that a bot's next run is the same
player. A new name costs a credit of the server's budget of names for the address (a name is
kept for good), and a few runs of many bots would use it up, locking people on the same
address out of registering.

`bots.json`, beside `identity.json` (mode 0600), maps a server URL to its bots, keyed by the
name asked for (`--name`, numbered, or the default `bot-N` / `tbot-N`):

    {"ws://host:8765": {"bot-1": {"name": "bot-1", "token": "v1..."},
                        "alice": {"name": "alice-3f2a", "token": "v1..."},
                        "bot-2": {"name": "bot-2", "key": "..."}}}

`name` is the name the bot plays as: someone else held the name asked for, so the bot got a
suffix, and the next run asking for that name comes back under it. `key` is the registration
key (`Hello.key`) of a name whose token has not come yet, kept before the hello goes (like the
players' keys in `identity.json`): a run killed before its welcome costs nothing.

A bot name is one program's at a time (`hold`): a lock file per server and name, released
when the program ends, killed or not. Two runs sharing a token would take each other's
session over, so a name another run holds is passed over (`free_names`) or played without a
saved identity (`Bot.connect` then adds a suffix, as the server answers `name_taken`).
"""

from __future__ import annotations

import hashlib
import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from solrace.server.protocol.ids import PlayerId

from .identity import config_dir, locked_json, player_id_of, read_json, warn, write_json

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Windows
    fcntl = None  # type: ignore[assignment]

FILE_NAME: Final = "bots.json"
LOCK_FOLDER: Final = "bot-locks"


def bots_file() -> Path:
    return config_dir() / FILE_NAME


@dataclass(frozen=True, slots=True)
class Saved:
    """What `bots.json` keeps of one bot: the name it plays as, its token or the key sent."""

    name: str
    token: str | None = None
    key: str | None = None


def _saved(raw: object) -> Saved | None:
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        return None
    token, key = raw.get("token"), raw.get("key")
    return Saved(
        raw["name"],
        token=token if isinstance(token, str) else None,
        key=key if isinstance(key, str) else None,
    )


def known_bots(server: str) -> dict[str, PlayerId]:
    """Name played as -> player id of every bot saved for `server` (from their tokens); a
    file that cannot be read knows none."""
    try:
        with locked_json(bots_file()):
            entry = read_json(bots_file()).get(server, {})
    except OSError as exc:
        warn(f"cannot read {bots_file()}: {exc}")
        return {}
    found: dict[str, PlayerId] = {}
    for raw in entry.values() if isinstance(entry, dict) else ():
        saved = _saved(raw)
        player_id = player_id_of(saved.token) if saved and saved.token else None
        if saved is not None and player_id is not None:
            found[saved.name] = player_id
    return found


class HeldName:
    """One bot name of one server, held by this program until `release` (or its end)."""

    def __init__(self, server: str, asked: str, lock_fd: int | None) -> None:
        self.server = server
        self.asked = asked
        self._lock_fd = lock_fd

    def saved(self) -> Saved | None:
        """The identity kept for this name, if any (a file that cannot be read: none)."""
        try:
            with locked_json(bots_file()):
                entry = read_json(bots_file()).get(self.server, {})
        except OSError as exc:
            warn(f"cannot read {bots_file()}: {exc}")
            return None
        return _saved(entry.get(self.asked))

    def registration_key(self, name: str) -> str:
        """A new registration key for `name`, kept before it is sent."""
        key = secrets.token_urlsafe(24)
        self._keep(Saved(name, key=key))
        return key

    def save(self, name: str, token: str) -> None:
        """The bot plays as `name` with `token` (the welcome came)."""
        self._keep(Saved(name, token=token))

    def forget(self) -> None:
        """The server refused the saved token (its secret changed, or it forgot its players)."""
        self._keep(None)

    def _keep(self, saved: Saved | None) -> None:
        path = bots_file()
        try:
            with locked_json(path):
                entries = read_json(path)
                entry = entries.setdefault(self.server, {})
                if saved is None:
                    entry.pop(self.asked, None)
                else:
                    kept: dict[str, Any] = {"name": saved.name}
                    if saved.token is not None:
                        kept["token"] = saved.token
                    if saved.key is not None:
                        kept["key"] = saved.key
                    entry[self.asked] = kept
                if not entry:
                    del entries[self.server]
                write_json(entries, path)
        except OSError as exc:
            warn(f"cannot save the bot {self.asked!r} in {path}: {exc}")

    def release(self) -> None:
        """Let another program have this name."""
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None


def _lock_path(server: str, asked: str) -> Path:
    digest = hashlib.sha256(f"{server}\0{asked}".encode()).hexdigest()[:32]
    return config_dir() / LOCK_FOLDER / f"{digest}.lock"


def hold(server: str, asked: str) -> HeldName | None:
    """Bot name `asked` of `server` for this program, or None while another program holds it.
    A lock file that cannot be made (a read-only config folder) holds nothing: the name is
    this program's, as it would be without saved identities."""
    if fcntl is None:  # pragma: no cover
        return HeldName(server, asked, None)
    path = _lock_path(server, asked)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        warn(f"cannot make {path}: {exc}")
        return HeldName(server, asked, None)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except OSError as exc:  # no locks there (some network file systems)
        os.close(fd)
        warn(f"cannot lock {path}: {exc}")
        return HeldName(server, asked, None)
    return HeldName(server, asked, fd)


def free_names(server: str, make_name: Callable[[int], str], count: int) -> list[HeldName]:
    """`count` held names `make_name(1)`, `make_name(2)`, ..., passing over those that other
    programs hold (a second `solrace bot` at once plays as the next numbers)."""
    names: list[HeldName] = []
    number = 0
    while len(names) < count:
        number += 1
        held = hold(server, make_name(number))
        if held is not None:
            names.append(held)
    return names


__all__ = ["HeldName", "Saved", "bots_file", "free_names", "hold"]
