"""Wrong guesses of a secret over real sockets: a connection that sends too many is closed
(1008), its address runs out of guesses for a while (reconnecting does not start it again),
a right secret still works from another address, and the log names the address."""

from __future__ import annotations

import logging

import pytest

from solrace.server.app import App
from solrace.server.guesses import ADMIN_TOKEN_GUESSES, INVITE_CODE_GUESSES
from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.messages import CreateRace, Error, JoinRace, RaceUpdate
from solrace.server.protocol.tournament_messages import (
    CreateTournament,
    TournamentAdmin,
    TournamentView,
)
from tests.integration.conftest import ServerFactory
from tests.integration.wsclient import Client

TOKEN = "4f1c0e9b7a2d5c8e3b6a9d0c1f4e7b2a"


async def open_from(app: App, address: str, name: str | None = None) -> Client:
    """A client connected from `address` (any 127.x.y.z reaches the server on loopback), its
    hello said (a spectator without `name`)."""
    client = await Client.open(f"ws://127.0.0.1:{app.port}", local_addr=(address, 0))
    await client.hello(name)
    return client


async def closed_with(client: Client) -> tuple[list[Error], tuple[int | None, str | None]]:
    """Wait for the server's close: the errors answered before it, and its code and reason."""
    await client.closed()
    connection = client.connection
    errors = [m for m in client.received if isinstance(m, Error)]
    return errors, (connection.close_code, connection.close_reason)


def create(token: str) -> CreateTournament:
    return CreateTournament(
        admin_token=token, name="cup", game="klondike", format="swiss", check_in_required=False
    )


