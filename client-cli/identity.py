"""Who the player is: a token per server and name, kept in the user's config folder.

The server signs a token at the first hello with a name; sending it back later proves the same
player, so keeping it (one JSON file, mode 0600) lets an identity survive restarts. The folder is
platformdirs' user config dir, or `SOLRACE_CONFIG_DIR` (tests and portable installs).

`identity.json` maps a server key (its URL, or `embedded:FOLDER` for the embedded server of
the data folder FOLDER) to that server's identities:

    {"ws://host:8765": {"name": "alice", "token": "v1...",
                        "players": {"alice": "v1...", "carol": "v1..."},
                        "admin": "alice-admin"}}

`players` holds every name's token, so `--name carol` then `--name alice` again finds alice's
token; `keys` holds the registration key (`Hello.key`) of a name sent to the server whose
token has not come back yet: kept before the hello goes, so a welcome lost to a crash or a
dropped link costs nothing (the next run sends the same name and key and gets the player
back); it goes once the token is saved. `name` (with its `token`, the layout of older
versions) is the one used last, the default without `--name`; `admin` names the separate
identity `solrace tournament create` uses, so creating a tournament never takes over the
connection of a player who is racing.
A file that is not valid JSON is moved aside (`identity.json.bad`) with a warning, never
overwritten.

Each embedded data folder is a server of its own (its own secret and players), so its entry is
keyed by the folder's absolute path (`embedded_key`). Older versions kept one `embedded` entry
whatever the folder: it is still read, name by name, where a folder's entry has no token for
the name; a token from it that the folder's server accepts is saved under the folder's key,
one it refuses is passed over without a warning (it was another folder's).
"""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import re
import secrets
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal
from urllib.parse import urlsplit

import platformdirs
from pydantic import ValidationError

from solrace.server.protocol.errors import ErrorCode
from solrace.server.protocol.ids import PlayerId
from solrace.server.protocol.messages import PROTOCOL_VERSION, Hello

from .connect_failures import ConnectionFailedError
from .connection import Connection
from .defaults import same_server
from .refusals import token_refused_text

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Windows
    fcntl = None  # type: ignore[assignment]

EMBEDDED_KEY = "embedded"
"""Identity key of every embedded server in older versions (`embedded_key` now); still read."""


def embedded_key(folder: Path, legacy: str = EMBEDDED_KEY) -> str:
    """Identity key of the embedded server of data folder `folder` (its port changes every
    run; its secret and players, kept in the folder, do not). `legacy` names the key older
    versions used for every folder (`embedded-bot` for the embedded opponent)."""
    return f"{legacy}:{folder.resolve()}"


def legacy_key_of(key: str) -> str | None:
    """The one key older versions used for every embedded folder (`embedded`, or
    `embedded-bot`) if `key` is an embedded folder's key, else None."""
    legacy, colon, _ = key.partition(":")
    return legacy if colon and legacy in (EMBEDDED_KEY, f"{EMBEDDED_KEY}-bot") else None


def server_text(key: str, url: str) -> str:
    """The server in messages: an embedded server by its data folder (its port is random)."""
    if legacy_key_of(key) is not None:
        return f"the embedded server of the data folder {key.partition(':')[2]}"
    return f"the server at {url}"


FILE_NAME: Final = "identity.json"


def _name_schema() -> dict[str, Any]:
    """The JSON schema of the protocol's `Hello.name` (a string, or null for a spectator)."""
    field = Hello.model_json_schema()["properties"]["name"]
    for option in field.get("anyOf", [field]):
        if option.get("type") == "string":
            return dict(option)
    raise AssertionError("Hello.name is not a string")  # pragma: no cover


def _characters_of(pattern: str) -> str:
    """`^[A-Za-z0-9_.\\-]+$` as `A-Z a-z 0-9 _ . -`; another pattern as itself."""
    match = re.fullmatch(r"\^\[([^\]]+)\]\+\$", pattern)
    if match is None:
        return f"matching {pattern}"
    body = match.group(1)
    items: list[str] = []
    i = 0
    while i < len(body):
        if body[i] == "\\" and i + 1 < len(body):
            items.append(body[i + 1])
            i += 2
        elif i + 2 < len(body) and body[i + 1] == "-":
            items.append(body[i : i + 3])
            i += 3
        else:
            items.append(body[i])
            i += 1
    return "from " + " ".join(items)


