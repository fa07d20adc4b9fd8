"""Any sequence of messages from two clients, against the real server on loopback (property
test): every client message type with fields drawn from plausible values (the race, the
tournament and the player the clients share among them, numbers at msgpack's edges, strings
no field takes) and, now and then, a field or a whole frame of any msgpack value. Whatever
comes, each gets its documented answer: an error message, or a close code from the table;
never an exception logged, never 1011, never a hang. Derandomized: the same every run."""

from __future__ import annotations

import contextlib
import itertools
import logging
import typing
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.exceptions import ConnectionClosed

from solrace.engine import GAME_IDS
from solrace.server.app import App
from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.codec import encode_raw
from solrace.server.protocol.messages import ClientMessage, Ping, Pong
from solrace.server.protocol.tournament_messages import (
    CreateTournament,
    TournamentAdmin,
    TournamentView,
)
from tests.integration.conftest import ServerFactory
from tests.integration.helpers import create_race
from tests.integration.wsclient import Client
from tests.server.protocol.test_codec_properties import VALUES

ADMIN_TOKEN = "admin-token-for-the-fuzz"
MODELS = typing.get_args(typing.get_args(ClientMessage)[0])

#: Stand-ins for what exists only once the server runs: replaced before each frame is sent.
RACE, TOURNAMENT, PLAYER = "<race>", "<tournament>", "<player>"

INTS = st.sampled_from([0, 1, 2, 3, 8, 9, 60, 600, 2**31, 2**63 - 1, -1, -(2**63)]) | st.integers(
    -5, 100
)
STRINGS = (
    st.sampled_from(
        [RACE, TOURNAMENT, PLAYER, ADMIN_TOKEN, "", "deal", "t0-t1", "w-f0", "x" * 300, "\x00"]
    )
    | st.sampled_from(GAME_IDS)
    | st.text(max_size=8)
)
BOOL_FIELDS = {
    "follow",
    "rated",
    "include_provisional",
    "check_in_required",
    "third_place_match",
    "bracket_reset",
}
LITERALS = {
    "act": typing.get_args(TournamentAdmin.model_fields["act"].annotation),
    "format": typing.get_args(CreateTournament.model_fields["format"].annotation),
}


def plausible(model: type[Any], name: str) -> st.SearchStrategy[Any]:
    """Values of the kind field `name` of `model` takes (valid or not in the details)."""
    annotation = str(model.model_fields[name].annotation)
    if name == "protocol":
        values: st.SearchStrategy[Any] = st.sampled_from([1, 1, 1, 0, 2])
    elif name in LITERALS:
        values = st.sampled_from(LITERALS[name])
    elif name == "placings":
        values = st.lists(st.lists(STRINGS, max_size=3), max_size=3)
    elif name == "cards":
        values = st.dictionaries(STRINGS, INTS, max_size=3)
    elif name in BOOL_FIELDS:
        values = st.booleans()
    elif "int" in annotation:
        values = INTS
    else:
        values = STRINGS
    return values | st.none() if "None" in annotation else values


@st.composite
def client_messages(draw: st.DrawFn) -> Any:
    """A client message's map, its required fields there and each optional one or not; one
    field in ten (or the whole frame, one in twenty) any msgpack value."""
    if draw(st.integers(0, 19)) == 0:
        return draw(VALUES)
    model = draw(st.sampled_from(MODELS))
    message = {"type": model.model_fields["type"].default}
    for name, field in model.model_fields.items():
        if name != "type" and (field.is_required() or draw(st.booleans())):
            anything = draw(st.integers(0, 9)) == 0
            message[name] = draw(VALUES if anything else plausible(model, name))
    return message


SCRIPTS = st.lists(st.tuples(st.sampled_from([0, 1]), client_messages()), min_size=1, max_size=20)


@pytest.fixture
async def app(start_server: ServerFactory) -> App:
    """One server for every example: past the pace of handshakes and of new names."""
    return await start_server(
        admin_token=ADMIN_TOKEN,
        connect_burst=1e6,
        register_burst=1e6,
        register_node_burst=1e6,
    )


def fill_in(value: Any, names: dict[str, str]) -> Any:
    if isinstance(value, str):
        return names.get(value, value)
    if isinstance(value, list):
        return [fill_in(item, names) for item in value]
    if isinstance(value, dict):
        return {key: fill_in(item, names) for key, item in value.items()}
    return value


NAMES = itertools.count(1)


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(script=SCRIPTS)
async def test_any_messages_get_an_answer_or_a_close_code_never_an_internal_error(
    app: App, caplog: pytest.LogCaptureFixture, script: list[tuple[int, Any]]
) -> None:
    caplog.clear()
    url = f"ws://127.0.0.1:{app.port}"
    clients = [await Client.open(url), await Client.open(url)]
    try:
        for client in clients:
            await client.hello(f"fuzz{next(NAMES)}")
        race_id = await create_race(clients[0], seats=2)
        await clients[0].send(
            CreateTournament(
                admin_token=ADMIN_TOKEN,
                name=f"cup{next(NAMES)}",
                game="klondike",
                format="single_elimination",
                check_in_required=False,
            )
        )
        tournament = (await clients[0].expect(TournamentView)).tournament
        names = {RACE: race_id, TOURNAMENT: tournament.tournament_id, PLAYER: clients[1].player_id}
        for sender, message in script:
            with contextlib.suppress(ConnectionClosed):  # the server closed it (a close code)
                await clients[sender].send_raw(encode_raw(fill_in(message, names)))
        for nonce, client in enumerate(clients):
            # Closed before the pong came (`expect` says so with an AssertionError): then
            # with a code from the table. A pong that never comes is a timeout.
            with contextlib.suppress(ConnectionClosed, AssertionError):
                await client.send(Ping(nonce=nonce))
                await client.expect(Pong, lambda pong, n=nonce: pong.nonce == n)
                continue
            code = await client.closed()
            assert code in set(CloseCode) - {CloseCode.INTERNAL_ERROR}, code
        assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    finally:
        for client in clients:
            await client.close()
