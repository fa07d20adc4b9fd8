"""Every kind of bad input gets its documented answer while another race goes on unharmed."""

from __future__ import annotations

import pytest

from solrace.server.app import App
from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.codec import encode_raw
from solrace.server.protocol.messages import (
    Error,
    Hello,
    JoinRace,
    ListRaces,
    MakeMove,
    MoveRejected,
    Ping,
    Pong,
    Progress,
    RaceList,
    RaceUpdate,
    Resign,
)
from solrace.server.protocol.tokens import sign_token
from tests.integration.conftest import ClientFactory, ServerFactory
from tests.integration.helpers import create_race, play, refused, start_race


@pytest.fixture
async def server(start_server: ServerFactory) -> App:
    # A small rate budget so that a flood trips it; the racers stay well inside it.
    return await start_server(rate_capacity=40.0, rate_refill_per_s=5.0)


async def test_bad_input_while_a_race_goes_on(server: App, client: ClientFactory) -> None:
    alice, bob = await client("alice"), await client("bob")
    race_id = await start_race(alice, [bob])
    await play(alice, race_id, ["deal"])

    # Closed at once, each with its code from the table.
    garbage = await client()
    await garbage.send_raw(b"\xc1\xff\x00 not msgpack")
    assert await garbage.closed() == CloseCode.INVALID_PAYLOAD
    not_a_map = await client()
    await not_a_map.send_raw(encode_raw([1, 2, 3]))
    assert await not_a_map.closed() == CloseCode.INVALID_PAYLOAD
    text = await client()
    await text.send_raw("hello")
    assert await text.closed() == CloseCode.UNSUPPORTED_DATA
    big = await client()
    await big.send_raw(encode_raw({"type": "ping", "pad": "x" * 17_000}))
    assert await big.closed() == CloseCode.MESSAGE_TOO_BIG
    flood = await client()
    for nonce in range(200):
        try:
            await flood.send(Ping(nonce=nonce))
        except Exception:
            break
    assert await flood.closed() == CloseCode.POLICY_VIOLATION
    old = await client()
    await old.send(Hello(protocol=99, name="old"))
    assert await old.closed() == CloseCode.UNSUPPORTED_PROTOCOL
    forged = await client()
    await forged.send(Hello(protocol=1, token=sign_token(alice.player_id, b"not the secret")))
    assert await forged.closed() == CloseCode.AUTH_FAILED
    wrong = await client()
    await wrong.send(Hello(protocol=1, token="v1.nobody.c2lnbmF0dXJl"))
    assert await wrong.closed() == CloseCode.AUTH_FAILED

    # Answered with an error; the connection stays usable.
    sloppy = await client()
    await sloppy.send(ListRaces())
    assert (await sloppy.expect(Error)).code == "hello_required"
    await sloppy.send(MakeMove(race_id=race_id, seq=0, move="deal"))
    early = await sloppy.expect(Error)
    assert (early.code, early.request, early.race_id) == ("hello_required", "move", race_id)
    for frame, request, named in [
        ({"type": "teleport"}, "teleport", None),
        ({"type": "hello", "protocol": "1"}, "hello", None),
        ({"type": "ping", "nonce": 1, "extra": True}, "ping", None),
        ({"no_type": 1}, None, None),
        ({"type": "move", "race_id": race_id, "seq": -1, "move": "deal"}, "move", race_id),
        ({"type": "watch", "race_id": race_id, "extra": 1}, "watch", race_id),
        ({"type": "watch", "race_id": "r" * 33}, "watch", None),  # no race id: too long
    ]:
        await sloppy.send_raw(encode_raw(frame))
        error = await sloppy.expect(Error)
        # The error names the request, and the race when the frame named a valid race id.
        assert (error.code, error.request, error.race_id) == ("invalid_message", request, named)
    # A name another player's token owns: an error, not a welcome.
    await sloppy.send(Hello(protocol=1, name="alice"))
    refusal = await sloppy.expect(Error, lambda e: e.code == "name_taken")
    assert refusal.request == "hello"  # it answers the hello, as every refusal names its request
    # Alice's own token with another name: refused, and the connection may say hello again.
    assert alice.welcome is not None and alice.welcome.token is not None
    await sloppy.send(Hello(protocol=1, name="bob", token=alice.welcome.token))
    mismatch = await sloppy.expect(Error, lambda e: e.code == "name_mismatch")
    assert mismatch.request == "hello"

    mallory = await client("mallory")
    # A move in a race mallory is not in, an unknown race, resigning someone else's race.
    assert (await refused(mallory, race_id, 1, "deal")).code == "not_in_race"
    assert (await refused(mallory, "r-nope", 1, "deal")).code == "unknown_race"
    await mallory.send(Resign(race_id=race_id))
    assert (await mallory.expect(Error)).code == "not_in_race"
    # A spectator (no identity) trying to move.
    spectator = await client()
    await spectator.hello()
    assert (await refused(spectator, race_id, 1, "deal")).code == "not_in_race"
    # Alice's own bad moves: unparsable and illegal, nothing changes.
    assert (await refused(alice, race_id, 2, "t9-zz")).code == "invalid_move"
    assert (await refused(alice, race_id, 3, "t0-t1")).code == "illegal_move"

    # The race was unharmed: both racers play on, the board where it was.
    [ack] = await play(alice, race_id, ["deal"], first_seq=4)
    assert ack.ply == 1
    [ack] = await play(bob, race_id, ["deal"])
    assert ack.ply == 0
    await bob.expect(
        Progress, lambda m: m.progress.player_id == alice.player_id and m.progress.moves == 2
    )
    await sloppy.send(Ping(nonce=5))
    assert (await sloppy.expect(Pong)).nonce == 5
    await spectator.send(ListRaces())
    assert [r.race_id for r in (await spectator.expect(RaceList)).races] == [race_id]