_NAME: Final = _name_schema()
NAME_LIMIT: Final[int] = _NAME["maxLength"]
"""The server's longest name (`Hello.name`)."""
NAME_RULE: Final = (
    f"{_NAME['minLength']}-{NAME_LIMIT} characters {_characters_of(_NAME['pattern'])}"
)
"""The names the server takes, in words, from the protocol's `Hello.name`."""


def name_problem(name: str) -> str | None:
    """Why the server would refuse `name` in its hello (`Hello.name`), or None."""
    try:
        Hello(protocol=PROTOCOL_VERSION, name=name)
    except ValidationError:
        return f"invalid --name {name!r}: {NAME_RULE}"
    return None


Role = Literal["player", "admin"]


class IdentityError(ConnectionFailedError):
    """The server refused every way to be this player (a refused token, a name taken)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, fatal=True)


@dataclass(frozen=True, slots=True)
class Identity:
    name: str
    token: str | None = None

    @property
    def player_id(self) -> PlayerId | None:
        """The player id the token names (`v1.<player id>.<signature>`), if any."""
        return player_id_of(self.token) if self.token else None


def player_id_of(token: str) -> PlayerId | None:
    parts = token.split(".")
    return PlayerId(parts[1]) if len(parts) == 3 and parts[1] else None


def config_dir() -> Path:
    override = os.environ.get("SOLRACE_CONFIG_DIR")
    return Path(override) if override else platformdirs.user_config_path("solrace")


def data_dir() -> Path:
    override = os.environ.get("SOLRACE_USER_DATA_DIR")
    return Path(override) if override else platformdirs.user_data_path("solrace")


def identity_file() -> Path:
    return config_dir() / FILE_NAME


def warn(text: str) -> None:
    print(f"solrace: warning: {text}", file=sys.stderr, flush=True)


# --- the file ------------------------------------------------------------------------------


@contextlib.contextmanager
def locked_json(path: Path | None = None) -> Iterator[None]:
    """Hold the lock of the identity file (or of the JSON file `path` kept the same way): two
    programs saving at once must not lose a token."""
    path = path or identity_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    if fcntl is None:  # pragma: no cover
        yield
        return
    fd = os.open(path.with_name(path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _move_aside(path: Path, why: str) -> None:
    """A file that cannot be read as identities: keep it for the user, start a new one."""
    bad = path.with_name(path.name + ".bad")
    number = 1
    while bad.exists():
        number += 1
        bad = path.with_name(f"{path.name}.bad{number}")
    try:
        os.replace(path, bad)
    except OSError as exc:
        warn(f"{path} {why} and cannot be moved aside ({exc}); tokens are not saved")
        raise
    warn(f"{path} {why}; moved it to {bad} (the tokens in it stay there); starting a new one")


def read_json(path: Path | None = None) -> dict[str, dict[str, Any]]:
    """Every server's entry of the identity file or `path` (call with its lock held)."""
    path = path or identity_file()
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return {}
    try:
        raw = json.loads(data)
    except ValueError:  # UnicodeDecodeError too: bytes that are no text at all
        _move_aside(path, "is not valid JSON")
        return {}
    if not isinstance(raw, dict):
        _move_aside(path, "is not a JSON object")
        return {}
    entries = {k: v for k, v in raw.items() if isinstance(k, str) and isinstance(v, dict)}
    # Files of versions that kept `ws://HOST:PORT/` apart from `ws://HOST:PORT`: such an entry
    # is the server's own unless it has one already (the next write keeps it there).
    for key in list(entries):
        same = same_server(key)
        if same != key and same not in entries:
            entries[same] = entries.pop(key)
    return entries


def write_json(entries: dict[str, dict[str, Any]], path: Path | None = None) -> None:
    path = path or identity_file()
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(entries, handle, indent=2)
    os.replace(tmp, path)


def _tokens(entry: dict[str, Any]) -> dict[str, str | None]:
    """Name -> token of one server's entry (older files: only `name` and `token`)."""
    found: dict[str, str | None] = {}
    players = entry.get("players")
    if isinstance(players, dict):
        for name, token in players.items():
            if isinstance(name, str):
                found[name] = token if isinstance(token, str) else None
    name, token = entry.get("name"), entry.get("token")
    if isinstance(name, str) and found.get(name) is None:
        found[name] = token if isinstance(token, str) else None
    return found


