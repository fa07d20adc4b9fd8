"""Tournaments and ratings as text (pure): the bracket as a tree for elimination formats, a
standings table for Swiss and round robin, a table of each player's heats for heats, and the
current round's matches race by race. The CLI prints these; a screen can show them.

A screen gives the board its width (`render_board(view, width)`): a bracket line too long for
it cuts its players' names (`ann-with-a-lo…`), as little as it must, rather than wrapping and
breaking the tree; the standings cut the player column; a line that still does not fit (the
current round's, a long state) breaks between words, its next lines indented under it.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from solrace.server.protocol.ids import PlayerId
from solrace.server.protocol.swiss import swiss_round_count
from solrace.server.protocol.tournament_bracket import BRACKET_RESET, GRAND_FINAL
from solrace.server.protocol.tournament_messages import (
    LEADERBOARD_LIMIT,
    AuditModel,
    BracketMatchModel,
    Leaderboard,
    MatchModel,
    Profile,
    RaceResultModel,
    RoundModel,
    StandingModel,
    TournamentModel,
    TournamentSummary,
)
from solrace.server.protocol.tournament_model import Format, FormatRules
from solrace.server.protocol.vocab import FormatName

from .defaults import DEFAULT_SERVER_URL, server_option, tournament_command
from .wire_text import one_line

ELIMINATION: tuple[FormatName, ...] = ("single_elimination", "double_elimination")
_WINNERS = re.compile(r"^W(\d+)-(\d+)$")


def phase_word(phase: str) -> str:
    """A tournament's phase for people: `check-in`, not the wire's `check_in`."""
    return phase.replace("_", "-")


def must_check_in(view: TournamentModel, me: PlayerId | None) -> bool:
    """Check-in is open and `me` is registered but not checked in yet."""
    return (
        view.phase == "check_in"
        and me not in view.checked_in
        and any(p.player_id == me for p in view.players)
    )


def names_of(view: TournamentModel) -> dict[PlayerId, str]:
    """Player id -> name, for the tournament's registered players."""
    return {p.player_id: p.name for p in view.players}


def is_heats(view: TournamentModel) -> bool:
    return view.format == "heats"


def matches_of(view: TournamentModel) -> dict[str, MatchModel]:
    """Every match played or being played, by id (a match id is unique in a tournament)."""
    return {m.match_id: m for rnd in view.rounds for m in rnd.matches}


def score(match: MatchModel, order: Sequence[PlayerId | None] | None = None) -> str:
    """A head-to-head match's race wins as the server counts them (`2-1`), in the order of
    `order`'s players (a bracket's line names them in its own order), else the match's;
    empty for a heat (or from a server that does not send them)."""
    if not match.wins:
        return ""
    wins: dict[PlayerId | None, int] = dict(zip(match.players, match.wins, strict=False))
    return "-".join(str(wins.get(p, 0)) for p in (match.players if order is None else order))


