"""The session and its requests, against a real server on loopback.

`Session.running` starts a session; a request (`Session.request`, or `request_reading` for a
reader with no pump) is settled by the first message its predicate accepts or by the server's
error for it (`answer_to`). Where a test needs other messages to reach the session while its
request waits, it holds the pump (`pumping`) while it sends what the server answers first: the
server handles one connection's messages in order and answers them in order, so the session
then reads those answers, in that order, before the request's own.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from solrace.client.connection import Connection
from solrace.client.link_status import Incoming, LinkStatus, StatusChange
from solrace.client.session import (
    REQUEST_TIMEOUT_S,
    LinkClosedError,
    RequestError,
    Session,
    answer_to,
    read_until,
    reader_of,
    request_reading,
)
from solrace.server.app import App
from solrace.server.protocol.errors import ErrorCode
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import (
    ClientMessage,
    CreateRace,
    Error,
    JoinRace,
    LeaveRace,
    ListRaces,
    Ping,
    Pong,
    RaceList,
    RaceStarted,
    RaceUpdate,
    Resign,
    ServerMessage,
)
from solrace.tasks import cancel_and_wait
from tests.waiting import eventually, eventually_async

from .conftest import server_settings

#: Pings of the tests: far from the connection's own nonces (1, 2, ...).
NONCES = itertools.count(1_000_000)
#: A race id no server holds.
NO_RACE = RaceId("rnope")


def pump_tasks() -> list[asyncio.Task[object]]:
    return [t for t in asyncio.all_tasks() if t.get_name() == "solrace-pump"]


def never(_: ServerMessage) -> bool:
    return False


def pong_of(nonce: int) -> Callable[[ServerMessage], bool]:
    return lambda m: isinstance(m, Pong) and m.nonce == nonce


def seated(race_id: RaceId, player: PlayerId | None) -> Callable[[ServerMessage], bool]:
    """News of `race_id` with `player` among its racers."""
    return lambda m: (
        isinstance(m, RaceUpdate)
        and m.race_id == race_id
        and any(r.player_id == player for r in m.race.racers)
    )


@asynccontextmanager
async def connected(url: str, name: str) -> AsyncIterator[Session]:
    """A session of `name`, its welcome applied, with no pump (see `pumping`); closed after."""
    conn = Connection(url, name=name, backoff_s=(0.05, 0.5))
    await conn.connect()
    try:
        session = Session(conn)
        conn.take_welcome()
        yield session
    finally:
        await conn.close()


@asynccontextmanager
async def pumping(session: Session) -> AsyncIterator[asyncio.Task[None]]:
    """`session`'s pump, running for the block; what comes meanwhile waits in the queue."""
    pump = asyncio.create_task(session.pump(), name="test-pump")
    try:
        yield pump
    finally:
        await cancel_and_wait([pump])


@asynccontextmanager
async def alice_bob_and_carol(url: str) -> AsyncIterator[tuple[Session, Session, Session]]:
    """Three players connected to `url`, each pumped for the block."""
    async with (
        connected(url, "alice") as alice,
        connected(url, "bob") as bob,
        connected(url, "carol") as carol,
        pumping(alice),
        pumping(bob),
        pumping(carol),
    ):
        yield alice, bob, carol


async def race_both_resigned(alice: Session, bob: Session) -> RaceId:
    """A 2-seat race of Bob's that Alice joins, both resigning once it starts: over."""
    race_id = await bob.create_race("klondike", 2)
    await alice.join_race(race_id)
    await alice.wait_for(lambda m: isinstance(m, RaceStarted))
    await alice.resign(race_id)
    await bob.resign(race_id)
    return race_id