def _entry(key: str) -> dict[str, Any]:
    try:
        with locked_json():
            return read_json().get(key, {})
    except OSError as exc:
        warn(f"cannot read {identity_file()}: {exc}")
        return {}


def load_identity(key: str, name: str | None = None) -> Identity | None:
    """The identity saved for server `key` under `name`, or the one used last."""
    entry = _entry(key)
    tokens = _tokens(entry)
    if name is None:
        last = entry.get("name")
        if not isinstance(last, str):
            return None
        name = last
    if name not in tokens:
        return None
    return Identity(name, tokens[name])


def keys_with_token_elsewhere(key: str, name: str) -> list[str]:
    """Other keys of `key`'s scheme, host and port (another path or query: the same server
    under a URL written another way, such as a query it ignores, a proxy's second path or an
    older server that answered on every path) with a token saved for `name`."""
    place = urlsplit(key)
    if place.scheme not in ("ws", "wss"):
        return []
    try:
        with locked_json():
            entries = read_json()
    except OSError:
        return []
    found: list[str] = []
    for other, entry in sorted(entries.items()):
        there = urlsplit(other)
        same_place = (there.scheme, there.netloc) == (place.scheme, place.netloc)
        if other != key and same_place and isinstance(entry, dict) and _tokens(entry).get(name):
            found.append(other)
    return found


def known_players(key: str) -> dict[str, PlayerId]:
    """Name -> player id of every identity saved for server `key` (from their tokens)."""
    found: dict[str, PlayerId] = {}
    for name, token in _tokens(_entry(key)).items():
        player_id = player_id_of(token) if token else None
        if player_id is not None:
            found[name] = player_id
    return found


def admin_name(key: str) -> str | None:
    """The name of the admin identity saved for server `key` (`tournament create`)."""
    name = _entry(key).get("admin")
    return name if isinstance(name, str) else None


def _keys(entry: dict[str, Any]) -> dict[str, str]:
    """Name -> registration key of one server's entry (names whose token has not come)."""
    keys = entry.get("keys")
    if not isinstance(keys, dict):
        return {}
    return {n: k for n, k in keys.items() if isinstance(n, str) and isinstance(k, str)}


def registration_key(key: str, name: str) -> str:
    """The registration key to send with `name` to server `key`: the one kept from an earlier
    try whose token never came, else a new one, kept before it is returned."""
    try:
        with locked_json():
            entries = read_json()
            entry = entries.setdefault(key, {})
            keys = _keys(entry)
            if name not in keys:
                keys[name] = secrets.token_urlsafe(24)
                entry["keys"] = keys
                write_json(entries)
            return keys[name]
    except OSError as exc:
        warn(f"cannot keep the registration key in {identity_file()}: {exc}")
        return secrets.token_urlsafe(24)


def forget_registration_key(key: str, name: str) -> None:
    """Drop the registration key kept for `name` on server `key` (the name is another's)."""
    try:
        with locked_json():
            entries = read_json()
            entry = entries.get(key, {})
            keys = _keys(entry)
            if keys.pop(name, None) is None:
                return
            if keys:
                entry["keys"] = keys
            else:
                entry.pop("keys", None)
            write_json(entries)
    except OSError as exc:
        warn(f"cannot update {identity_file()}: {exc}")


def save_identity(key: str, identity: Identity, role: Role = "player") -> None:
    """Keep `identity`'s token for server `key`; a player becomes the default of the next
    run without `--name`, an admin the identity of the next `tournament create`."""
    try:
        with locked_json():
            entries = read_json()
            old = entries.get(key, {})
            tokens = _tokens(old)
            if identity.token or identity.name not in tokens:
                tokens[identity.name] = identity.token
            last = old.get("name") if isinstance(old.get("name"), str) else None
            admin = old.get("admin") if isinstance(old.get("admin"), str) else None
            if role == "player":
                last = identity.name
            else:
                admin = identity.name
            entry: dict[str, Any] = {}
            if last is not None:
                entry["name"] = last
                if tokens.get(last):
                    entry["token"] = tokens[last]
            entry["players"] = tokens
            if admin is not None:
                entry["admin"] = admin
            keys = _keys(old)
            if identity.token:
                keys.pop(identity.name, None)
            if keys:
                entry["keys"] = keys
            entries[key] = entry
            write_json(entries)
    except OSError as exc:
        warn(f"cannot save the token in {identity_file()}: {exc}")


