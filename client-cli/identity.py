"""Who the player is: name and token per server, kept in the user's config folder.

The server signs a token at the first hello with a name; sending it back later proves the same
player, so keeping it (one JSON file, mode 0600) lets an identity survive restarts. The folder is
platformdirs' user config dir, or `SOLRACE_CONFIG_DIR` (tests and portable installs).
"""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from .connection import Connection, ConnectionFailedError

EMBEDDED_KEY = "embedded"
"""Identity key of the embedded server (its port changes every run; its secret does not)."""


@dataclass(frozen=True, slots=True)
class Identity:
    name: str
    token: str | None = None


def config_dir() -> Path:
    override = os.environ.get("SOLRACE_CONFIG_DIR")
    return Path(override) if override else platformdirs.user_config_path("solrace")


def data_dir() -> Path:
    override = os.environ.get("SOLRACE_DATA_DIR")
    return Path(override) if override else platformdirs.user_data_path("solrace")


def _identity_file() -> Path:
    return config_dir() / "identity.json"


def _load_all() -> dict[str, dict[str, str]]:
    try:
        raw = json.loads(_identity_file().read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(raw, dict):
        return {}
    return {k: v for k, v in raw.items() if isinstance(v, dict)}


def load_identity(key: str) -> Identity | None:
    entry = _load_all().get(key)
    if entry is None or not isinstance(entry.get("name"), str):
        return None
    token = entry.get("token")
    return Identity(entry["name"], token if isinstance(token, str) else None)


def save_identity(key: str, identity: Identity) -> None:
    entries = _load_all()
    entries[key] = {"name": identity.name, **({"token": identity.token} if identity.token else {})}
    path = _identity_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(entries, handle, indent=2)
    os.replace(tmp, path)


def default_name() -> str:
    """The login name, trimmed to the server's name rules."""
    with contextlib.suppress(Exception):
        user = re.sub(r"[^A-Za-z0-9_.\-]", "", getpass.getuser())[:16]
        if user:
            return user
    return f"player-{secrets.token_hex(2)}"


async def connect_player(url: str, key: str, name: str | None) -> Connection:
    """A connected `Connection` for the player known under `key`, saving a new token.

    A stored token comes first; if the server no longer knows it (another secret), the name
    is used again. A name given that differs from the stored one starts a new identity."""
    stored = load_identity(key)
    if stored is not None and (name is None or name == stored.name) and stored.token:
        conn = Connection(url, name=stored.name, token=stored.token)
        try:
            await conn.connect()
        except ConnectionFailedError as exc:
            if not exc.fatal:
                raise
        else:
            return conn
    wanted = name or (stored.name if stored else default_name())
    conn = Connection(url, name=wanted)
    await conn.connect()
    if conn.token:
        save_identity(key, Identity(conn.name or wanted, conn.token))
    return conn
