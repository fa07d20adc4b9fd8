"""Bot players: the bots of `solrace bot` (run by `bot_cli.py`), and the opponent `solrace play`
seats on its embedded server.

Each bot is one `Connection` and one `ClientState`; it plays its own board with a strategy
(`strategy.py`), one move at a time (the next move waits for the last one's ack), `delay_s`
apart, and never faster than the server's rate budget allows (`pacing.py`: the budget its
welcome says), so even `--delay 0` is not closed for flooding (1008). Many bots share one
process and event loop.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Final, Literal

from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.errors import ErrorCode
from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.messages import (
    ClientMessage,
    CreateRace,
    Error,
    JoinRace,
    LeaveRace,
    ListRaces,
    MoveAck,
    MoveRejected,
    RaceInfo,
    RaceList,
    RaceSnapshot,
    RaceUpdate,
    Resign,
    ServerMessage,
    StartRace,
    Sync,
    Welcome,
)
from solrace.server.protocol.vocab import RacerStateName

from .bot_identities import HeldName, bots_file
from .connect_failures import ConnectionFailedError
from .connection import Connection
from .link_status import LinkStatus, StatusChange
from .pacing import RateBudget
from .refusals import join_refusal_message, refusal_text, token_refused_text
from .session import (
    REQUEST_TIMEOUT_S,
    BoardSyncs,
    Predicate,
    RequestError,
    answer_to,
    client_message,
    join_or_resume,
    read_until,
    request_reading,
)
from .state import UNKNOWN, ClientState, RaceState
from .strategy import Strategy

#: Seconds before a resign or a move the server could not store is sent again.
RESIGN_RETRY_S = 1.0
#: Why a bot stops that the server may say first: a board the bot's own move left stuck, or
#: won, puts the racer out at once (the server's state can come before the bot asks its
#: strategy, or the race's end, if it was the last one in), as the strategy words it.
OUT_BY_ITSELF: Final[dict[str, str]] = {
    "stuck": "stuck",
    "finished": "every card on the foundations",
}


class BotError(Exception):
    """A bot could not join or create its race."""


class BotRefusedError(BotError):
    """The server refused a bot's request (`code` from the protocol's error table)."""

    def __init__(self, name: str, code: str, message: str) -> None:
        super().__init__(f"{name}: {refusal_text(code, message)}")
        self.code = code


@dataclass(slots=True)
class BotResult:
    name: str
    #: The bot's race; empty if it had none.
    race_id: RaceId
    #: The bot's state in its race; `UNKNOWN` if it holds no seat there.
    state: RacerStateName | Literal["unknown"]
    on_foundations: int
    total: int
    moves: int
    reason: str


class Bot:
    """One bot player on one connection."""

    def __init__(
        self,
        url: str,
        name: str,
        strategy: Strategy,
        *,
        delay_s: float = 0.25,
        connection: Connection | None = None,
        resign_when_alone: bool = False,
        budget: RateBudget | None = None,
        held: HeldName | None = None,
    ) -> None:
        self.url = url
        #: The bot name held for this program, with the identity kept for it (`bots.json`):
        #: none, and the bot is a new player each run.
        self.held = held
        #: Moves wait for a credit of this bucket (the server's rate budget, with a reserve:
        #: the defaults until the welcome says the server's own, unless one is given).
        self.budget = budget or RateBudget.for_server()
        self._budget_given = budget is not None
        #: Stop once every other racer is out (an opponent seated for one person: a bot racing
        #: on alone would only keep that person waiting for the result).
        self.resign_when_alone = resign_when_alone
        self.strategy = strategy
        self.delay_s = delay_s
        saved = held.saved() if held is not None and connection is None else None
        #: The name asked for (`--name`, numbered, or the default).
        self.asked = name
        #: The name the bot plays as (a kept identity's, or one with a suffix once taken).
        self.name = saved.name if saved is not None else name
        if connection is not None:
            self.conn = connection
        elif saved is not None and saved.token is not None:
            self.conn = Connection(url, name=saved.name, token=saved.token)
        else:
            # A key of its own: a reconnect before the welcome came gets the same player back
            # (and so does the next run, with a held name: the key is kept before it is sent).
            key = saved.key if saved is not None else None
            self.conn = Connection(url, name=self.name, key=key or self._new_key(self.name))
        #: The name whose kept token the server refused in `connect`, with its refusal.
        self.refused_token: tuple[str, ConnectionFailedError] | None = None
        self.state = ClientState()
        self.race_id: RaceId | None = None
        self.reason = ""
        self._pending: int | None = None
        #: What settles the last `create_race` sent (None: none sent, see `create_sent`).
        self._create_answer: Predicate | None = None
        #: The races this bot knew when its last create went out: none of them is its answer
        #: (a bot plays races back to back, and news of one it created before may come first).
        self._known_at_create: frozenset[RaceId] = frozenset()
        self._resigned = False
        #: The link (`reconnects` then) this bot's resign went out on; None: none sent.
        self._resign_link: int | None = None
        #: When to send a resign again that the server could not store (`unavailable`).
        self._resign_retry_at: float | None = None
        self._rejections = 0
        #: The race the strategy's bookkeeping is of (it starts over for each race).
        self._strategy_race: RaceId | None = None
        #: How many times the link came back (a new session: subscriptions must be renewed).
        self.reconnects = 0
        #: When a board the state ignored (no board of its game) calls for a sync of its race.
        self.board_syncs = BoardSyncs()
        #: Called with every server message once it is folded into the state (a progress
        #: report reads the tournament views a bot gets, also while it races).
        self.on_message: Callable[[ServerMessage], None] | None = None

    def _welcomed(self, welcome: Welcome) -> None:
        self.state.apply(welcome)
        if not self._budget_given:
            self.budget = RateBudget.for_server(welcome.rate)

    def _new_key(self, name: str) -> str:
        if self.held is None:
            return secrets.token_urlsafe(24)
        return self.held.registration_key(name)

    async def connect(self, attempts: int = 5) -> None:
        """Say hello, with the kept token if there is one; a taken name gets a random suffix,
        a refused token (the server forgot it) makes the bot ask for its name again."""
        if self.conn.welcome is not None:  # connected by the caller
            self._welcomed(self.conn.welcome)
            self.conn.take_welcome()
            return
        for attempt in range(attempts):
            try:
                welcome = await self.conn.connect()
            except ConnectionFailedError as exc:
                if attempt == attempts - 1:
                    raise
                if self.conn.token is not None and exc.close_code == CloseCode.AUTH_FAILED:
                    assert self.held is not None  # only a held name's kept token is sent
                    self.refused_token = (self.name, exc)
                    self.name = self.asked
                    self.held.forget()
                elif exc.error_code == ErrorCode.NAME_TAKEN:
                    self.name = f"{self.name[:18]}-{secrets.token_hex(2)}"
                else:
                    raise
                self.conn.token = None
                self.conn.name = self.name
                self.conn.key = self._new_key(self.name)
                continue
            if self.held is not None and self.conn.token is not None:
                self.held.save(self.name, self.conn.token)
            self._welcomed(welcome)
            self.conn.take_welcome()  # queued for readers too; it is applied
            return

    async def close(self) -> None:
        """Close the link and let other programs have the bot's name."""
        try:
            await self.conn.close()
        finally:
            if self.held is not None:
                self.held.release()

    async def next_message(self, wait_s: float | None) -> ServerMessage | None:
        """The next server message, folded into the state; None after `wait_s` or on a link
        change (a reconnect is counted, a closed link raises `BotError`). A bot stopped while
        it waits leaves the message in the queue (`Connection.recv_within`). A board or an
        ack the state had to ignore (no board of its game) is followed by a `sync` of its
        race, as a session's pump does (`BoardSyncs`)."""
        incoming = await self.conn.recv_within(wait_s)
        if incoming is None:
            return None
        if isinstance(incoming, StatusChange):
            if incoming.status is LinkStatus.CLOSED:
                raise BotError(f"{self.name}: connection closed ({incoming.detail})")
            if incoming.status is LinkStatus.CONNECTED:
                self.reconnects += 1
                self.board_syncs.reconnected()
            return None
        self.state.apply(incoming)
        if self.on_message is not None:
            self.on_message(incoming)
        race_id = self.board_syncs.due(incoming, self.state, self.conn.followed)
        if race_id is not None:
            await self.conn.send(Sync(race_id=race_id))
        return incoming

    async def request(
        self, message: ClientMessage, until: Predicate, timeout_s: float = REQUEST_TIMEOUT_S
    ) -> ServerMessage:
        """Send `message`, then read on until the first message `until` accepts (asked once it
        is folded into the state). Every message read meanwhile is handled as `next_message`
        does. The server's refusal of the request is a `BotRefusedError`; no answer within
        `timeout_s` (a reconnect meanwhile does not end the wait), or a link closed for good,
        a `BotError`."""
        with self._refusals_named():
            return await self._request(message, until, timeout_s)

    async def _request(
        self, message: ClientMessage, until: Predicate, timeout_s: float = REQUEST_TIMEOUT_S
    ) -> ServerMessage:
        """`request`, its refusal still a `RequestError` (for `join_or_resume` to read)."""
        try:
            return await request_reading(self.conn, self.next_message, message, until, timeout_s)
        except TimeoutError:
            raise BotError(f"{self.name}: no answer to {message.type}") from None

    @contextmanager
    def _refusals_named(self) -> Iterator[None]:
        """The server's refusal of a request in the block (`RequestError`) raised as this
        bot's `BotRefusedError`."""
        try:
            yield
        except RequestError as exc:
            raise BotRefusedError(self.name, exc.code, exc.message) from None

    @property
    def create_sent(self) -> bool:
        """A `create_race` went out (its race is this bot's to leave when stopped)."""
        return self._create_answer is not None

    async def create(self, game: str, seats: int, time_limit_s: int, **options: object) -> RaceId:
        """Create a race and sit in it; returns its id."""
        invite = options.get("invite_code")
        number = options.get("game_number")
        with self._refusals_named():
            message = client_message(
                CreateRace,
                game=game,
                seats=seats,
                time_limit_s=time_limit_s,
                invite_code=invite if isinstance(invite, str) else None,
                game_number=number if isinstance(number, str) else None,
            )
        self._known_at_create = frozenset(self.state.races)
        self._create_answer = answer_to(message, self._created)
        reply = await self.request(message, self._created)
        assert isinstance(reply, RaceUpdate | RaceSnapshot)
        self.follow(reply.race_id)
        return reply.race_id

    def _created(self, message: ServerMessage) -> bool:
        """Is `message` news of the race this bot's last create made?"""
        return isinstance(message, RaceUpdate | RaceSnapshot) and self._is_created(message.race)

    def _is_created(self, info: RaceInfo) -> bool:
        """Is `info` the open race this bot's last create made (not one it knew before)?"""
        return (
            info.creator == self.state.player_id
            and info.status == "open"
            and info.race_id not in self._known_at_create
        )

    async def created_race(self, within_s: float) -> RaceId | None:
        """The open race this bot's `create` made: from what it has read, else from the
        server's answer if it comes within `within_s` (a bot stopped after sending its
        create, before reading the answer); None if it sent none, or no answer came."""
        if self._create_answer is None:
            return None
        for race_id, race in self.state.races.items():
            if race.info is not None and self._is_created(race.info):
                return race_id
        try:
            reply = await read_until(self.next_message, self._create_answer, within_s)
        except (BotError, TimeoutError):
            return None
        if isinstance(reply, RaceUpdate | RaceSnapshot):
            return reply.race_id
        return None  # refused: no race was made

    async def join(self, race_id: RaceId, invite_code: str | None = None) -> None:
        """Sit in `race_id`, or take back the seat this bot still has there (an earlier run
        of the same bot, killed before it could leave: `already_joined`, `join_or_resume`)."""

        def seated(_: ServerMessage) -> bool:
            race = self.state.races.get(race_id)
            return race is not None and self.state.player_id in race.racers

        try:
            await join_or_resume(
                lambda: self._request(JoinRace(race_id=race_id, invite_code=invite_code), seated),
                lambda: self._request(Sync(race_id=race_id), seated),
            )
        except RequestError as exc:  # said as `solrace play` says it
            message = join_refusal_message(exc.code, exc.message, race_id, self.url)
            raise BotRefusedError(self.name, exc.code, message) from None
        self.follow(race_id)

    def follow(self, race_id: RaceId) -> None:
        """Play `race_id` next: one it created or joined, or one the server seated this bot
        in (a tournament's). Nothing of the last race carries over."""
        self.race_id = race_id
        self.reason = ""
        self._pending = None
        self._resigned = False
        self._resign_link = None
        self._resign_retry_at = None
        self._rejections = 0

    async def leave(self, race_id: RaceId) -> bool:
        """Give up this bot's seat in `race_id` if that race has not started: True once the
        server took the bot out (or cancelled the race), False if there was no seat to leave
        (a join stopped before it was sent, or the race is under way). A join whose answer has
        not come yet counts as a seat (the server answers in order). Refused: `BotError`."""
        race, me = self.state.races.get(race_id), self.state.player_id
        if race is not None and race.status not in ("open", UNKNOWN):
            return False

        def out(message: ServerMessage) -> bool:
            if not isinstance(message, RaceUpdate) or message.race_id != race_id:
                return False
            info = message.race
            return info.status == "cancelled" or all(r.player_id != me for r in info.racers)

        try:
            await self.request(LeaveRace(race_id=race_id), out)
        except BotRefusedError as exc:
            if exc.code == ErrorCode.NOT_IN_RACE:
                return False
            raise
        return True

    async def start(self) -> None:
        if self.race_id is not None:
            await self.conn.send(StartRace(race_id=self.race_id))

    @property
    def race(self) -> RaceState | None:
        return None if self.race_id is None else self.state.races.get(self.race_id)

    def _can_move(self) -> bool:
        race = self.race
        me = self.state.player_id
        if race is None or me is None or self._resigned or self._pending is not None:
            return False
        racer = race.racers.get(me)
        board = race.boards.get(me)
        return (
            race.status == "running"
            and racer is not None
            and racer.state == "playing"
            and board is not None
        )

    def _others_are_out(self) -> bool:
        race = self.race
        me = self.state.player_id
        if race is None:
            return False
        others = [r for pid, r in race.racers.items() if pid != me]
        return bool(others) and all(r.state != "playing" for r in others)

    async def _resign(self, reason: str) -> None:
        """Leave the race (the server then ranks this bot out of it)."""
        self.reason = reason
        self._resigned = True
        self._resign_link = self.reconnects
        await self.conn.send(Resign(race_id=self.race_id or ""))

    def _resign_may_be_lost(self) -> bool:
        """Did this bot resign on a link that dropped since, and the race still counts it in?

        A message written just before a link drops may never be read: a server that closes
        a link for the message over its rate budget drops that message. A resign lost so
        would leave the race waiting for this bot, which waits for the race's end. Sent again
        on the new link, it is either applied or refused as already done (`not_playing`)."""
        race = self.race
        me = self.state.player_id
        if self._resign_link in (None, self.reconnects) or race is None or me is None:
            return False
        racer = race.racers.get(me)
        return race.status == "running" and racer is not None and racer.state == "playing"

    async def _act(self) -> None:
        race = self.race
        me = self.state.player_id
        assert race is not None and me is not None and self.race_id is not None
        board = race.boards[me]
        if self._strategy_race != self.race_id:
            self.strategy.new_race()
            self._strategy_race = self.race_id
        choice = self.strategy.choose(board)
        if choice.move is None:
            if board.won or board.stuck:  # the server puts this bot out by itself
                self.reason = choice.reason
                self._resigned = True
            else:
                await self._resign(choice.reason)
            return
        self._pending = await self.conn.send_move(self.race_id, str(choice.move))

    async def play(self) -> BotResult:
        """Play the race to its end. A bot out of it early (stuck, resigned) still follows
        it to the end: its resign may need sending again (`_resign_may_be_lost`), and the
        result is the race's. A race the server lost or no longer has (`RaceState.lost`,
        `gone`) ends it too: its end will never come."""
        loop = asyncio.get_running_loop()
        next_at = 0.0
        while True:
            race = self.race
            if race is not None and (race.is_finished or race.is_off_server):
                break
            retry_at = self._resign_retry_at
            if self._resign_may_be_lost() or (retry_at is not None and loop.time() >= retry_at):
                self._resign_retry_at = None
                await self._resign(self.reason)
                continue
            if self.resign_when_alone and self._can_move() and self._others_are_out():
                await self._resign("every other racer is out")
                continue
            if self._can_move() and loop.time() >= next_at:
                pause = self.budget.wait_s()
                if pause > 0:
                    next_at = loop.time() + pause
                    continue
                self.budget.spend()
                await self._act()
                continue
            due = next_at if self._can_move() else self._resign_retry_at
            wait = 30.0 if due is None else max(0.0, due - loop.time())
            message = await self.next_message(wait)
            if (
                isinstance(message, Error)
                and message.request == "resign"
                and message.code == ErrorCode.UNAVAILABLE
            ):
                # The store could not take it: send it again in a while (within the budget).
                self._resign_retry_at = loop.time() + RESIGN_RETRY_S
                continue
            if isinstance(message, MoveAck | MoveRejected) and message.seq == self._pending:
                self._pending = None
                next_at = loop.time() + self.delay_s
                if isinstance(message, MoveRejected) and message.code == ErrorCode.UNAVAILABLE:
                    # Not stored, nothing changed (the store is busy or away): play on in a
                    # while instead of counting it against the moves.
                    next_at = loop.time() + RESIGN_RETRY_S
                elif isinstance(message, MoveRejected):
                    self._rejections += 1
                    if self._rejections >= 3:
                        await self._resign(f"moves refused: {message.reason}")
                else:
                    self._rejections = 0
        return self.result()

    def result(self) -> BotResult:
        race = self.race
        me = self.state.player_id
        racer = race.racers.get(me) if race and me is not None else None
        reason = self.reason
        if race is not None and race.lost is not None:
            reason = f"{race.lost}: the race has no result"
        elif race is not None and race.gone is not None:
            reason = f"the server no longer has the race ({race.gone})"
        elif not reason and racer is not None:
            reason = OUT_BY_ITSELF.get(racer.state, "")
        return BotResult(
            name=self.name,
            race_id=self.race_id or RaceId(""),
            state=racer.state if racer else UNKNOWN,
            on_foundations=racer.on_foundations if racer else 0,
            total=racer.total if racer else 0,
            moves=racer.moves if racer else 0,
            reason=reason,
        )