class Seen:
    """A listener: what `session` dispatched, in order; which of it settled a request or a
    wait (`was_awaited`, asked while it is dispatched); and any settling message still said
    awaited while a later one is dispatched (`stale`)."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.dispatched: list[Incoming] = []
        self.awaited: list[ServerMessage] = []
        self.stale: list[ServerMessage] = []
        session.listeners.append(self)

    def __call__(self, incoming: Incoming) -> None:
        self.stale += [m for m in self.awaited if self.session.was_awaited(m)]
        self.dispatched.append(incoming)
        if not isinstance(incoming, StatusChange) and self.session.was_awaited(incoming):
            self.awaited.append(incoming)

    def messages(self) -> list[ServerMessage]:
        return [m for m in self.dispatched if not isinstance(m, StatusChange)]

    def errors(self) -> list[Error]:
        return [m for m in self.dispatched if isinstance(m, Error)]

    def updates(self) -> list[RaceUpdate]:
        return [m for m in self.dispatched if isinstance(m, RaceUpdate)]

    def statuses(self) -> list[LinkStatus]:
        return [m.status for m in self.dispatched if isinstance(m, StatusChange)]


class Reader:
    """A reader with no pump, as a bot's: the next message on `conn` within the seconds it is
    given (None if none came, or on a link change), kept in `read`; the seconds in `waits`."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.read: list[ServerMessage] = []
        self.waits: list[float] = []

    async def __call__(self, wait_s: float | None) -> ServerMessage | None:
        assert wait_s is not None, "these tests read with a time limit"
        self.waits.append(wait_s)
        incoming = await self.conn.recv_within(wait_s)
        if incoming is None or isinstance(incoming, StatusChange):
            return None
        self.read.append(incoming)
        return incoming


# --- start-up -------------------------------------------------------------------------------


async def test_running_applies_the_welcome_and_reaps_its_pump(server_url: str) -> None:
    conn = Connection(server_url, name="ann")
    welcome = await conn.connect()
    try:
        async with Session.running(conn) as session:
            assert session.me == welcome.player_id and session.state.name == "ann"
            [pump] = pump_tasks()
            assert await session.list_races() == []  # answers arrive through the pump
        assert pump.cancelled()  # cancelled and awaited: done when the block ends
        assert not pump_tasks()
    finally:
        await conn.close()


async def test_the_welcome_is_taken_once(server_url: str) -> None:
    conn = Connection(server_url, name="bob")
    welcome = await conn.connect()
    try:
        assert conn.take_welcome() == welcome
        with pytest.raises(RuntimeError, match="welcome is not next"):
            conn.take_welcome()
    finally:
        await conn.close()


# --- what settles a request -----------------------------------------------------------------


def refusal(request: str | None, race_id: str | None) -> Error:
    return Error(
        code="unknown_race",
        message="no such race",
        request=request,
        race_id=None if race_id is None else RaceId(race_id),
    )


@pytest.mark.parametrize(
    ("sent", "reply", "settles"),
    [
        (JoinRace(race_id="r1"), refusal("join_race", "r1"), True),
        (JoinRace(race_id="r1"), refusal("join_race", None), True),  # names no race
        (JoinRace(race_id="r1"), refusal("join_race", "r2"), False),  # another race's
        (JoinRace(race_id="r1"), refusal("leave_race", "r1"), False),  # another request's
        (JoinRace(race_id="r1"), refusal(None, "r1"), False),  # no request's
        (CreateRace(game="klondike", seats=2, time_limit_s=60), refusal("create_race", "r2"), True),
        (ListRaces(), RaceList(races=[]), False),  # not an error: `until` says
    ],
)
def test_answer_to_takes_the_error_for_the_request_and_its_race(
    sent: ClientMessage, reply: ServerMessage, settles: bool
) -> None:
    assert answer_to(sent, never)(reply) is settles


def test_answer_to_asks_until_about_everything_but_the_requests_error() -> None:
    asked: list[ServerMessage] = []

    def until(message: ServerMessage) -> bool:
        asked.append(message)
        return True

    settles = answer_to(JoinRace(race_id="r1"), until)
    others: list[ServerMessage] = [
        refusal("leave_race", "r1"),
        refusal(None, None),
        RaceList(races=[]),
    ]
    assert [settles(m) for m in others] == [True, True, True]
    assert settles(refusal("join_race", "r1"))
    assert asked == others


RefusedRequest = Callable[[Session, RaceId], Awaitable[object]]


