"""Identities (server/identities.py): who a hello is, by token, by name (and key) or neither,
and the refusals that change nothing."""

from __future__ import annotations

import pytest

from solrace.server.identities import Identities, Identity, identity_of
from solrace.server.protocol.errors import ErrorCode, RaceError
from solrace.server.protocol.messages import PROTOCOL_VERSION, Hello
from solrace.server.protocol.tokens import registered_player_id, sign_token
from solrace.server.store import MemoryStore
from tests.server.sessions import RecordingSession, opened

KEY = "k" * 24
NOW_MS = 1_700_000_000_000


def hello(**fields: str) -> Hello:
    return Hello.model_validate({"protocol": PROTOCOL_VERSION, **fields})


async def refusal(identities: Identities, message: Hello) -> ErrorCode:
    with pytest.raises(RaceError) as refused:
        await identities.identify(RecordingSession(9), message, NOW_MS)
    return refused.value.code


async def test_a_new_name_is_registered_and_its_token_proves_it_again() -> None:
    async with opened(MemoryStore()) as store:
        identities = Identities(store, b"x" * 32)
        session = RecordingSession(1)
        new = await identities.identify(session, hello(name="ann", key=KEY), NOW_MS)
        assert new is not None and new.is_new and new.player is not None
        assert new.player.name == "ann" and new.token is not None

        again = await identities.identify(session, hello(token=new.token), NOW_MS)
        assert again is not None and again == Identity(new.player, new.token, is_new=False)
        by_key = await identities.identify(session, hello(name="ANN", key=KEY), NOW_MS)
        assert by_key is not None and by_key.player == new.player and not by_key.is_new

        assert await refusal(identities, hello(name="ann")) is ErrorCode.NAME_TAKEN
        assert await refusal(identities, hello(name="bea", key=KEY)) is ErrorCode.NAME_MISMATCH
        mismatch = hello(name="bea", token=new.token)
        assert await refusal(identities, mismatch) is ErrorCode.NAME_MISMATCH
        assert await identities.identify(session, hello(token="p1.bad"), NOW_MS) is None
        stored = await store.get_player(new.player.player_id)  # the refusals changed nothing
        assert stored is not None and stored.name == "ann"


async def test_a_hello_with_neither_name_nor_token_is_an_anonymous_spectator() -> None:
    async with opened(MemoryStore()) as store:
        anonymous = await Identities(store, b"x" * 32).identify(
            RecordingSession(1), hello(), NOW_MS
        )
        assert anonymous is not None and anonymous.player is None and anonymous.token is None
        session = RecordingSession(1)
        with pytest.raises(RaceError) as refused:
            identity_of(session)
        assert refused.value.code is ErrorCode.IDENTITY_REQUIRED


@pytest.mark.parametrize(
    "name", ["pa6728d3b098701af", "PA6728D3B098701AF", "p0000000000000000", "Pffffffffffffffff"]
)
async def test_a_new_name_shaped_like_a_player_id_is_refused(name: str) -> None:
    """ "p" and 16 hex digits, in any case (names compare case-blind): such a name would pass
    for a player's id wherever ids and names are both taken. Nothing is made."""
    async with opened(MemoryStore()) as store:
        identities = Identities(store, b"x" * 32)
        session = RecordingSession(1)
        for message in (hello(name=name), hello(name=name, key=KEY)):
            with pytest.raises(RaceError) as refused:
                await identities.identify(session, message, NOW_MS)
            assert refused.value.code is ErrorCode.INVALID_MESSAGE
            assert "player id" in str(refused.value)
        assert await store.get_player_by_name(name) is None
        # One letter or digit more or less is a name like any other.
        for fine in (name[:-1], name + "0", name.replace(name[0], "q", 1)):
            new = await identities.identify(session, hello(name=fine), NOW_MS)
            assert new is not None and new.is_new


async def test_a_registered_name_shaped_like_a_player_id_keeps_working() -> None:
    """A name is never taken away: one of that shape registered already is its player's, by
    token and by key, and someone else asking for it gets `name_taken` as for any name."""
    async with opened(MemoryStore()) as store:
        secret = b"x" * 32
        identities = Identities(store, secret)
        name = "pa6728d3b098701af"
        player_id = registered_player_id(KEY, secret)
        await store.create_player(player_id, name, NOW_MS)
        session = RecordingSession(1)
        by_token = await identities.identify(
            session, hello(name=name, token=sign_token(player_id, secret)), NOW_MS
        )
        assert by_token is not None and by_token.player is not None
        assert by_token.player.player_id == player_id
        by_key = await identities.identify(session, hello(name=name, key=KEY), NOW_MS)
        assert by_key is not None and by_key.player == by_token.player and not by_key.is_new
        assert await refusal(identities, hello(name=name)) is ErrorCode.NAME_TAKEN
        assert await refusal(identities, hello(name=name.upper())) is ErrorCode.NAME_TAKEN
