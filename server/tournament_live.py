"""A tournament as the service holds it: the state machine plus what the server adds
(name, time limit, player names, the race id of every requested race), stored as one JSON
document; the state-machine call behind each admin act; and the race change the service
makes (stopping a decided match's race). A seated player is marked connected by
`race_changes.connection_change`."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from solrace.engine import CARDS, game_class
from solrace.server.protocol.competition_records import TournamentRecord, document_holds_deals
from solrace.server.protocol.errors import ErrorCode, RaceError
from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.messages import RaceEvent
from solrace.server.protocol.race import Race
from solrace.server.protocol.tournament import Tournament
from solrace.server.protocol.tournament_errors import (
    CorrectionRefusedError,
    InvalidResultError,
    InvalidSettingsError,
    MatchId,
    NotAdminError,
    PlayerId,
    TournamentError,
    UnknownMatchError,
    UnknownPlayerError,
)
from solrace.server.protocol.tournament_events import TournamentEvent
from solrace.server.protocol.tournament_messages import TournamentAdmin
from solrace.server.protocol.tournament_model import RaceResult
from solrace.server.protocol.tournament_state import Match, Phase
from solrace.server.protocol.tournament_view import pending_race_id

DOCUMENT_SCHEMA = 1

Command = Callable[["Live"], list[TournamentEvent]]

ERROR_CODES: dict[type[TournamentError], ErrorCode] = {
    NotAdminError: ErrorCode.NOT_ADMIN,
    UnknownPlayerError: ErrorCode.UNKNOWN_PLAYER,
    UnknownMatchError: ErrorCode.UNKNOWN_MATCH,
    InvalidResultError: ErrorCode.INVALID_RESULT,
    CorrectionRefusedError: ErrorCode.CORRECTION_REFUSED,
    InvalidSettingsError: ErrorCode.INVALID_SETTINGS,
}


def refusal(exc: TournamentError) -> RaceError:
    return RaceError(ERROR_CODES.get(type(exc), ErrorCode.WRONG_STATUS), str(exc))


@dataclass
class RaceLink:
    """Which match and race number a tournament race plays."""

    match_id: MatchId
    round_number: int
    race_number: int


@dataclass
class Live:
    """One tournament as loaded from its stored document."""

    tournament: Tournament
    version: int
    name: str
    time_limit_s: int
    created_at_ms: int
    names: dict[str, str] = field(default_factory=dict)
    #: Every race requested, by id, in the order they were requested (`race_id_of` takes the
    #: last of a match's race number as its race).
    links: dict[RaceId, RaceLink] = field(default_factory=dict)
    next_race: int = 1
    #: Ended rounds whose races' deals may still be held (`_release_deals` not yet known to
    #: be done): round number -> the version whose save ended it. Stored, so a restart after
    #: a crash between a round's end and its release releases it, and reads no race of the
    #: rounds already released.
    held_deals: dict[int, int] = field(default_factory=dict)

    @property
    def tournament_id(self) -> str:
        return self.tournament.tournament_id

    def race_id_of(self, match_id: MatchId, race_number: int) -> RaceId | None:
        """The race requested for a match's race number, None if none was. A race number may
        be requested again (a correction reopens a decided match): the newest race counts.
        Match ids are unique within a tournament, so any round's match may be asked about (a
        change that cancels a race may also have started the next round)."""
        # Newest first: a pending race is of the current round, whose links are the last.
        for race_id, link in reversed(self.links.items()):
            if link.match_id == match_id and link.race_number == race_number:
                return race_id
        return None

    def pending_race_id(self, match: Match) -> RaceId | None:
        """The race of `match`'s pending race: None when it waits for no race, or none was
        requested for it yet."""
        return pending_race_id(match, self.race_id_of)

    def document(self) -> str:
        return json.dumps(
            {
                "schema": DOCUMENT_SCHEMA,
                "name": self.name,
                "time_limit_s": self.time_limit_s,
                "names": self.names,
                "links": {
                    rid: [k.match_id, k.round_number, k.race_number]
                    for rid, k in self.links.items()
                },
                "next_race": self.next_race,
                "held_deals": {str(r): v for r, v in sorted(self.held_deals.items())},
                "state": self.tournament.to_dict(),
            },
            sort_keys=True,
        )

    def to_record(self) -> TournamentRecord:
        return TournamentRecord(
            tournament_id=self.tournament_id,
            version=self.version,
            phase=self.tournament.phase.value,
            created_at_ms=self.created_at_ms,
            document=self.document(),
            settled=self.tournament.phase is Phase.FINISHED and not self.held_deals,
        )

    @classmethod
    def from_record(cls, record: TournamentRecord, deals: Callable[[int, int], str]) -> Live:
        data = json.loads(record.document)
        tournament = Tournament.from_dict(data["state"], deal_source=deals)
        held = data.get("held_deals")
        if held is None:  # stored before releases were noted: any ended round may be held
            held = {str(r.number): 0 for r in tournament.rounds if r.is_ended}
        return cls(
            tournament=tournament,
            version=record.version,
            name=str(data["name"]),
            time_limit_s=int(data["time_limit_s"]),
            created_at_ms=record.created_at_ms,
            names={str(k): str(v) for k, v in data["names"].items()},
            links={
                RaceId(rid): RaceLink(MatchId(m), int(r), int(n))
                for rid, (m, r, n) in sorted(data["links"].items(), key=_in_request_order)
            },
            next_race=int(data["next_race"]),
            held_deals={int(r): int(v) for r, v in held.items()},
        )

    @staticmethod
    def may_hold_deals(record: TournamentRecord) -> bool:
        """Whether the tournament of `record` may have ended rounds whose deals are still
        held (read from the document alone, without loading the tournament)."""
        return document_holds_deals(record.document)


def _in_request_order(item: tuple[str, object]) -> tuple[int, str]:
    """Sorts a document's links in the order their races were requested, by race id: the
    ids are `<tournament id>-<n>`, one prefix, so by length, then as text, is by n. (The
    document holds them sorted as text alone, "t-10" before "t-9".)"""
    race_id = item[0]
    return len(race_id), race_id


def admin_command(message: TournamentAdmin, ratings: dict[PlayerId, float], now: float) -> Command:
    """The state-machine call behind an admin act (its actor is the tournament's admin)."""
    match_id = MatchId(message.match_id or "")
    player = PlayerId(message.player_id or "")

    def command(live: Live) -> list[TournamentEvent]:
        t = live.tournament
        admin = t.admin
        act = message.act
        if act in ("forfeit", "drop") and not message.player_id:
            raise UnknownPlayerError(f"{act} needs player_id")
        if act in ("forfeit", "correct_result") and not message.match_id:
            raise UnknownMatchError(f"{act} needs match_id")
        if act == "open_check_in":
            return t.open_check_in(admin, now=now)
        if act == "start":
            return t.start(admin, now=now, ratings=ratings)
        if act == "pause":
            return t.pause(admin, now=now)
        if act == "resume":
            return t.resume(admin, now=now)
        if act == "forfeit":
            return t.forfeit(admin, match_id, player, now=now)
        if act == "drop":
            return t.drop(player, actor=admin, now=now)
        if message.race_number is None or not message.placings:
            raise InvalidResultError("correct_result needs race_number and placings")
        groups = [[PlayerId(p) for p in g] for g in message.placings]
        given = {PlayerId(p): n for p, n in (message.cards or {}).items()}
        cards = corrected_cards(t, match_id, message.race_number, groups, given)
        result = RaceResult.from_groups(groups, cards)
        return t.correct_result(
            admin, match_id, message.race_number, result, now=now, reason=message.reason
        )

    return with_names(command)


def with_names(command: Command) -> Command:
    """`command` whose refusals name the tournament's players by name, as everything else
    an admin reads does (a correction's `missing ['p370dada95d7e364e']` reads `missing
    ['ann']`): the state machine knows only ids."""

    def named(live: Live) -> list[TournamentEvent]:
        try:
            return command(live)
        except TournamentError as exc:
            text = str(exc)
            for player_id, name in live.names.items():
                text = text.replace(repr(player_id), repr(name))
            if text == str(exc):
                raise
            raise type(exc)(text) from None

    return named


def corrected_cards(
    t: Tournament,
    match_id: MatchId,
    race_number: int,
    groups: list[list[PlayerId]],
    given: dict[PlayerId, int],
) -> dict[PlayerId, int]:
    """The cards on foundations of a corrected race: the recorded ones of the players its
    placings name, with those `given` instead (a correction of the order alone keeps them:
    they feed tie-breaks). The race is looked up first, so a correction of one that does not
    exist is refused as such (`Tournament.find_correctable_race`) whatever its cards; then
    `InvalidResultError` for a count outside 0 to the game's cards; `correct_result` refuses
    cards of a player not in the match."""
    _, match = t.find_correctable_race(t.admin, match_id, race_number)
    most = len(CARDS) * game_class(t.game_id).decks
    for player, count in given.items():
        if not 0 <= count <= most:
            raise InvalidResultError(
                f"cards on foundations of {player!r}: {count}; a {t.game_id} game has 0 to {most}"
            )
    recorded = match.races[race_number - 1].cards
    named = {p for group in groups for p in group}
    return {**{p: n for p, n in recorded.items() if p in named}, **given}


def cancel_race(now_ms: int) -> Callable[[Race], list[RaceEvent]]:
    """The race change that stops a live race whose match is decided (`Race.cancel`): no
    result, no rating, one `race_update` to its racers and spectators. A race that has
    already ended is left as it is."""

    def change(race: Race) -> list[RaceEvent]:
        return race.cancel(now_ms)

    return change