@pytest.mark.parametrize(
    ("refused", "code"),
    [
        (lambda s, _: s.join_race(NO_RACE), ErrorCode.UNKNOWN_RACE),
        (lambda s, _: s.create_race("klondike", 99), ErrorCode.INVALID_SETTINGS),
        (lambda s, other: s.leave_race(other), ErrorCode.NOT_IN_RACE),
        (lambda s, other: s.start_race(other), ErrorCode.NOT_IN_RACE),
        (lambda s, _: s.watch(NO_RACE), ErrorCode.UNKNOWN_RACE),
    ],
    ids=["join", "create", "leave", "start", "watch"],
)
async def test_a_refused_request_raises_the_servers_code(
    server_url: str, refused: RefusedRequest, code: ErrorCode
) -> None:
    async with (
        connected(server_url, "alice") as alice,
        connected(server_url, "bob") as bob,
        pumping(alice),
        pumping(bob),
    ):
        others = await bob.create_race("klondike", 3)
        seen = Seen(alice)
        with pytest.raises(RequestError) as raised:
            await refused(alice, others)
        [error] = seen.errors()
        assert raised.value.code == error.code == code.value
        assert raised.value.message == error.message
        assert str(raised.value) == f"{error.message} ({error.code})"
        assert seen.awaited == [error]
        assert await alice.list_races()  # the session goes on


async def test_join_race_is_answered_by_its_own_seat_not_by_news_before_it(
    server_url: str,
) -> None:
    """What comes before the join's answer: the refusal of a join of another race, a seat
    taken in another race, the race's own news without this player (it left): none of them
    settles the join."""
    async with connected(server_url, "alice") as alice, connected(server_url, "bob") as bob:
        async with pumping(alice), pumping(bob):
            first = await bob.create_race("klondike", 3)
            second = await bob.create_race("klondike", 3)
            assert await alice.join_race(first)
        seen = Seen(alice)
        await alice.conn.send(JoinRace(race_id=NO_RACE))
        await alice.conn.send(JoinRace(race_id=second))
        await alice.conn.send(LeaveRace(race_id=first))
        joining = asyncio.create_task(alice.join_race(first))  # its first step runs first
        async with pumping(alice):
            assert await joining is True
        news = [(u.race_id, seated(u.race_id, alice.me)(u)) for u in seen.updates()]
        assert news == [(second, True), (first, False), (first, True)]
        [refused] = seen.errors()
        assert refused.request == "join_race" and refused.race_id == NO_RACE
        assert seen.awaited == [seen.updates()[-1]]


async def test_joining_a_race_sat_in_already_resumes_it(server_url: str) -> None:
    async with (
        connected(server_url, "alice") as alice,
        connected(server_url, "bob") as bob,
        pumping(alice),
        pumping(bob),
    ):
        race_id = await bob.create_race("klondike", 3)
        assert await alice.join_race(race_id) is True
        seen = Seen(alice)
        assert await alice.join_race(race_id) is False  # already_joined: resumed instead
        assert [e.code for e in seen.errors()] == [ErrorCode.ALREADY_JOINED.value]
        info = alice.state.race(race_id).info
        assert info is not None and {r.player_id for r in info.racers} == {alice.me, bob.me}


async def test_a_race_past_its_start_is_refused_with_how_to_watch_or_replay_it(
    server_url: str,
) -> None:
    """`solrace play --race R` (or `join R`, or the lobby's Join) of a race under way said
    only `the race is countdown (wrong_status)`."""
    async with alice_bob_and_carol(server_url) as (alice, bob, carol):
        race_id = await bob.create_race("klondike", 2)
        await alice.join_race(race_id)  # the race is full: its countdown begins
        with pytest.raises(RequestError) as refused:
            await carol.join_race(race_id)
    assert refused.value.code == ErrorCode.WRONG_STATUS
    where = f"{race_id} --server {server_url}"
    assert refused.value.message.endswith(
        f": only a race not started yet can be joined (solrace watch {where} while it runs, "
        f"solrace replay {where} once it has finished)"
    ), refused.value.message