def default_name() -> str:
    """The login name, trimmed to the server's name rules."""
    with contextlib.suppress(KeyError, OSError, ImportError):  # no login name to be found
        user = re.sub(r"[^A-Za-z0-9_.\-]", "", getpass.getuser())[:16]
        if user:
            return user
    return f"player-{secrets.token_hex(2)}"


# --- connecting as someone -----------------------------------------------------------------


def _default_admin_name(key: str) -> str:
    last = load_identity(key)
    base = last.name if last is not None else default_name()
    return f"{base[: NAME_LIMIT - len('-admin')]}-admin"


async def connect_player(url: str, key: str, name: str | None, role: Role = "player") -> Connection:
    """A connected `Connection` for a player of the server known under `key`.

    The player is `name`, or without it the one used last (`role="admin"`: the saved admin
    identity, else `<last name>-admin`). Its saved token comes first; a token the server
    refuses (4001, e.g. after its secret changed) is said on stderr and the name is asked
    for again, which works if the server no longer knows the name either. A new token is
    saved. Raises `IdentityError` (a `ConnectionFailedError`) when neither way works.

    An embedded folder's key (`embedded_key`) without a token for the name falls back to the
    single entry of older versions; a token from there that the server refuses was another
    folder's: the name is asked for without a warning."""
    explicit = name is not None
    legacy = legacy_key_of(key)
    where = server_text(key, url)
    if name is None and role == "admin":
        name = admin_name(key) or _default_admin_name(key)
    elif name is None:
        last = load_identity(key) or (load_identity(legacy) if legacy else None)
        name = last.name if last is not None else default_name()
    stored = load_identity(key, name)
    from_legacy = False
    if legacy is not None and (stored is None or not stored.token):
        older = load_identity(legacy, name)
        if older is not None and older.token:
            stored, from_legacy = older, True
    refused: ConnectionFailedError | None = None
    if stored is not None and stored.token:
        conn = Connection(url, name=name, token=stored.token)
        try:
            await conn.connect()
        except ConnectionFailedError as exc:
            if not exc.fatal:
                raise
            refused = exc
        else:
            save_identity(key, Identity(conn.name or name, conn.token), role)
            return conn
    conn = Connection(url, name=name, key=registration_key(key, name))
    try:
        await conn.connect()
    except ConnectionFailedError as exc:
        if exc.error_code != ErrorCode.NAME_TAKEN:
            raise
        forget_registration_key(key, name)  # the name is someone else's: nothing to reclaim
        if refused is not None and not from_legacy:
            raise IdentityError(
                f"{token_refused_text(where, name, refused)}, and "
                f"the name {name!r} is taken there: the server's secret may have changed. "
                f"The saved tokens are in {identity_file()}; remove {name!r} from its "
                f'"{key}" entry, or play as another --name'
            ) from None
        if role == "admin" and not explicit:  # a default name someone else holds
            return await connect_player(url, key, f"{name[:18]}-{secrets.token_hex(2)}", role)
        note = (
            f' (its token in the "{legacy}" entry of older versions is another data folder\'s)'
            if from_legacy
            else ""
        )
        elsewhere = keys_with_token_elsewhere(key, name)
        if elsewhere:  # the same server under another path: a typo, likely
            note += f" (it has one for {name!r} at {elsewhere[0]}: is --server mistyped?)"
        raise IdentityError(
            f"name_taken: {name!r} belongs to someone else on {where} and {identity_file()} "
            f"has no token for it{note}; choose another --name"
        ) from None
    if refused is not None and not from_legacy:
        warn(
            f"{token_refused_text(where, name, refused)}; "
            f"{name!r} is now a new player there (new token saved in {identity_file()})"
        )
    if conn.token:
        save_identity(key, Identity(conn.name or name, conn.token), role)
    return conn
