"""The line mode waiting on its current race (`PlainWaiting`, under `PlainMode`): for its
start (`wait_start`: a move, `board`, `moves` and `resign` typed before the start wait for
it) and for its end (`wait`). While the race is open nothing sure starts it, so the lines
typed meanwhile are looked at: `start` runs at once, and at a terminal `leave`, `board`,
`list`, `help` and `quit` too; other lines keep their place and say so.
"""

from __future__ import annotations

from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.messages import Board, Error, RaceFinished, RaceSnapshot, RaceUpdate

from .plain_events import PlainEvents
from .plain_words import QUIT_WORDS, TYPED_MEANWHILE
from .session import LinkClosedError, Predicate, RequestError
from .state import RaceState, is_gone, is_lost
from .typed_lines import Typed


class PlainWaiting(PlainEvents):
    """The waits of the line mode's commands on the current race, and the lines typed
    meanwhile."""

    async def command(self, line: str) -> None:
        """Run one command line (`PlainMode.command`): a line typed meanwhile that runs at
        once."""
        raise NotImplementedError

    async def wait_start(self) -> bool:
        """Wait for the own board of the current race (the start); False if it cannot come
        (the race is over, the player left it, the server lost it or no longer has it, or
        `quit` was typed meanwhile)."""
        race_id = self.race_id
        if race_id is None:
            self.say(self.no_race)
            return False
        said = told = False
        while self.session.state.my_board(race_id) is None:
            race = self.session.state.races.get(race_id)
            if self.race_id is None:
                return False  # left (`leave` typed meanwhile said so)
            if race is not None and race.is_finished:
                self.say(f"race {race_id} is over ({race.status})")
                return False
            if race is not None and race.lost is not None:
                if not told:  # lost during the wait: `on_event` said so
                    self.say_lost(race)
                return False
            if race is not None and race.gone is not None:
                self.say(self.gone_text(race, race.gone))
                return False
            if race is not None and race.info is not None and self.session.me not in race.racers:
                self.say(f"race {race_id}: you no longer sit in it")
                return False
            if not said:
                more = f" ({self._open_text(race)})" if race and race.status == "open" else ""
                self.say(f"waiting for the start…{more}")
                said = True
            news = await self._race_news(
                race_id,
                lambda m: (
                    getattr(m, "race_id", None) == race_id
                    and (
                        isinstance(m, Board | RaceFinished | RaceUpdate | RaceSnapshot)
                        or is_lost(m)
                        or is_gone(m)
                    )
                ),
            )
            if not news:
                return False
            told = self._is_lost(race_id)
        return True

    def _is_lost(self, race_id: RaceId) -> bool:
        race = self.session.state.races.get(race_id)
        return race is not None and race.lost is not None

    def _open_text(self, race: RaceState) -> str:
        """Where an open race stands, and what starts it."""
        info = race.info
        if info is None:
            return "the race is open"
        mine = info.creator == self.session.me
        starts = "'start' starts it" if mine else "its creator starts it"
        where = f"race {race.race_id} is open, {len(info.racers)}/{info.seats} seated"
        if self.interactive:
            return f"{where}; {starts}, 'leave' leaves it, 'quit' quits"
        # A script's lines keep their order (but for `start`): a `leave` or `quit` after this
        # line runs only once the race has started.
        return f"{where}; {starts}; the script's next lines run once it starts (Ctrl-C quits)"

    async def _race_news(self, race_id: RaceId, until: Predicate) -> bool:
        """Wait for the next message about `race_id` that `until` accepts: True once it came.
        While the race is open (nothing sure starts it), lines typed meanwhile are looked at
        (`_typed_meanwhile`): False if one of them ends the wait (`quit`)."""
        news = self.session.expect(until)
        try:
            while not news.done():
                self._input.more.clear()  # before looking: a line typed meanwhile wakes the wait
                race = self.session.state.races.get(race_id)
                if race is not None and race.status == "open":
                    if not await self._typed_meanwhile(race_id):
                        return False
                    if news.done():
                        break
                await self._input.wait_more(news)
            news.result()  # a link closed for good raises here
            return True
        finally:
            if not news.done():
                news.cancel()
            elif not news.cancelled():
                news.exception()  # retrieved: a link closed meanwhile is not logged

    async def _typed_meanwhile(self, race_id: RaceId) -> bool:
        """Lines typed while a command waits for the start of the open race `race_id`
        (`_first_to_run_now`: at a terminal `start`, `leave`, `board`, `list` and `help` run
        now, `quit` or the end of the input (Ctrl-D) ends the wait (False) unless the start
        is on its way after all, and any
        other line keeps its place, after the start, and says so; in a script only `start`
        runs now). Lines after a `create` or a `join` (of another race) keep their
        place too (not a bare `create` or `join`, which only says its usage). Returns once
        none is left to run now, or the race is no longer open."""
        while True:
            race = self.session.state.races.get(race_id)
            if race is None or race.status != "open" or self.race_id != race_id:
                return True
            typed = self._first_to_run_now()
            if typed is None:
                # At a terminal the end of the input (Ctrl-D) is a `quit` typed: a person ended it.
                if self.interactive and self._input.ended:
                    return not await self._quits_the_wait(race_id, None)
                return True
            if typed.text in QUIT_WORDS:
                return not await self._quits_the_wait(race_id, typed)
            self._input.waiting.remove(typed)
            await self.command(typed.text)

    async def _quits_the_wait(self, race_id: RaceId, typed: Typed | None) -> bool:
        """`quit` (`typed`; None: the end of a terminal's input) while a command waits for the
        start of `race_id`: True if it ends the wait, False if the start is on its way after
        all (a countdown: everything runs in order)."""
        if await self._start_on_its_way(race_id):
            return False
        if typed is not None:
            self._input.waiting.remove(typed)
        self._quit_asked = True
        return True

    def _first_to_run_now(self) -> Typed | None:
        """The first line typed that runs at once while a command waits for an open race's
        start (`_typed_meanwhile`); at a terminal, those before it that wait their turn say
        so, once. A script's lines keep their order, but for a `start` (which only its creator
        may give: waiting for it would wait for good)."""
        for typed in self._input.waiting:
            word = typed.text.split()[0].lower()
            if word == "start" or (
                self.interactive and (typed.text in QUIT_WORDS or word in TYPED_MEANWHILE)
            ):
                return typed
            if self.interactive and not typed.said:
                typed.said = True
                self.say(f"waiting for the start… ('{typed.text}' runs then)")
            if word in ("create", "join") and len(typed.text.split()) > 1:
                # What follows is about another race (a bare `join` or `create` only says
                # its usage: the next `start` is still this race's).
                return None
        return None

    async def _start_on_its_way(self, race_id: RaceId) -> bool:
        """Is the start of `race_id` on its way after all (a countdown)? Asked of the server
        (its snapshot), so that a join it has already seen (the race filled: the countdown)
        is known here before `quit` gives up waiting."""
        try:
            race = await self.session.resume(race_id)
        except LinkClosedError:
            raise
        except (RequestError, TimeoutError):
            return False
        return race.status != "open"

    async def wait_end(self) -> None:
        race = self.race
        if race is None:
            self.say(self.no_race)
            return
        race_id = race.race_id
        me = race.racers.get(self.session.me) if self.session.me is not None else None
        if race.status == "running" and me is not None and me.state == "playing":
            # No move runs before the wait ends (lines run in order), so nothing but the
            # clock puts this player out: said, or the wait looks stuck.
            left = race.remaining_ms(self.session.conn.server_now_ms())
            clock = f" ({left // 1000}s left)" if left else ""
            self.say(
                f"waiting for race {race_id} to end: you are still playing it, so it ends at "
                f"its time limit{clock}; lines typed meanwhile run after it (Ctrl-C quits)"
            )
        # None: left meanwhile; lost: the server lost the race (`on_event` said so).
        while not race.is_finished and race.lost is None and self.race_id is not None:
            if race.gone is not None:
                self.say(self.gone_text(race, race.gone))
                return
            # Not an error (awaited, it would count as reported and `on_event` would not say
            # it), but the one that says the race is lost (which `on_event` always says), or
            # the answer to the race's sync after a reconnect that finds it gone (said here).
            news = await self._race_news(
                race_id,
                lambda m: (
                    getattr(m, "race_id", None) == race_id
                    and (not isinstance(m, Error) or is_lost(m) or is_gone(m))
                ),
            )
            if not news:
                return


__all__ = ["PlainWaiting"]