async def test_a_race_just_over_is_refused_with_the_command_that_replays_it(
    server_url: str,
) -> None:
    """A race over but still in the server's memory: joining it said 'solrace watch R while it
    runs', of a race that no longer runs."""
    async with alice_bob_and_carol(server_url) as (alice, bob, carol):
        race_id = await race_both_resigned(alice, bob)
        await eventually(
            lambda: alice.state.race(race_id).status == "finished", what="the race over"
        )
        with pytest.raises(RequestError) as refused:
            await carol.join_race(race_id)
    assert refused.value.code == ErrorCode.WRONG_STATUS
    assert refused.value.message == (
        f"the race is over: 'solrace replay {race_id} --server {server_url}' shows it"
    )


async def test_a_race_finished_long_ago_is_refused_with_the_command_that_replays_it(
    tmp_path: Path,
) -> None:
    """A race out of the server's memory (finished more than `finished_kept_s` ago) was
    refused to `solrace play --race R` (or `join R`, `bot --race R`) with the protocol's
    words, 'its replay is there to fetch (get_replay)': a request, not a command."""
    app = App(server_settings(tmp_path / "server", finished_kept_s=0.0))
    await app.start()
    url = f"ws://127.0.0.1:{app.port}"
    try:
        async with alice_bob_and_carol(url) as (alice, bob, carol):
            race_id = await race_both_resigned(alice, bob)
            refusals: list[RequestError] = []

            async def forgotten() -> bool:
                try:
                    await carol.join_race(race_id)
                except RequestError as exc:
                    refusals.append(exc)
                    return exc.code == ErrorCode.UNKNOWN_RACE
                raise AssertionError("a finished race was joined")

            await eventually_async(forgotten, what="the finished race out of memory")
    finally:
        await app.stop()
    assert refusals[-1].message == (
        f"race {race_id!r} has finished: 'solrace replay {race_id} --server {url}' shows it"
    )


async def test_create_race_is_answered_by_the_new_race_not_by_other_news(
    server_url: str,
) -> None:
    """While a create waits: news of an open race this player created before (someone joined
    it), of a race it joined but did not create, another request's refusal and a pong. The
    answer is the news of the race the create made."""
    async with connected(server_url, "alice") as alice, connected(server_url, "bob") as bob:
        async with pumping(alice):
            earlier = await alice.create_race("klondike", 3)
        async with pumping(bob):
            others = await bob.create_race("klondike", 3)
            # Bob has his answer: alice's news of it was sent before (and waits for her pump).
            assert await bob.join_race(earlier)
        seen = Seen(alice)
        await alice.conn.send(JoinRace(race_id=others))  # unknown to alice until its answer
        await alice.conn.send(Resign(race_id=NO_RACE))
        await alice.conn.send(Ping(nonce=next(NONCES)))
        creating = asyncio.create_task(alice.create_race("klondike", 2))
        async with pumping(alice):
            created = await creating
        assert created not in {earlier, others}
        assert [(u.race_id, u.race.creator) for u in seen.updates()] == [
            (earlier, alice.me),
            (others, bob.me),
            (created, alice.me),
        ]
        assert [e.request for e in seen.errors()] == ["resign"]
        assert any(isinstance(m, Pong) for m in seen.messages())
        assert seen.awaited == [seen.updates()[-1]]


async def test_leave_race_is_answered_by_leaving_this_race_not_another(server_url: str) -> None:
    async with connected(server_url, "alice") as alice, connected(server_url, "bob") as bob:
        async with pumping(alice), pumping(bob):
            first = await bob.create_race("klondike", 3)
            second = await bob.create_race("klondike", 3)
            assert await alice.join_race(first)
            assert await alice.join_race(second)
        seen = Seen(alice)
        await alice.conn.send(LeaveRace(race_id=second))
        await alice.conn.send(LeaveRace(race_id=NO_RACE))  # refused: not this leave's error
        leaving = asyncio.create_task(alice.leave_race(first))
        async with pumping(alice):
            await leaving
        news = [(u.race_id, seated(u.race_id, alice.me)(u)) for u in seen.updates()]
        assert news == [(second, False), (first, False)]
        assert [e.race_id for e in seen.errors()] == [NO_RACE]
        assert seen.awaited == [seen.updates()[-1]]


