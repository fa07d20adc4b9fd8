"""Who says hello: a player by token, a player by name (new, or again with the key that
registered the name), or an anonymous spectator (neither); and who a session said hello as.

A name is registered by the first hello that asks for it; the welcome carries a token signed
with the server's secret that proves the player afterwards. A new name may come with a key the
client made up and kept: the player's id is derived from it (`tokens.registered_player_id`),
so the same name and key again get the same player back, should the welcome be lost.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from solrace.server.protocol.errors import ErrorCode, RaceError
from solrace.server.protocol.ids import PlayerId, looks_like_player_id
from solrace.server.protocol.messages import Hello
from solrace.server.protocol.records import PlayerRecord
from solrace.server.protocol.tokens import registered_player_id, sign_token, verify_token
from solrace.server.session import Session
from solrace.server.store import NameTakenError, Store


@dataclass(frozen=True, slots=True)
class Identity:
    """Who a hello is."""

    #: The player; None for an anonymous spectator.
    player: PlayerRecord | None
    #: The token the welcome carries (None for an anonymous spectator).
    token: str | None
    #: The hello registered the player just now (it has no races or ratings yet).
    is_new: bool


def identity_of(session: Session) -> tuple[PlayerId, str]:
    """The player id and name `session` said hello with (`identity_required` if none)."""
    if session.player_id is None or session.name is None:
        raise RaceError(ErrorCode.IDENTITY_REQUIRED, "hello with a name or token first")
    return session.player_id, session.name


def _key_of_another(player: PlayerRecord) -> RaceError:
    """A hello's key registered `player`, whose name is another: not `name_taken`, since the
    name asked for may well be free."""
    return RaceError(
        ErrorCode.NAME_MISMATCH, f"this key registered {player.name!r}: a key registers one name"
    )


class Identities:
    """The players of the hellos, as `store` keeps them and `secret` signs their tokens."""

    def __init__(self, store: Store, secret: bytes) -> None:
        self.store = store
        self.secret = secret

    async def identify(self, session: Session, hello: Hello, now: int) -> Identity | None:
        """Who `hello` (said on `session`, at `now`) is; None if its token is bad (nobody).
        `RaceError`: `NAME_MISMATCH` for a token or key of another name, `NAME_TAKEN` for a
        name someone else registered, `INVALID_MESSAGE` for a new name shaped like a player
        id, `NOT_ALLOWED` past the budget of new names (nothing changed, each time)."""
        if hello.token is not None:
            player_id = verify_token(hello.token, self.secret)
            player = None if player_id is None else await self.store.get_player(player_id)
            if player is None:
                return None
            if hello.name is not None and hello.name != player.name:
                raise RaceError(ErrorCode.NAME_MISMATCH, "this token is not that name's")
            return Identity(player, hello.token, is_new=False)
        if hello.name is None:
            return Identity(None, None, is_new=False)
        player, is_new = await self._register(session, hello.name, hello.key, now)
        if player is None:
            raise RaceError(ErrorCode.NAME_TAKEN, f"{hello.name!r} belongs to someone else")
        return Identity(player, sign_token(player.player_id, self.secret), is_new)

    async def _register(
        self, session: Session, name: str, key: str | None, now: int
    ) -> tuple[PlayerRecord | None, bool]:
        """The player of a hello with `name` and no token, and whether it is new: None if the
        name is someone else's. With the `key` that registered the name, its player again;
        with a key that registered another name, `RaceError(NAME_MISMATCH)`, and
        `RaceError(NOT_ALLOWED)` past the address's or the node's budget of new names. A new
        name shaped like a player id, in any case, is `RaceError(INVALID_MESSAGE)`: it would
        pass for a player's id where ids and names are both taken (a profile, an admin act);
        one registered already stays its player's."""
        if key is None:
            player_id = PlayerId("p" + secrets.token_hex(8))
        else:
            player_id = registered_player_id(key, self.secret)
            reclaimed = await self.store.get_player(player_id)
            if reclaimed is not None:
                if reclaimed.name.casefold() == name.casefold():
                    return reclaimed, False  # its own again: no new name
                raise _key_of_another(reclaimed)
        if looks_like_player_id(name.casefold()):
            if await self.store.get_player_by_name(name) is not None:
                return None, False  # someone's already: taken, as any name is
            raise RaceError(
                ErrorCode.INVALID_MESSAGE,
                f"{name!r} is shaped like a player id ('p' and 16 hex digits, in any case):"
                " choose another name",
            )
        refusal = session.register()
        if refusal is not None:
            raise RaceError(
                ErrorCode.NOT_ALLOWED,
                f"{refusal}: try again later, or say hello with the token of a name you have",
            )
        try:
            return await self.store.create_player(player_id, name, now), True
        except NameTakenError:
            session.unregister()  # nothing was made
            if key is None:
                return None, False
        # The name is someone else's, or the key's player was made meanwhile (a hello with
        # the same key at the same time): with this name, or with another one.
        player = await self.store.get_player(player_id)
        if player is None:
            return None, False
        if player.name.casefold() != name.casefold():
            raise _key_of_another(player)
        return player, False


__all__ = ["Identities", "Identity", "identity_of"]
