"""Identities (server/identities.py): who a hello is, by token, by name (and key) or neither,
and the refusals that change nothing."""

from __future__ import annotations

import pytest

from solrace.server.identities import Identities, Identity, identity_of
from solrace.server.protocol.errors import ErrorCode, RaceError
from solrace.server.protocol.messages import PROTOCOL_VERSION, Hello
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
