"""A new name with a registration key (`Hello.key`): the welcome with its token may be lost (a
crash just after the name was stored, a dropped link); the same name and key get the same
player back, and nobody without the key can."""

from __future__ import annotations

import asyncio
import secrets

from solrace.server.protocol.codec import encode_raw
from solrace.server.protocol.messages import PROTOCOL_VERSION, Error, Hello, Welcome
from tests.integration.conftest import ClientFactory, ServerFactory
from tests.integration.wsclient import Client


async def registered(client: Client, name: str, key: str | None) -> Welcome | Error:
    """The answer to a hello with `name` (and `key`): a welcome or the error."""
    await client.send(Hello(protocol=PROTOCOL_VERSION, name=name, key=key))
    return await client.expect((Welcome, Error))  # type: ignore[arg-type]


async def test_the_same_name_and_key_get_the_same_player_after_a_restart(
    start_server: ServerFactory,
) -> None:
    key = secrets.token_urlsafe(24)
    server = await start_server()
    url = f"ws://127.0.0.1:{server.port}"
    lost = await Client.open(url)
    first = await registered(lost, "alice", key)
    assert isinstance(first, Welcome) and first.player_id is not None
    await lost.close()  # as if its welcome never arrived
    await server.stop()

    server = await start_server()
    url = f"ws://127.0.0.1:{server.port}"
    again = await Client.open(url)
    answer = await registered(again, "alice", key)
    assert isinstance(answer, Welcome)
    assert answer.player_id == first.player_id and answer.name == "alice"
    assert answer.token is not None
    # The token it got back works as the first one would have.
    returning = await Client.open(url)
    assert (await returning.hello(token=answer.token)).player_id == first.player_id
    for each in (again, returning):
        await each.close()


async def test_without_the_key_the_name_stays_taken(client: ClientFactory) -> None:
    key = secrets.token_urlsafe(24)
    owner = await client()
    assert isinstance(await registered(owner, "alice", key), Welcome)
    for name, other_key in [
        ("alice", None),
        ("alice", secrets.token_urlsafe(24)),
        ("ALICE", secrets.token_urlsafe(24)),
    ]:
        stranger = await client()
        refusal = await registered(stranger, name, other_key)
        assert isinstance(refusal, Error) and refusal.code == "name_taken"
    # The key registers one name: another name with it is refused, and alice is unharmed.
    greedy = await client()
    refusal = await registered(greedy, "alice2", key)
    assert isinstance(refusal, Error) and refusal.code == "name_mismatch"
    assert "'alice'" in refusal.message  # not 'alice2 belongs to someone else': it is free
    assert isinstance(await registered(await client(), "alice2", None), Welcome)
    case_changed = await client()
    answer = await registered(case_changed, "Alice", key)
    assert isinstance(answer, Welcome) and answer.name == "alice"


async def test_one_key_with_two_names_at_once_registers_one_and_says_so_to_the_other(
    client: ClientFactory,
) -> None:
    """Two hellos at the same time, one key, two free names: one is welcomed, the other is
    told the key registered the first name (it was told that its free name 'belongs to
    someone else' when its insert met the player the first had just made)."""
    for _ in range(12):
        key = secrets.token_urlsafe(24)
        first, second = await client(), await client()
        names = [f"x{secrets.token_hex(4)}", f"y{secrets.token_hex(4)}"]
        answers = await asyncio.gather(
            registered(first, names[0], key), registered(second, names[1], key)
        )
        welcomed = [a for a in answers if isinstance(a, Welcome)]
        refused = [a for a in answers if isinstance(a, Error)]
        assert len(welcomed) == 1 and len(refused) == 1, answers
        assert refused[0].code == "name_mismatch"
        assert repr(welcomed[0].name) in refused[0].message