async def test_a_rejected_move_changes_nothing(server: App, client: ClientFactory) -> None:
    alice, bob = await client("alice"), await client("bob")
    race_id = await start_race(alice, [bob])
    await alice.send(MakeMove(race_id=race_id, seq=1, move="t0-t1"))
    await alice.expect(MoveRejected)
    [ack] = await play(alice, race_id, ["deal"], first_seq=2)
    assert ack.ply == 0
    progress = await bob.expect(
        Progress, lambda m: m.progress.player_id == alice.player_id and m.progress.moves > 0
    )
    assert progress.progress.moves == 1


async def test_an_invite_code_nobody_can_type_or_see_makes_no_race(
    server: App, client: ClientFactory
) -> None:
    """Blanks, characters drawn as nothing, zero-width and control characters, a direction
    override: refused as a tournament's name with them is, and the creator may go on."""
    alice = await client("alice")
    for code in ["\u200b", "\u3164\u3164", "\u2800", "\x00\x01", "\u202eedoc"]:
        frame = {"type": "create_race", "game": "klondike", "seats": 2, "time_limit_s": 600}
        await alice.send_raw(encode_raw({**frame, "invite_code": code}))
        error = await alice.expect(Error)
        assert (error.code, error.request) == ("invalid_message", "create_race"), error
        assert error.message.startswith("create_race.invite_code: "), error
    await alice.send(ListRaces())
    assert (await alice.expect(RaceList)).races == []
    race_id = await create_race(alice, invite_code="friday-7")
    bob = await client("bob")
    await bob.send(JoinRace(race_id=race_id, invite_code="friday-7"))
    await bob.expect(RaceUpdate, lambda m: m.race_id == race_id and len(m.race.racers) == 2)


async def test_a_validator_s_refusal_reaches_the_client_in_its_own_words(
    server: App, client: ClientFactory
) -> None:
    """A field a validator refuses (a key without a name, an invite code nobody can see) was
    answered with pydantic's 'Value error, ' before the validator's words."""
    anonymous = await client()
    await anonymous.send_raw(encode_raw({"type": "hello", "protocol": 1, "key": "k" * 24}))
    error = await anonymous.expect(Error)
    assert error.message == "hello: a key goes with a name and no token (it registers that name)"
    alice = await client("alice")
    frame = {"type": "create_race", "game": "klondike", "seats": 2, "time_limit_s": 600}
    await alice.send_raw(encode_raw({**frame, "invite_code": "\u200b"}))
    error = await alice.expect(Error)
    assert error.message.startswith("create_race.invite_code: non-printable character U+200B")