async def test_was_awaited_is_said_only_of_the_settling_message_while_it_is_dispatched(
    server_url: str,
) -> None:
    async with connected(server_url, "alice") as alice, pumping(alice):
        seen = Seen(alice)
        with pytest.raises(RequestError):
            await alice.join_race(RaceId("rgone"))  # settled by its refusal
        await alice.conn.send(JoinRace(race_id=NO_RACE))  # refused, and nobody waits for it
        nonce = next(NONCES)
        expected = alice.expect(pong_of(nonce))  # a wait, not a request
        await alice.conn.send(Ping(nonce=nonce))
        pong = await expected
        unasked = next(NONCES)
        await alice.conn.send(Ping(nonce=unasked))
        await eventually(lambda: any(pong_of(unasked)(m) for m in seen.messages()), what="pong")
        answer, unsolicited = seen.errors()
        assert answer.race_id == "rgone" and unsolicited.race_id == NO_RACE
        assert seen.awaited == [answer, pong]
        assert seen.stale == []  # each was awaited only while it was dispatched


# --- the link -------------------------------------------------------------------------------


async def test_a_link_closed_for_good_fails_every_waiter_and_every_later_request(
    server_url: str,
) -> None:
    async with connected(server_url, "alice") as alice, pumping(alice) as pump:
        seen = Seen(alice)
        asked = asyncio.create_task(alice.request(ListRaces(), never))
        waited = asyncio.create_task(alice.wait_for(never))
        expected = alice.expect(never)
        await eventually(
            lambda: any(isinstance(m, RaceList) for m in seen.messages()),
            what="the list, which settles nothing: the request waits",
        )
        # The same player connects again elsewhere: the server closes this link (4003).
        async with Connection(server_url, token=alice.conn.token):
            for waiter in (asked, waited, expected):
                with pytest.raises(LinkClosedError, match="4003") as closed:
                    async with asyncio.timeout(10):
                        await waiter
                assert closed.value.code == "connection_closed"
            assert seen.statuses() == [LinkStatus.CLOSED]
            assert alice.link is LinkStatus.CLOSED
            assert alice.closed is not None and "(4003" in alice.closed
            await eventually(pump.done, what="the pump's end")
            assert not pump.cancelled()  # it returned on its own

            # Nothing sent now can be answered: requests and waits fail at once.
            with pytest.raises(LinkClosedError):
                await alice.request(ListRaces(), lambda m: isinstance(m, RaceList), 1)
            with pytest.raises(LinkClosedError):
                await alice.list_races()
            with pytest.raises(LinkClosedError):
                await alice.wait_for(never, 1)
            with pytest.raises(LinkClosedError):
                alice.expect(never)


async def test_a_link_lost_and_back_fails_no_waiter(server_url: str) -> None:
    async with connected(server_url, "alice") as alice, pumping(alice):
        seen = Seen(alice)
        nonce = next(NONCES)
        expected = alice.expect(pong_of(nonce))
        ws = alice.conn._ws
        assert ws is not None
        await ws.close(code=1011)  # the link drops, as far as this client can tell
        await eventually(lambda: LinkStatus.RECONNECTING in seen.statuses(), what="reconnecting")
        assert not expected.done()
        await alice.conn.send(Ping(nonce=nonce))  # sent once the link is back
        async with asyncio.timeout(10):
            pong = await expected
        assert isinstance(pong, Pong) and pong.nonce == nonce
        assert LinkStatus.CONNECTED in seen.statuses()
        assert alice.closed is None


# --- timeouts -------------------------------------------------------------------------------


def test_requests_wait_request_timeout_s_unless_told_otherwise() -> None:
    for waits in (Session.request, Session.wait_for, read_until, request_reading):
        assert inspect.signature(waits).parameters["timeout_s"].default == REQUEST_TIMEOUT_S


