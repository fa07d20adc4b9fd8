"""The node's token secret: given in the settings, else read from `<data_dir>/secret`, which
the first start makes (whole or not at all, mode 0600)."""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
from pathlib import Path

from solrace.server.settings import SECRET_MIN_CHARS, Settings
from solrace.server.startup_errors import StartupError

__all__ = ["SECRET_FILE_CHARS", "load_secret"]

# The node itself (docs/operations.md, "Loggers"), as in app.py.
log = logging.getLogger("solrace.server")

#: Characters of the secret a node makes for itself (`<data_dir>/secret`: 32 random bytes).
SECRET_FILE_CHARS = 64


def load_secret(settings: Settings) -> bytes:
    """The token secret: from settings, else `<data_dir>/secret` (made once, mode 0600).

    The file appears whole or not at all (written beside it, then linked to its name), so a
    start that fails while writing it (a full disk) leaves no empty secret behind; a file
    that is not a whole secret is refused, never used: tokens signed with an empty key could
    be made by anyone. `StartupError` says so; `OSError` for a data dir it cannot use. A file
    other users may read or write is used, with a warning."""
    if settings.secret:
        return settings.secret.encode()
    if settings.store_url() == "memory:":
        return secrets.token_bytes(32)
    path = Path(settings.data_dir) / "secret"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        draft = path.with_name(f".secret.{os.getpid()}.{secrets.token_hex(4)}")
        try:
            fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError as exc:  # said of the secret, not of its draft
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        try:
            with os.fdopen(fd, "w") as handle:
                handle.write(secrets.token_hex(SECRET_FILE_CHARS // 2))
                handle.flush()
                os.fsync(handle.fileno())
            with contextlib.suppress(FileExistsError):  # another start made it first
                os.link(draft, path)
        finally:
            draft.unlink(missing_ok=True)
    try:
        secret = path.read_text().strip()
    except UnicodeDecodeError as exc:  # raw random bytes (head -c 32 /dev/urandom > secret)
        raise StartupError(
            f"the token secret {path} is not text (byte {exc.start} is not UTF-8): write "
            f"{SECRET_MIN_CHARS} characters or more into it (openssl rand -hex 32 > {path}), or "
            "remove it to make a new one (every player's token then stops working)"
        ) from exc
    if len(secret) < SECRET_MIN_CHARS:
        raise StartupError(
            f"the token secret {path} is empty or cut short ({len(secret)} characters, at "
            f"least {SECRET_MIN_CHARS}): restore it from a backup, or remove it to make a new "
            "one (every player's token then stops working)"
        )
    mode = path.stat().st_mode & 0o777
    if mode & 0o077:  # as `openssl rand -hex 32 > secret` makes it, under the usual umask
        log.warning(
            "the token secret %s is open to other users (mode %03o): whoever reads it can "
            "sign in as any player; chmod 600 %s",
            path,
            mode,
            path,
        )
    return secret.encode()
