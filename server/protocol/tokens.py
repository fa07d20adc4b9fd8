"""Player tokens: the player id signed with the server's secret (HMAC-SHA256).

A token proves identity on reconnect; the server stores no token, only the secret.

A hello may carry a registration key the client made up: the new player's id is then derived
from it (`registered_player_id`), so the same name and key sent again (the welcome with the
token was lost: a crash, a dropped link) find the same player, and no one without the key can.
"""

from __future__ import annotations

import base64
import hashlib
import hmac

from solrace.server.protocol.ids import PlayerId

TOKEN_PREFIX = "v1"


def _signature(player_id: str, secret: bytes) -> str:
    digest = hmac.new(secret, f"{TOKEN_PREFIX}.{player_id}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def sign_token(player_id: PlayerId, secret: bytes) -> str:
    """The token that proves `player_id` to a server holding `secret`."""
    return f"{TOKEN_PREFIX}.{player_id}.{_signature(player_id, secret)}"


def secret_fingerprint(secret: bytes) -> str:
    """A digest that tells secrets apart without telling them (`Store.claim_secret`)."""
    return hmac.new(secret, b"solrace secret fingerprint", hashlib.sha256).hexdigest()[:16]


def verify_token(token: str, secret: bytes) -> PlayerId | None:
    """The player id a token proves, or None if it is malformed or forged."""
    parts = token.split(".")
    if len(parts) != 3 or parts[0] != TOKEN_PREFIX or not parts[1]:
        return None
    expected = _signature(parts[1], secret)
    if not hmac.compare_digest(expected.encode(), parts[2].encode()):
        return None
    return PlayerId(parts[1])


def registered_player_id(key: str, secret: bytes) -> PlayerId:
    """The id of the player registered with `key` on a server holding `secret`: the shape of
    a random id ("p" and 16 hex digits), unguessable without the key."""
    digest = hmac.new(secret, f"register.{key}".encode(), hashlib.sha256).hexdigest()
    return PlayerId("p" + digest[:16])