async def test_a_key_without_a_name_or_with_a_token_is_refused(client: ClientFactory) -> None:
    sloppy = await client()
    key = "k" * 16
    for frame in [
        {"type": "hello", "protocol": PROTOCOL_VERSION, "key": key},
        {"type": "hello", "protocol": PROTOCOL_VERSION, "name": "x", "token": "t", "key": key},
        {"type": "hello", "protocol": PROTOCOL_VERSION, "name": "x", "key": "short"},
    ]:
        await sloppy.send_raw(encode_raw(frame))
        error = await sloppy.expect(Error)
        assert (error.code, error.request) == ("invalid_message", "hello")
    # Nothing was registered or identified by those: the connection's hello is still to come.
    assert isinstance(await registered(sloppy, "carol", key), Welcome)


async def test_new_names_from_one_address_have_a_budget(start_server: ServerFactory) -> None:
    """A name is kept for good: one address may not make them in a loop. Past its budget a
    new name is refused; a token, or a name's own key, still works."""
    server = await start_server(register_burst=2, register_per_s=0.001)
    url = f"ws://127.0.0.1:{server.port}"
    key = secrets.token_urlsafe(24)
    first, second, third = [await Client.open(url) for _ in range(3)]
    welcome = await registered(first, "ann", key)
    assert isinstance(welcome, Welcome) and welcome.token is not None
    assert isinstance(await registered(second, "bob", None), Welcome)
    refusal = await registered(third, "cid", None)
    assert isinstance(refusal, Error) and refusal.code == "not_allowed"
    again = await registered(third, "ann", key)  # the same connection may say hello again
    assert isinstance(again, Welcome) and again.player_id == welcome.player_id
    returning = await Client.open(url)
    assert (await returning.hello(token=welcome.token)).player_id == welcome.player_id
    for each in (first, second, third, returning):
        await each.close()


async def test_new_names_have_a_budget_on_the_node_even_behind_a_proxy(
    start_server: ServerFactory,
) -> None:
    """Behind a proxy every client has one address, so no address has a budget of its own;
    the node's budget still bounds the names made, and says so."""
    server = await start_server(
        max_connections_per_address=0, register_node_burst=2, register_node_per_s=0.001
    )
    url = f"ws://127.0.0.1:{server.port}"
    first, second, third = [await Client.open(url) for _ in range(3)]
    welcome = await registered(first, "ann", None)
    assert isinstance(welcome, Welcome) and welcome.token is not None
    assert isinstance(await registered(second, "bob", None), Welcome)
    refusal = await registered(third, "cid", None)
    assert isinstance(refusal, Error) and refusal.code == "not_allowed"
    assert "too many new names on this server" in refusal.message
    assert (await third.hello(token=welcome.token)).player_id == welcome.player_id
    for each in (first, second, third):
        await each.close()


async def test_hellos_refused_a_name_someone_has_do_not_use_up_the_budget_of_new_names(
    start_server: ServerFactory,
) -> None:
    """A hello for a name someone else owns is refused and stores nothing: it spent a credit
    of the node's budget of new names all the same, so a few of them locked every newcomer
    out (a fuzzing audit: five refusals, then `too many new names on this server`)."""
    server = await start_server(
        max_connections_per_address=0, register_node_burst=2, register_node_per_s=0.001
    )
    url = f"ws://127.0.0.1:{server.port}"
    owner = await Client.open(url)
    assert isinstance(await registered(owner, "ann", None), Welcome)
    others = [await Client.open(url) for _ in range(4)]
    for other in others:
        refusal = await registered(other, "ann", None)
        assert isinstance(refusal, Error) and refusal.code == "name_taken", refusal
    newcomer = await Client.open(url)
    assert isinstance(await registered(newcomer, "bob", None), Welcome)
    for each in (owner, *others, newcomer):
        await each.close()


async def test_a_new_name_shaped_like_a_player_id_is_refused_and_the_hello_may_come_again(
    client: ClientFactory,
) -> None:
    newcomer = await client()
    for key in (None, secrets.token_urlsafe(24)):
        refusal = await registered(newcomer, "pa6728d3b098701af", key)
        assert isinstance(refusal, Error), refusal
        assert (refusal.code, refusal.request) == ("invalid_message", "hello")
        assert "shaped like a player id" in refusal.message
    welcome = await registered(newcomer, "pat", None)
    assert isinstance(welcome, Welcome) and welcome.name == "pat"