async def test_a_request_timed_out_leaves_its_late_answer_to_nobody(server_url: str) -> None:
    async with connected(server_url, "alice") as alice:
        seen = Seen(alice)
        with pytest.raises(TimeoutError):  # no pump: the answer is not read in time
            await alice.request(ListRaces(), lambda m: isinstance(m, RaceList), 0.05)
        async with pumping(alice) as pump:
            await eventually(
                lambda: pump.done() or bool(seen.messages()), what="the late answer read"
            )
            assert not pump.done()  # the answer to a waiter gone did not break the pump
            [late] = seen.messages()
            assert isinstance(late, RaceList)
            assert seen.awaited == []
            nonce = next(NONCES)
            await alice.request(Ping(nonce=nonce), pong_of(nonce), 10)


# --- a reader with no pump ------------------------------------------------------------------


async def test_request_reading_is_answered_past_what_the_reader_handles_meanwhile(
    server_url: str,
) -> None:
    async with (
        connected(server_url, "bob") as bob,
        pumping(bob),
        connected(server_url, "alice") as alice,
    ):
        race_id = await bob.create_race("klondike", 3)
        reader = Reader(alice.conn)
        await alice.conn.send(JoinRace(race_id=NO_RACE))  # another race's refusal
        await alice.conn.send(Ping(nonce=next(NONCES)))
        join = JoinRace(race_id=race_id)
        reply = await request_reading(alice.conn, reader, join, seated(race_id, alice.me))
        assert isinstance(reply, RaceUpdate) and reply.race_id == race_id
        assert reader.read[-1] is reply  # read, and then asked
        refused, pong = reader.read[:2]
        assert isinstance(refused, Error) and refused.race_id == NO_RACE
        assert isinstance(pong, Pong)


async def test_request_reading_raises_the_requests_error_that_read_until_returns(
    server_url: str,
) -> None:
    async with connected(server_url, "alice") as alice:
        reader = Reader(alice.conn)
        with pytest.raises(RequestError) as raised:
            await request_reading(alice.conn, reader, JoinRace(race_id=NO_RACE), never)
        assert raised.value.code == ErrorCode.UNKNOWN_RACE.value
        create = CreateRace(game="klondike", seats=99, time_limit_s=600)
        await alice.conn.send(create)
        reply = await read_until(reader, answer_to(create, never))
        assert isinstance(reply, Error) and reply.code == ErrorCode.INVALID_SETTINGS.value


async def test_read_until_gives_up_after_its_timeout_giving_the_reader_the_time_left(
    server_url: str,
) -> None:
    async with connected(server_url, "alice") as alice:
        reader = Reader(alice.conn)
        await alice.conn.send(Ping(nonce=next(NONCES)))  # read meanwhile, settles nothing
        loop = asyncio.get_running_loop()
        began = loop.time()
        with pytest.raises(TimeoutError):
            await read_until(reader, never, 0.3)
        assert loop.time() - began >= 0.3
        assert [type(m) for m in reader.read] == [Pong]
        assert len(reader.waits) >= 2 and reader.waits[0] <= 0.3
        assert all(a > b > 0 for a, b in itertools.pairwise(reader.waits))

        with pytest.raises(TimeoutError):
            await request_reading(alice.conn, reader, ListRaces(), never, 0.2)
        assert isinstance(reader.read[-1], RaceList)  # handled by the reader, no answer


async def test_reader_of_reads_past_a_lost_link_and_raises_once_it_is_closed_for_good(
    server_url: str,
) -> None:
    """A one-shot command's reader: a link lost and back is nothing to read (`read_until`
    with no time limit waits past it for its message); a link closed for good ends the wait
    with `LinkClosedError`, as the session's requests end."""
    async with connected(server_url, "alice") as alice:
        read = reader_of(alice.conn)
        ws = alice.conn._ws
        assert ws is not None
        await ws.close(code=1011)  # the link drops, as far as this client can tell
        nonce = next(NONCES)
        await alice.conn.send(Ping(nonce=nonce))  # sent once the link is back
        async with asyncio.timeout(10):
            pong = await read_until(read, pong_of(nonce), None)
        assert isinstance(pong, Pong) and pong.nonce == nonce
        # The same player connects again elsewhere: the server closes this link (4003).
        async with Connection(server_url, token=alice.conn.token):
            with pytest.raises(LinkClosedError, match="4003") as closed:
                async with asyncio.timeout(10):
                    await read_until(read, never, None)
            assert closed.value.code == "connection_closed"