async def test_wrong_admin_tokens_close_the_connection_then_lock_the_address_out(
    start_server: ServerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    app = await start_server(admin_token=TOKEN)
    guess = TournamentAdmin(tournament_id="t000000", admin_token="guess-" + "0" * 16, act="start")
    limit = ADMIN_TOKEN_GUESSES
    caplog.set_level(logging.INFO, logger="solrace.server")
    for _ in range(limit.per_address // limit.per_connection):
        guesser = await open_from(app, "127.0.0.1")
        for _ in range(98):
            await guesser.send(guess)
        errors, close = await closed_with(guesser)
        assert [e.code for e in errors] == ["not_admin"] * limit.per_connection
        assert close == (
            CloseCode.POLICY_VIOLATION,
            "too many wrong admin tokens",
        )
    # The address has no guesses left: even the right token is refused unchecked, saying when
    # to try again.
    late = await open_from(app, "127.0.0.1")
    await late.send(create(TOKEN))
    refused = await late.expect(Error)
    assert refused.code == "too_many_guesses"
    assert refused.message.startswith("too many wrong admin tokens from your address: try again in")
    await late.close()
    # The director, from another address, is not held back.
    director = await open_from(app, "127.0.0.2", "director")
    await director.send(create(TOKEN))
    assert (await director.expect(TournamentView)).tournament.phase == "registration"
    await director.close()
    # Logged with the address, not once per guess.
    warned = [
        r.getMessage()
        for r in caplog.records
        if r.name == "solrace.server.guesses" and r.levelno == logging.WARNING
    ]
    assert any("from 127.0.0.1: wrong admin token" in line for line in warned), warned
    assert any("wrong admin tokens from 127.0.0.1" in line for line in warned), warned
    assert len(warned) <= 3, warned


async def test_wrong_invite_codes_close_the_connection_then_lock_the_address_out(
    start_server: ServerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    app = await start_server()
    limit = INVITE_CODE_GUESSES
    caplog.set_level(logging.INFO, logger="solrace.server")
    creator = await open_from(app, "127.0.0.3", "creator")
    await creator.send(CreateRace(game="klondike", seats=2, time_limit_s=60, invite_code="4711"))
    race_id = (await creator.expect(RaceUpdate)).race_id
    codes = iter(f"{k:04d}" for k in range(10_000) if k != 4711)
    for n in range(limit.per_address // limit.per_connection):
        guesser = await open_from(app, "127.0.0.1", f"guesser{n}")
        for _ in range(95):
            await guesser.send(JoinRace(race_id=race_id, invite_code=next(codes)))
        errors, close = await closed_with(guesser)
        assert [e.code for e in errors] == ["bad_invite"] * limit.per_connection
        assert close == (CloseCode.POLICY_VIOLATION, "too many wrong invite codes")
    # The address has no guesses left: even the right code is refused unchecked.
    late = await open_from(app, "127.0.0.1", "late")
    await late.send(JoinRace(race_id=race_id, invite_code="4711"))
    refused = await late.expect(Error)
    assert refused.code == "too_many_guesses"
    assert refused.message.startswith("too many wrong invite codes from your address: try again in")
    await late.close()
    # The invited player, from another address, joins with it.
    friend = await open_from(app, "127.0.0.2", "friend")
    await friend.send(JoinRace(race_id=race_id, invite_code="4711"))
    joined = await friend.expect(RaceUpdate, lambda m: len(m.race.racers) == 2)
    assert joined.race_id == race_id
    await friend.close()
    await creator.close()
    told = [r for r in caplog.records if r.name == "solrace.server.guesses"]
    assert any("from 127.0.0.1: wrong invite code" in r.getMessage() for r in told)
    assert any(
        r.levelno == logging.WARNING and "wrong invite codes from 127.0.0.1" in r.getMessage()
        for r in told
    )
    assert len(told) <= 3, [r.getMessage() for r in told]


async def test_a_seated_racer_takes_its_seat_back_when_its_address_is_out_of_guesses(
    start_server: ServerFactory,
) -> None:
    app = await start_server()
    limit = INVITE_CODE_GUESSES
    creator = await open_from(app, "127.0.0.3", "creator")
    await creator.send(CreateRace(game="klondike", seats=3, time_limit_s=60, invite_code="4711"))
    race_id = (await creator.expect(RaceUpdate)).race_id
    racer = await open_from(app, "127.0.0.1", "racer")
    await racer.send(JoinRace(race_id=race_id, invite_code="4711"))
    await racer.expect(RaceUpdate, lambda m: len(m.race.racers) == 2)
    # Others at the racer's address use up its guesses on this race.
    codes = iter(f"{k:04d}" for k in range(10_000) if k != 4711)
    for n in range(limit.per_address // limit.per_connection):
        guesser = await open_from(app, "127.0.0.1", f"guesser{n}")
        for _ in range(limit.per_connection):
            await guesser.send(JoinRace(race_id=race_id, invite_code=next(codes)))
        errors, close = await closed_with(guesser)
        assert [e.code for e in errors] == ["bad_invite"] * limit.per_connection
        assert close[0] == CloseCode.POLICY_VIOLATION
    # The racer's client sends its join again (as `join_or_resume` does): it is told it sits
    # there already, every time, and stays connected.
    for _ in range(limit.per_connection + 1):
        await racer.send(JoinRace(race_id=race_id, invite_code="4711"))
        assert (await racer.expect(Error)).code == "already_joined"
    await racer.send(JoinRace(race_id=race_id, invite_code="wrong"))
    assert (await racer.expect(Error)).code == "already_joined"
    await racer.close()
    await creator.close()


async def test_refusals_unchecked_do_not_close_the_connection(start_server: ServerFactory) -> None:
    app = await start_server(admin_token=TOKEN)
    limit = ADMIN_TOKEN_GUESSES
    wrong = create("guess-" + "0" * 16)
    for _ in range(limit.per_address // limit.per_connection):
        guesser = await open_from(app, "127.0.0.1")
        for _ in range(limit.per_connection):
            await guesser.send(wrong)
        errors, close = await closed_with(guesser)
        assert [e.code for e in errors] == ["not_admin"] * limit.per_connection
        assert close[0] == CloseCode.POLICY_VIOLATION
    # A director at that address who only ever sends the right token is refused while the
    # address is out of guesses, and stays connected however often it tries.
    director = await open_from(app, "127.0.0.1", "director")
    for _ in range(limit.per_connection * 2):
        await director.send(create(TOKEN))
    refusals = [(await director.expect(Error)).code for _ in range(limit.per_connection * 2)]
    assert refusals == ["too_many_guesses"] * (limit.per_connection * 2)
    await director.send(CreateRace(game="klondike", seats=2, time_limit_s=60))
    assert (await director.expect(RaceUpdate)).race.racers[0].name == "director"
    assert director.connection.close_code is None
    await director.close()


async def test_wrong_invite_codes_for_one_race_leave_the_address_its_other_races(
    start_server: ServerFactory,
) -> None:
    app = await start_server()
    limit = INVITE_CODE_GUESSES
    creator = await open_from(app, "127.0.0.3", "creator")
    await creator.send(CreateRace(game="klondike", seats=2, time_limit_s=60, invite_code="4711"))
    guessed = (await creator.expect(RaceUpdate)).race_id
    other = await open_from(app, "127.0.0.4", "other")
    await other.send(CreateRace(game="klondike", seats=2, time_limit_s=60, invite_code="0815"))
    private = (await other.expect(RaceUpdate)).race_id
    codes = iter(f"{k:04d}" for k in range(10_000) if k != 4711)
    for n in range(limit.per_address // limit.per_connection):
        guesser = await open_from(app, "127.0.0.1", f"guesser{n}")
        for _ in range(limit.per_connection):
            await guesser.send(JoinRace(race_id=guessed, invite_code=next(codes)))
        errors, close = await closed_with(guesser)
        assert [e.code for e in errors] == ["bad_invite"] * limit.per_connection
        assert close[0] == CloseCode.POLICY_VIOLATION
    friend = await open_from(app, "127.0.0.1", "friend")
    await friend.send(JoinRace(race_id=guessed, invite_code="4711"))
    assert (await friend.expect(Error)).code == "too_many_guesses"
    # The same address's codes for another race are checked as ever.
    await friend.send(JoinRace(race_id=private, invite_code="0000"))
    assert (await friend.expect(Error)).code == "bad_invite"
    await friend.send(JoinRace(race_id=private, invite_code="0815"))
    joined = await friend.expect(RaceUpdate, lambda m: m.race_id == private)
    assert len(joined.race.racers) == 2
    for client in (friend, other, creator):
        await client.close()