def renamed_text(bot: Bot, server: str) -> str | None:
    """What to tell the user of a bot that plays under another name than it asked for (the
    name is someone else's on `server`: a random suffix, `Bot.connect`, or one kept from an
    earlier run), or whose kept token the server refused; None if it plays as asked with its
    token."""
    if bot.refused_token is not None:  # said as `solrace play` says it (`connect_player`)
        name, refused = bot.refused_token
        said = token_refused_text(f"the server at {server}", name, refused)
        if bot.name == bot.asked:
            return (
                f"{said}; {bot.name!r} is now a new player there (new token saved in {bots_file()})"
            )
        return (
            f"{said}, and the name {bot.asked!r} is taken there: the server's secret may have "
            f"changed; this bot plays as {bot.name!r}"
        )
    if bot.name == bot.asked:
        return None
    return f"the name {bot.asked!r} is taken on {server}: this bot plays as {bot.name!r}"


async def first_open_race(bot: Bot, *, invite_code: str | None = None) -> RaceId | None:
    """The id of an open race with a free seat, asking the server for its list (a private
    race only with an invite code: it may be that race's)."""
    reply = await bot.request(ListRaces(), lambda m: isinstance(m, RaceList))
    assert isinstance(reply, RaceList)
    for info in reply.races:
        joinable = not info.private or invite_code is not None
        if info.status == "open" and len(info.racers) < info.seats and joinable:
            return info.race_id
    return None


__all__ = [
    "OUT_BY_ITSELF",
    "RESIGN_RETRY_S",
    "Bot",
    "BotError",
    "BotRefusedError",
    "BotResult",
    "first_open_race",
    "renamed_text",
]