def plural(count: int, noun: str) -> str:
    """`1 player`, `2 players`."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def by_seed(view: TournamentModel, players: Sequence[PlayerId | None]) -> list[PlayerId | None]:
    """A bracket match's players best seed first, an empty seat (None) last: the order of
    the server's own match (`MatchModel.players`), so a match reads the same in the bracket,
    the round and the live matches (the bracket sends its seats in the tree's order)."""
    seed: dict[PlayerId, int] = {p: i for i, p in enumerate(view.seeds)}
    return sorted(players, key=lambda p: (p is None, seed.get(p, len(seed)) if p else 0))


def _bracket_state(
    match: BracketMatchModel,
    played: MatchModel | None,
    order: Sequence[PlayerId | None],
    view: TournamentModel,
    names: dict[PlayerId, str],
) -> str:
    """`forfeit: bob`; `playing` while one of the match's races is on (the view lists it as
    live); the race wins of a best-of match played or under way (`played 2-1`,
    `playing 1-0`, `ready 1-0` between races); else the bracket's state (`played`, `ready`,
    `waiting`, `walkover`, `empty`)."""
    if played is None:
        return match.state
    if played.forfeited:
        return "forfeit: " + ", ".join(names.get(p, p) for p in played.forfeited)
    state: str = match.state
    if not played.is_ended and any(live.match_id == match.match_id for live in view.live):
        state = "playing"
    if played.wins and (view.best_of > 1 or len(played.races) > 1) and played.races:
        return f"{state} {score(played, order)}"
    return state


def _reset_line(
    match: BracketMatchModel, view: TournamentModel, names: dict[PlayerId, str]
) -> str | None:
    """The bracket reset (`GF2`) when it is not a match to play (yet): `GF2 not needed: ann
    (winners' bracket) won GF`, `GF2 not played`, `GF2 [waiting: only if bob (losers'
    bracket) wins GF]`; None once it is drawn (or for any other match)."""
    if match.match_id != BRACKET_RESET or match.state not in ("empty", "waiting"):
        return None
    final = next((m for m in view.bracket if m.match_id == GRAND_FINAL), None)
    top, low = [*(final.players if final else []), None, None][:2]
    if match.state == "waiting":
        who = f"{names.get(low, low)} (losers' bracket)" if low else "the losers' bracket champion"
        return f"{BRACKET_RESET} [waiting: only if {who} wins GF]"
    if final is not None and final.state == "played" and top and final.winner == top:
        return f"{BRACKET_RESET} not needed: {names.get(top, top)} (winners' bracket) won GF"
    return f"{BRACKET_RESET} not played"


#: The fewest characters a name is cut to (its "…" included) to fit a line.
NAME_LEAST = 5


def cut_name(name: str, width: int) -> str:
    """`name` in at most `width` characters, ending with "…" when cut."""
    return name if len(name) <= width else name[: max(1, width - 1)] + "…"


def fitted(
    line_of: Callable[[dict[PlayerId, str]], str], names: dict[PlayerId, str], room: int
) -> str:
    """`line_of(names)`, its names cut as little as they must be (all to one length, never
    below `NAME_LEAST`) for it to fit `room` columns (0: no limit): the line as short as it
    gets, when even that does not fit."""
    line = line_of(names)
    if room <= 0 or len(line) <= room:
        return line
    longest = max((len(name) for name in names.values()), default=0)
    for width in range(longest - 1, NAME_LEAST - 1, -1):
        line = line_of({p: cut_name(name, width) for p, name in names.items()})
        if len(line) <= room:
            break
    return line


#: What starts a bracket line: its tree (`│  ├─ `).
_TREE = re.compile(r"^[ │├└─]*")


def hang(line: str, width: int) -> list[str]:
    """`line` in lines of at most `width` columns (0: no limit), broken between words, the
    next lines indented 4 more than it (and under its branch of a tree)."""
    if width <= 0 or len(line) <= width:
        return [line]
    lead = _TREE.match(line)
    tree = lead[0] if lead else ""
    under = tree.replace("├─", "│ ").replace("└─", "  ")
    return textwrap.wrap(
        line,
        width,
        subsequent_indent=under + "    ",
        break_on_hyphens=False,
        drop_whitespace=True,
    ) or [line]


def hung(text: str, width: int) -> str:
    """Each line of `text` within `width` (`hang`)."""
    return "\n".join(part for line in text.split("\n") for part in hang(line, width))


def _match_line(
    match: BracketMatchModel,
    view: TournamentModel,
    names: dict[PlayerId, str],
    played: MatchModel | None,
) -> str:
    """`W2-1 ann vs bob [playing]`: the players best seed first (the winner marked *)."""
    reset = _reset_line(match, view, names)
    if reset is not None:
        return reset

    def who(player: PlayerId | None) -> str:
        if player is None:
            return "bye" if match.state in ("walkover", "empty") else "?"
        name = names.get(player, player)
        return f"{name}*" if player == match.winner else name

    order = by_seed(view, [*match.players, None, None][:2])
    state = _bracket_state(match, played, order, view, names)
    return f"{match.match_id} {who(order[0])} vs {who(order[1])} [{state}]"


def render_bracket(view: TournamentModel, width: int = 0) -> str:
    """The winners bracket as a tree from the final down (winners marked *), then the other
    matches (losers bracket, grand final, third place) by schedule step. A match's state
    says a forfeit (`[forfeit: bob]`), a race of it on (`[playing]`) and the race wins of
    one played or under way (`[played 2-1]`, `[playing 1-0]`); an unused bracket reset says
    so (`GF2 not needed: ann (winners' bracket) won GF`). Within `width` columns (0: no
    limit) a line cuts its names (`fitted`), then breaks (`hang`)."""
    names = names_of(view)
    played = matches_of(view)
    matches = {m.match_id: m for m in view.bracket}
    winners = {}
    for match_id in matches:
        found = _WINNERS.match(match_id)
        if found:
            winners[(int(found[1]), int(found[2]))] = match_id
    lines: list[str] = []

    def draw(rnd: int, number: int, prefix: str, last: bool, top: bool) -> None:
        match_id = winners.get((rnd, number))
        if match_id is None:
            return
        branch = "" if top else ("└─ " if last else "├─ ")
        match = matches[match_id]

        def line_of(shown: dict[PlayerId, str]) -> str:
            return _match_line(match, view, shown, played.get(match_id))

        lines.append(prefix + branch + fitted(line_of, names, width - len(prefix + branch)))
        below = prefix if top else prefix + ("   " if last else "│  ")
        children = [(rnd - 1, 2 * number - 1), (rnd - 1, 2 * number)]
        present = [c for c in children if c in winners]
        for index, (r, n) in enumerate(present):
            draw(r, n, below, index == len(present) - 1, False)

    if winners:
        final_round = max(r for r, _ in winners)
        draw(final_round, 1, "", True, True)
    others = sorted(
        (m for m in view.bracket if m.match_id not in winners.values()),
        key=lambda m: (m.step, m.match_id),
    )
    for index, match in enumerate(others):
        if not index:
            lines.append("")
        step = f"step {match.step}: "

        def other(shown: dict[PlayerId, str], match: BracketMatchModel = match) -> str:
            return _match_line(match, view, shown, played.get(match.match_id))

        lines.append(step + fitted(other, names, width - len(step)))
    return hung("\n".join(lines), width)


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _heats_of(view: TournamentModel, player: PlayerId) -> str:
    """`R1-H2 2nd of 4, R2-F racing`: each heat the player was in and the place the server
    ranked the player at (`ended` if it did not say)."""
    parts: list[str] = []
    for rnd in view.rounds:
        for match in rnd.matches:
            if player not in match.players:
                continue
            if not match.is_ended:
                parts.append(f"{match.match_id} racing")
                continue
            order = match.ranking
            place = (
                f"{ordinal(order.index(player) + 1)} of {len(order)}"
                if player in order
                else "ended"
            )
            gone = " (forfeited)" if player in match.forfeited else ""
            parts.append(f"{match.match_id} {place}{gone}")
    return ", ".join(parts) or "-"


#: What a standings row may end with.
_FLAGS = (" (dropped)", " (out)", "")


def _standings_table(
    view: TournamentModel,
    columns: str,
    cells: Callable[[StandingModel], str],
    room: int = 0,
    *,
    long_cells: bool = False,
) -> str:
    """The standings as a table: rank, player (the column as wide as the longest name), then
    `columns` headed and `cells` filled for each player, then whether the player is out.
    Within `room` columns (0: no limit) the player column narrows, its names cut with "…"
    (never below its header's width), for the rows to fit (`long_cells`: for the headers,
    the cells being lists that break onto more lines anyway); a row still too long breaks
    (`hang`)."""
    names = names_of(view)

    def flag(s: StandingModel) -> str:
        return _FLAGS[0] if s.is_dropped else _FLAGS[1] if s.is_eliminated else _FLAGS[2]

    width = max(
        [len("player"), *(len(names.get(s.player_id, s.player_id)) for s in view.standings)]
    )
    if room > 0:
        if long_cells:
            rest = len(columns) + len(_FLAGS[0])
        else:
            rest = max([len(columns), *(len(cells(s) + flag(s)) for s in view.standings)])
        width = max(len("player"), min(width, room - len(f"{1:>3}    ") - rest))
    head = f"{'#':>3}  {'player':<{width}}  {columns}"
    lines = [head, "-" * len(head)]
    for s in view.standings:
        name = cut_name(names.get(s.player_id, s.player_id), width)
        lines.append(f"{s.rank:>3}  {name:<{width}}  {cells(s)}{flag(s)}")
    return hung("\n".join(lines), room)


def render_heats(view: TournamentModel, width: int = 0) -> str:
    """Heats rank players by how far they got (points and wins mean nothing there): rank,
    player, cards on foundations, and each heat the player raced with the place it gave."""
    return _standings_table(
        view,
        f"{'cards':>5}  heats",
        lambda s: f"{s.cards:>5}  {_heats_of(view, s.player_id)}",
        width,
        long_cells=True,
    )


def render_standings(view: TournamentModel, width: int = 0) -> str:
    """Within `width` columns (0: no limit), as `_standings_table` fits it."""
    if is_heats(view):
        return render_heats(view, width)
    return _standings_table(
        view,
        f"{'pts':>4}  {'tb':>5}  {'cards':>5}  W-D-L",
        lambda s: f"{s.points:>4g}  {s.tiebreak:>5g}  {s.cards:>5}  {s.wins}-{s.draws}-{s.losses}",
        room=width,
    )


def render_title(view: TournamentModel) -> str:
    """Two short lines: name and id; format, game, best of, rated, phase (and the round)."""
    state = phase_word(view.phase) + (" (paused)" if view.paused else "")
    if view.rounds and view.phase == "running":
        state += f", round {view.rounds[-1].number}"
    return (
        f"{view.name} [{view.tournament_id}]\n{view.format.replace('_', ' ')} of {view.game},"
        f" best of {view.best_of}, {'rated' if view.rated else 'casual'}: {state}"
    )


def race_text(race: RaceResultModel, names: dict[PlayerId, str], heats: bool) -> str:
    """A head-to-head race by its winner (`tie` when the best place is shared); a heat's
    race by its finishing order (`ann, bob=cid, dee`: `=` for a tie)."""
    if heats:
        return ", ".join("=".join(names.get(p, p) for p in group) for group in race.placings)
    first = race.placings[0] if race.placings else []
    return names.get(first[0], first[0]) if len(first) == 1 else "tie"


def outcome_text(match: MatchModel, view: TournamentModel) -> str:
    """What an ended match decided: `winner ann`, `draw`, `no winner` (all forfeited); a
    heat its finishing order as the server ranked it (`order ann, bob, cid`), the final its
    winner too: who goes through a heat is said when its round ends (`round_end`)."""
    names = names_of(view)
    winner = names.get(match.winner, match.winner) if match.winner else None
    if is_heats(view):
        order = "order " + (", ".join(names.get(p, p) for p in match.ranking) or "unknown")
        return f"winner {winner}, {order}" if winner and is_final_heat(match) else order
    if winner is not None:
        return f"winner {winner}"
    return "no winner" if match.forfeited else "draw"


def match_status(match: MatchModel, view: TournamentModel) -> str:
    """A match of the round, race by race: `1-1 (race 1 ann, race 2 bob), race 3 on RACE`
    while it is played; `winner ann 2-1 (...)`, `bob forfeited, winner ann` once it ended; a
    heat's races by their finishing order."""
    names = names_of(view)
    heats = is_heats(view)
    parts: list[str] = []
    if match.forfeited:
        parts.append(", ".join(names.get(p, p) for p in match.forfeited) + " forfeited")
    if match.is_ended:
        parts.append(outcome_text(match, view))
    head = ", ".join(parts)
    if match.wins and match.races:
        head = f"{head} {score(match)}".strip()
    if match.races:
        races = ", ".join(
            f"race {i} {race_text(r, names, heats)}" for i, r in enumerate(match.races, 1)
        )
        head = f"{head} ({races})".strip()
    if not match.is_ended and match.pending_race is not None:
        where = f"on {match.race_id}" if match.race_id else "to come"
        head = ", ".join(filter(None, [head, f"race {match.pending_race} {where}"]))
    return head or "waiting"


def is_final_heat(match: MatchModel) -> bool:
    """The final of heats (`R3-F`): its winner is the champion."""
    return match.match_id.endswith("-F")


def render_round(view: TournamentModel) -> str:
    """The current round's matches, one a line with their race-by-race state (the round's
    byes and walkovers named): what a best-of match stands at while it is played, or paused."""
    rnd = view.rounds[-1]
    names = names_of(view)
    state = "ended" if rnd.is_ended else "paused" if view.paused else "under way"
    lines = [f"round {rnd.number} ({state}):"]
    for match in rnd.matches:
        players = " vs ".join(names.get(p, p) for p in match.players)
        lines.append(f"  {match.match_id} {players}: {match_status(match, view)}")
    byes = ", ".join(names.get(p, p) for p in byes_of(view, rnd))
    if byes:
        lines.append(f"  bye: {byes}")
    return "\n".join(lines)


def checked_in_line(view: TournamentModel) -> str:
    """`checked in: ann, bob`, in the order they registered (`view.players`; the wire's set
    comes sorted by player id, an order that means nothing to a reader)."""
    checked = [p.name for p in view.players if p.player_id in view.checked_in]
    registered = {p.player_id for p in view.players}
    checked += sorted(p for p in view.checked_in if p not in registered)  # none, normally
    return f"checked in: {', '.join(checked) or 'nobody yet'}"


def render_board(view: TournamentModel, width: int = 0) -> str:
    """The bracket tree (elimination formats), the standings table (Swiss, round robin) or
    the heats table; while it runs, the current round match by match; before the seeding,
    who registered and who checked in. Every line within `width` columns (0: no limit): a
    bracket's and a table's cut their names, the others break between words."""
    if view.seeds:
        if view.format in ELIMINATION:
            board = render_bracket(view, width)
        else:
            board = render_standings(view, width)
        if view.phase == "running" and view.rounds:
            board += "\n\n" + hung(render_round(view), width)
        return board
    lines = [f"registered: {', '.join(p.name for p in view.players) or 'nobody yet'}"]
    if view.phase == "check_in":
        lines.append(checked_in_line(view))
    return hung("\n".join(lines), width)


def field_size(view: TournamentModel) -> int:
    """How many play: once seeded, the field (not who registered and did not check in)."""
    return len(view.seeds) if view.seeds else len(view.players)


def field_lines(view: TournamentModel) -> list[str]:
    """`players: ...`: once seeded, those who play (as many as `list` counts), and who
    registered but is not in the field (`did not check in: ...`); before, who registered."""
    if not view.seeds:
        return [f"players: {', '.join(p.name for p in view.players) or 'none yet'}"]
    seeded = set(view.seeds)
    lines = [f"players: {', '.join(p.name for p in view.players if p.player_id in seeded)}"]
    left_out = [p.name for p in view.players if p.player_id not in seeded]
    if left_out:
        label = "did not check in" if view.check_in_required else "not in the field"
        lines.append(f"{label}: {', '.join(left_out)}")
    return lines


def swiss_rounds_line(view: TournamentModel) -> str | None:
    """A Swiss's rounds (`swiss_round_count` of its field: the seeded players once it has
    started, before that those registered): `rounds: 3 of the 10 asked (a Swiss of 4 players
    plays at most 3, so that nobody meets anyone twice)`, `rounds: 2 (automatic, for 4
    players)`; None for another format."""
    if view.format != "swiss":
        return None
    field = len(view.seeds) or len(view.players)
    asked = view.swiss_rounds
    registered = "" if view.seeds else " registered so far"
    if field < 2:
        return f"rounds: {asked if asked else 'automatic'}, as the field allows"
    played = swiss_round_count(FormatRules(Format.SWISS, swiss_rounds=asked), field)
    if asked is None:
        return f"rounds: {played} (automatic, for {field} players{registered})"
    if played < asked:
        return (
            f"rounds: {played} of the {asked} asked (a Swiss of {field} players{registered} "
            f"plays at most {played}, so that nobody meets anyone twice)"
        )
    return f"rounds: {played}"


def render_tournament(view: TournamentModel, *, server: str = DEFAULT_SERVER_URL) -> str:
    names = names_of(view)
    state = phase_word(view.phase) + (" (paused)" if view.paused else "")
    rounds = swiss_rounds_line(view)
    lines = [
        f"{view.name} [{view.tournament_id}] {view.format} of {view.game}, best of "
        f"{view.best_of}, {'rated' if view.rated else 'casual'}: {state}",
        *([rounds] if rounds else []),
        *field_lines(view),
    ]
    if view.champion is not None:
        lines.append(f"champion: {names.get(view.champion, view.champion)}")
    if view.phase == "check_in":
        lines.append(checked_in_line(view))
    if view.seeds:
        lines.append("")
        lines.append(render_board(view))
    if view.live:
        lines.append("")
        lines.append(f"live (solrace watch RACE{server_option(server)}):")
        for live in view.live:
            players = " vs ".join(names.get(p, p) for p in live.players)
            lines.append(f"  {live.match_id} race {live.race_number}: {live.race_id}  {players}")
    return "\n".join(lines)


def byes_of(view: TournamentModel, rnd: RoundModel) -> list[PlayerId]:
    """Who goes through round `rnd` without playing: its byes (Swiss, round robin) or, in an
    elimination, the walkovers of its schedule step (a bracket seat with no opponent, or one
    who dropped out). A round plays one step; the walkovers of steps it skipped (every match
    of them a walkover) count with it, but for a player who plays a match of the round (a
    walkover in a skipped step, then a match: no bye)."""
    if view.format not in ELIMINATION:
        return list(rnd.byes)
    step_of = {m.match_id: m.step for m in view.bracket}

    def step(number: int) -> int:
        earlier = [r for r in view.rounds if r.number == number]
        return max((step_of.get(m.match_id, 0) for r in earlier for m in r.matches), default=0)

    low, high = step(rnd.number - 1), step(rnd.number)
    playing = {p for match in rnd.matches for p in match.players}  # not through without play
    return [
        m.winner
        for m in view.bracket
        if m.state == "walkover"
        and m.winner is not None
        and low < m.step <= high
        and m.winner not in playing
    ]


def match_result(match: MatchModel, view: TournamentModel) -> str:
    """`W1-1 ann vs bob: winner ann (3 races; bob forfeited)`: an ended match in one line
    (a heat: `order ann, bob, cid, dee`, see `outcome_text`)."""
    names = names_of(view)
    players = " vs ".join(names.get(p, p) for p in match.players)
    notes = [f"{len(match.races)} race{'s' if len(match.races) != 1 else ''}"]
    if match.forfeited:
        notes.append(", ".join(names.get(p, p) for p in match.forfeited) + " forfeited")
    return f"{match.match_id} {players}: {outcome_text(match, view)} ({'; '.join(notes)})"


def progress_lines(before: TournamentModel | None, after: TournamentModel) -> list[str]:
    """What changed from the view `before` (None: nothing seen yet) to the newer `after`, as
    lines of a log: check-in opened, a player dropped or withdrawn, a round started (its
    pairings; a resume that lets it start comes first), a match ended (its winner), a
    match's result corrected, a round ended, paused, resumed, finished (the champion)."""
    names = names_of(after)
    lines: list[str] = []
    if after.phase == "check_in" and (before is None or before.phase == "registration"):
        lines.append("check-in is open")
    if before is not None:
        lines += dropped_lines(before, after)
    was_paused = before is not None and before.paused
    resumed = was_paused and not after.paused
    earlier = {r.number: r for r in before.rounds} if before is not None else {}
    for rnd in after.rounds:
        old = earlier.get(rnd.number)
        if old is None:
            if resumed:  # the resume let the round start: it comes first
                lines.append("tournament resumed")
                resumed = False
            pairs = ", ".join(
                f"{m.match_id} {' vs '.join(names.get(p, p) for p in m.players)}"
                for m in rnd.matches
            )
            byes = ", ".join(names.get(p, p) for p in byes_of(after, rnd))
            lines.append(
                f"round {rnd.number} started: {pairs or 'no matches'}"
                + (f"; bye: {byes}" if byes else "")
            )
        ended = {m.match_id: m for m in old.matches if m.is_ended} if old is not None else {}
        for match in rnd.matches:
            if not match.is_ended:
                continue
            was = ended.get(match.match_id)
            if was is None:
                lines.append(f"round {rnd.number}, {match_result(match, after)}")
            elif _result_of(was) != _result_of(match):
                lines.append(f"round {rnd.number}, corrected: {match_result(match, after)}")
        if rnd.is_ended and not (old is not None and old.is_ended):
            lines.append(round_end(after, rnd))
    if after.paused and not was_paused:
        lines.append("tournament paused")
    elif resumed:
        lines.append("tournament resumed")
    if after.phase == "finished" and (before is None or before.phase != "finished"):
        champion = names.get(after.champion, after.champion) if after.champion else "nobody"
        lines.append(f"tournament finished: champion {champion}")
    return lines


def _result_of(match: MatchModel) -> tuple[object, ...]:
    """What an ended match's result line says: a correction changes some of it."""
    return (match.winner, match.ranking, match.wins, match.races, match.forfeited)


def dropped_lines(before: TournamentModel, after: TournamentModel) -> list[str]:
    """A line for each player out of the running tournament since `before`: `bob dropped by
    the director` (an admin's `drop`, in the audit), else `bob withdrawn` (the player left,
    or did not show up for a race)."""
    names = names_of(after)
    by_director = {e.detail for e in after.audit[len(before.audit) :] if e.act == "drop"}
    known = set(before.dropped)
    return [
        f"{names.get(p, p)} dropped by the director"
        if p in by_director
        else f"{names.get(p, p)} withdrawn"
        for p in after.dropped
        if p not in known
    ]


def round_end(view: TournamentModel, rnd: RoundModel) -> str:
    """`round 1 ended`; a round of heats before the final says who goes through: the
    players of the next round once it is drawn (its byes too), else those the standings
    keep in."""
    if not is_heats(view) or any(is_final_heat(m) for m in rnd.matches):
        return f"round {rnd.number} ended"
    names = names_of(view)
    following = [r for r in view.rounds if r.number == rnd.number + 1]
    if following:
        seed = {p: i for i, p in enumerate(view.seeds)}
        drawn = {p for m in following[0].matches for p in m.players} | set(following[0].byes)
        through = sorted(drawn, key=lambda p: seed.get(p, len(seed)))
    else:
        through = [s.player_id for s in view.standings if not s.is_eliminated]
    listed = ", ".join(names.get(p, p) for p in through) or "nobody"
    return f"round {rnd.number} ended: through {listed}"


def audit_line(entry: AuditModel, names: dict[PlayerId, str]) -> str:
    """`2025-11-28 20:15:02 UTC  director  forfeit  bob in W1-1`: who did what, when (UTC).
    Player ids in the detail show as names; every value from the server is `one_line`."""
    when = datetime.fromtimestamp(entry.at_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    detail = entry.detail
    for player_id, name in names.items():
        detail = detail.replace(player_id, name)
    actor = names.get(entry.actor, entry.actor)
    parts = [when, one_line(actor), one_line(entry.act)] + ([one_line(detail)] if detail else [])
    return "  ".join(parts)


def render_audit(view: TournamentModel, names: dict[PlayerId, str] | None = None) -> str:
    """The tournament's audit log (every admin act, oldest first), under `audit:`. `names`
    adds player id -> name to the tournament's players (its admin is often not one)."""
    known = {**(names or {}), **names_of(view)}
    lines = ["audit:"]
    lines += [f"  {audit_line(entry, known)}" for entry in view.audit] or ["  nothing yet"]
    return "\n".join(lines)


def render_list(tournaments: list[TournamentSummary]) -> str:
    if not tournaments:
        return "no tournaments"
    return "\n".join(
        f"{t.tournament_id}  {t.name}  {t.format} of {t.game}  {phase_word(t.phase)}  "
        f"{plural(t.players, 'player')}  round {t.round}"
        for t in tournaments
    )


def render_leaderboard(
    board: Leaderboard, limit: int | None = None, *, server: str = DEFAULT_SERVER_URL
) -> str:
    """The board's rows, at most `limit`. The board is asked for one row more than `limit`
    (its answer has no count): with that row, a last line says the board goes on and which
    `--limit` lists more; a board of `LEADERBOARD_LIMIT` rows, the most one answer holds,
    says that the server lists no more."""
    entries = board.entries if limit is None else board.entries[:limit]
    lines = [f"{board.game} leaderboard"]
    if not entries:
        lines.append("no rated races yet")
    for e in entries:
        mark = " (provisional)" if e.provisional else ""
        lines.append(f"{e.rank:>3}. {e.name:<24} {e.rating:>5}  {e.wins}/{e.races} wins{mark}")
    if len(entries) < len(board.entries):
        lines.append(
            "more players not listed: "
            f"{tournament_command(server, f'leaderboard {board.game} --limit {LEADERBOARD_LIMIT}')}"
            f" lists up to {LEADERBOARD_LIMIT}"
        )
    elif len(entries) == LEADERBOARD_LIMIT:
        lines.append(f"the first {LEADERBOARD_LIMIT} only: the server lists no more")
    return "\n".join(lines)


def render_profile(profile: Profile) -> str:
    """The player's name, a rating per game and the recent rated races; a player without
    any says so (`ann: no rated races yet`)."""
    if not profile.ratings and not profile.recent:
        return f"{profile.name}: no rated races yet"
    lines = [profile.name]
    for r in profile.ratings:
        mark = " (provisional)" if r.provisional else ""
        lines.append(f"  {r.game}: {r.rating}{mark}, {r.wins}/{r.races} wins")
    for res in profile.recent:
        delta = res.rating_after - res.rating_before
        lines.append(f"  {res.race_id} {res.game}: {res.rank}/{res.racers} ({delta:+d})")
    return "\n".join(lines)
