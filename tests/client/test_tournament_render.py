"""Tournament text: the bracket tree of an elimination and the standings table of a Swiss."""

from __future__ import annotations

from solrace.client.tournament_cli import parse_placings, render
from solrace.client.tournament_render import (
    field_size,
    must_check_in,
    progress_lines,
    render_audit,
    render_board,
    render_leaderboard,
    render_list,
    render_profile,
    render_tournament,
)
from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.tournament import Tournament
from solrace.server.protocol.tournament_errors import MatchId, PlayerId, TournamentId
from solrace.server.protocol.tournament_messages import (
    AuditModel,
    Leaderboard,
    LeaderboardRow,
    Profile,
    TournamentList,
    TournamentModel,
    TournamentSummary,
)
from solrace.server.protocol.tournament_model import Format, FormatRules, RaceResult
from solrace.server.protocol.tournament_state import TournamentSettings
from solrace.server.protocol.tournament_view import build_view


def played(fmt: Format, count: int) -> str:
    """A tournament played to its end in pure code (the better seed always wins)."""
    settings = TournamentSettings(FormatRules(fmt), check_in_required=False)
    admin = PlayerId("a")
    t = Tournament.create(
        TournamentId("t1"), "klondike", settings, admin=admin, now=0, deal_source=lambda r, n: "7"
    )
    names = {f"p{i}": f"n{i}" for i in range(1, count + 1)}
    for p in names:
        t.register(PlayerId(p), now=1)
    t.start(admin, now=2)
    while t.live_matches():
        match = t.live_matches()[0]
        order = sorted(match.racing, key=lambda p: int(p[1:]))
        assert match.pending_race is not None
        t.record_race(match.match_id, match.pending_race, RaceResult.from_order(order), now=3)
    view = build_view(t, version=1, name="cup", time_limit_s=60, names=names)
    return render_tournament(view)


def test_an_elimination_is_drawn_as_a_tree() -> None:
    text = played(Format.SINGLE_ELIMINATION, 4)
    assert "champion: n1" in text
    assert "W2-1 n1* vs n2 [played]\n├─ W1-1 n1* vs n4 [played]\n└─ W1-2 n2* vs n3 [played]" in (
        text
    )


def test_a_swiss_is_a_standings_table() -> None:
    text = played(Format.SWISS, 4)
    lines = text.splitlines()
    head = next(i for i, line in enumerate(lines) if line.lstrip().startswith("#"))
    assert lines[head].split() == ["#", "player", "pts", "tb", "cards", "W-D-L"]
    assert lines[head + 2].split()[:3] == ["1", "n1", "2"]
    assert len(lines) == head + 2 + 4


def test_placings_text() -> None:
    assert parse_placings("a,b=c,d") == [["a"], ["b", "c"], ["d"]]


def test_must_check_in_only_when_open_registered_and_not_yet_done() -> None:
    settings = TournamentSettings(FormatRules(Format.SWISS), check_in_required=True)
    admin = PlayerId("a")
    t = Tournament.create(TournamentId("t1"), "klondike", settings, admin=admin, now=0)
    for p in ("p1", "p2"):
        t.register(PlayerId(p), now=1)

    def view() -> TournamentModel:
        return build_view(t, version=1, name="cup", time_limit_s=60, names={})

    assert not must_check_in(view(), PlayerId("p1"))  # registration: not yet
    t.open_check_in(admin, now=2)
    assert must_check_in(view(), PlayerId("p1")) and must_check_in(view(), PlayerId("p2"))
    assert not must_check_in(view(), PlayerId("stranger")) and not must_check_in(view(), None)
    t.check_in(PlayerId("p1"), now=3)
    assert not must_check_in(view(), PlayerId("p1")) and must_check_in(view(), PlayerId("p2"))


def test_the_text_says_who_checked_in_during_check_in() -> None:
    settings = TournamentSettings(FormatRules(Format.SINGLE_ELIMINATION), check_in_required=True)
    admin = PlayerId("a")
    t = Tournament.create(
        TournamentId("t1"), "klondike", settings, admin=admin, now=0, deal_source=lambda r, n: "7"
    )
    names = {"p1": "ann", "p2": "bob", "p3": "cid"}
    for p in names:
        t.register(PlayerId(p), now=1)

    def text() -> list[str]:
        view = build_view(t, version=1, name="cup", time_limit_s=60, names=names)
        return render_tournament(view).splitlines()

    assert not any(line.startswith("checked in:") for line in text())  # registration
    t.open_check_in(admin, now=2)
    assert "checked in: nobody yet" in text()
    t.check_in(PlayerId("p2"), now=3)
    t.check_in(PlayerId("p1"), now=4)
    assert "checked in: ann, bob" in text()  # as they registered
    t.start(admin, now=5)
    view = build_view(t, version=2, name="cup", time_limit_s=60, names=names)
    assert "did not check in: cid" in render_tournament(view)
    assert (len(view.players), field_size(view)) == (3, 2)  # the field: who checked in


def test_who_checked_in_is_listed_in_the_order_they_registered() -> None:
    """`checked in:` (`show`, `check-in` and the tournament screen) followed the player ids'
    order (random ids: a meaningless one); it follows registration, as `players:` does."""
    settings = TournamentSettings(FormatRules(Format.SINGLE_ELIMINATION), check_in_required=True)
    admin = PlayerId("a")
    t = Tournament.create(
        TournamentId("t1"), "klondike", settings, admin=admin, now=0, deal_source=lambda r, n: "7"
    )
    names = {"p3": "cid", "p1": "ann", "p2": "bob"}  # registered in this order
    for p in names:
        t.register(PlayerId(p), now=1)
    t.open_check_in(admin, now=2)
    for p in ("p1", "p2", "p3"):
        t.check_in(PlayerId(p), now=3)
    view = build_view(t, version=1, name="cup", time_limit_s=60, names=names)
    assert "checked in: cid, ann, bob" in render_tournament(view).splitlines()
    assert "checked in: cid, ann, bob" in render_board(view).splitlines()


def test_the_audit_shows_server_text_escaped_on_one_line() -> None:
    """A detail, actor or act from the server cannot drive the terminal nor start a line."""
    settings = TournamentSettings(FormatRules(Format.SWISS), check_in_required=False)
    t = Tournament.create(TournamentId("t1"), "klondike", settings, admin=PlayerId("a"), now=0)
    view = build_view(t, version=1, name="cup", time_limit_s=60, names={})
    hostile = AuditModel(
        at_ms=86_400_000,
        actor=PlayerId("a\x1b]0;x\x07"),
        act="drop\x9b2J",
        detail="p1\nforged line",
    )
    view = view.model_copy(update={"audit": [*view.audit, hostile]})
    lines = render_audit(view, {PlayerId("a"): "boss"}).splitlines()
    assert lines == [
        "audit:",
        "  1970-01-01 00:00:00 UTC  boss  create  swiss of klondike",
        "  1970-01-02 00:00:00 UTC  a\\x1b]0;x\\x07  drop\\x9b2J  p1\\x0aforged line",
    ]


def started(rules: FormatRules, count: int) -> tuple[Tournament, dict[str, str]]:
    """A tournament of `count` players (p1 the best seed, named n1...) just started."""
    settings = TournamentSettings(rules, check_in_required=False)
    admin = PlayerId("a")
    t = Tournament.create(
        TournamentId("t1"), "klondike", settings, admin=admin, now=0, deal_source=lambda r, n: "7"
    )
    names = {f"p{i}": f"n{i}" for i in range(1, count + 1)}
    for p in names:
        t.register(PlayerId(p), now=1)
    t.start(admin, now=2)
    return t, names


def view_of(
    t: Tournament,
    names: dict[str, str],
    version: int = 1,
    race_ids: dict[tuple[MatchId, int], RaceId] | None = None,
) -> TournamentModel:
    """The view sent to clients, with the race ids of (match, race number) in `race_ids`."""
    ids = race_ids or {}
    return build_view(
        t,
        version=version,
        name="cup",
        time_limit_s=60,
        names=names,
        race_id_of=lambda match_id, number: ids.get((match_id, number)),
    )


def log_to_the_end(t: Tournament, names: dict[str, str]) -> list[str]:
    """`progress_lines` from the start to the end, the better seed winning every race."""
    before = None
    lines: list[str] = []
    version = 1
    while True:
        after = view_of(t, names, version)
        lines += progress_lines(before, after)
        before, version = after, version + 1
        if not t.live_matches():
            return lines
        match = t.live_matches()[0]
        order = sorted(match.racing, key=lambda p: int(p[1:]))
        assert match.pending_race is not None
        t.record_race(match.match_id, match.pending_race, RaceResult.from_order(order), now=3)


def test_a_best_of_match_shows_its_score_race_by_race_while_paused() -> None:
    t, names = started(FormatRules(Format.SINGLE_ELIMINATION, best_of=3), 4)
    first, second = t.live_matches()
    t.record_race(
        first.match_id, 1, RaceResult.from_order([first.racing[0], first.racing[1]]), now=3
    )
    t.forfeit(PlayerId("a"), second.match_id, PlayerId("p3"), now=4)
    t.pause(PlayerId("a"), now=5)
    text = render_tournament(view_of(t, names))
    assert "├─ W1-1 n1 vs n4 [ready 1-0]\n└─ W1-2 n2* vs n3 [forfeit: n3]" in text
    assert text.endswith(
        "round 1 (paused):\n"
        "  W1-1 n1 vs n4: 1-0 (race 1 n1), race 2 to come\n"
        "  W1-2 n2 vs n3: n3 forfeited, winner n2"
    )


def test_an_elimination_names_its_walkovers_as_byes_when_a_round_starts() -> None:
    t, names = started(FormatRules(Format.SINGLE_ELIMINATION), 5)
    log = log_to_the_end(t, names)
    assert log[0] == "round 1 started: W1-2 n4 vs n5; bye: n1, n2, n3"
    assert "round 2 started: W2-1 n1 vs n4, W2-2 n2 vs n3" in log  # nobody sits out


def test_a_walkover_in_a_skipped_step_is_no_bye_for_a_player_of_the_round() -> None:
    """Double elimination of five, the best seed dropping out in round 2 (the fuzz audit's
    bots): the loser who then had a walkover in a step round 4 skipped, and played L4-1 in
    it, was said as `bye` beside the match they played."""
    t, names = started(FormatRules(Format.DOUBLE_ELIMINATION), 5)
    before: TournamentModel | None = None
    starts: list[str] = []
    for version in range(1, 100):
        after = view_of(t, names, version)
        starts += [line for line in progress_lines(before, after) if " started: " in line]
        before = after
        if not t.live_matches():
            break
        if len(t.rounds) == 2 and PlayerId("p1") not in t.dropped:
            t.drop(PlayerId("p1"), actor=PlayerId("p1"), now=3)
            continue
        match = t.live_matches()[0]
        order = sorted(match.racing, key=lambda p: int(p[1:]))
        assert match.pending_race is not None
        t.record_race(match.match_id, match.pending_race, RaceResult.from_order(order), now=3)
    assert starts[3] == "round 4 started: L4-1 n3 vs n4"  # it said "; bye: n3"
    assert starts[1] == "round 2 started: W2-1 n1 vs n4, W2-2 n2 vs n3; bye: n5"


def test_heats_say_each_heat_s_order_who_goes_through_and_rank_by_heats() -> None:
    t, names = started(FormatRules(Format.HEATS, heat_size=4, advance_per_heat=2), 7)
    log = log_to_the_end(t, names)
    assert log == [
        "round 1 started: R1-H1 n1 vs n4 vs n5, R1-H2 n2 vs n3 vs n6 vs n7",
        "round 1, R1-H1 n1 vs n4 vs n5: order n1, n4, n5 (1 race)",
        "round 1, R1-H2 n2 vs n3 vs n6 vs n7: order n2, n3, n6, n7 (1 race)",
        "round 1 ended: through n1, n2, n3, n4",
        "round 2 started: R2-F n1 vs n2 vs n3 vs n4",
        "round 2, R2-F n1 vs n2 vs n3 vs n4: winner n1, order n1, n2, n3, n4 (1 race)",
        "round 2 ended",
        "tournament finished: champion n1",
    ]
    table = render_tournament(view_of(t, names)).split("\n\n")[1].splitlines()
    assert table[0].split() == ["#", "player", "cards", "heats"]
    assert table[2].split() == [
        "1",
        "n1",
        "0",
        "R1-H1",
        "1st",
        "of",
        "3,",
        "R2-F",
        "1st",
        "of",
        "4",
    ]
    assert table[-1].split() == ["7", "n7", "0", "R1-H2", "4th", "of", "4", "(out)"]


def test_a_swiss_draw_is_a_draw() -> None:
    t, names = started(FormatRules(Format.SWISS), 2)
    (match,) = t.live_matches()
    before = view_of(t, names)
    tie = RaceResult.from_groups([[PlayerId("p1"), PlayerId("p2")]])
    t.record_race(match.match_id, 1, tie, now=3)
    assert "round 1, R1-1 n1 vs n2: draw (1 race)" in progress_lines(before, view_of(t, names, 2))


def with_matches(view: TournamentModel, **changes: object) -> TournamentModel:
    """`view` with every match's fields `changes` set (as another server could send them)."""
    rounds = [
        rnd.model_copy(update={"matches": [m.model_copy(update=changes) for m in rnd.matches]})
        for rnd in view.rounds
    ]
    return view.model_copy(update={"rounds": rounds})


def test_a_heat_s_order_and_places_are_the_server_s_ranking() -> None:
    """The client ranks no heat itself: its order and each player's place are the view's
    `ranking` (here made to differ from the races); a view without one says less."""
    t, names = started(FormatRules(Format.HEATS, heat_size=4), 4)
    (match,) = t.live_matches()
    order = [PlayerId(p) for p in names]
    t.record_race(match.match_id, 1, RaceResult.from_order(order), now=3)
    view = view_of(t, names)
    assert view.rounds[0].matches[0].ranking == ["p1", "p2", "p3", "p4"]
    assert "round 1, R1-F n1 vs n2 vs n3 vs n4: winner n1, order n1, n2, n3, n4 (1 race)" in (
        progress_lines(None, view)
    )
    turned = with_matches(view, ranking=["p4", "p3", "p2", "p1"])
    assert "winner n1, order n4, n3, n2, n1 (1 race)" in "\n".join(progress_lines(None, turned))

    def heats_column(shown: TournamentModel) -> dict[str, str]:
        """Player name -> the heats column of the table (`R1-F 1st of 4 (out)`)."""
        rows = render_tournament(shown).split("\n\n")[1].splitlines()[2:]
        return {row.split()[1]: " ".join(row.split()[3:]) for row in rows}

    assert heats_column(view)["n4"] == "R1-F 4th of 4 (out)"
    assert heats_column(turned)["n4"] == "R1-F 1st of 4 (out)"
    assert heats_column(turned)["n1"] == "R1-F 4th of 4"
    older = with_matches(view, ranking=[])
    assert "winner n1, order unknown (1 race)" in "\n".join(progress_lines(None, older))
    assert heats_column(older)["n1"] == "R1-F ended"


def test_a_best_of_match_s_score_is_the_server_s_race_wins() -> None:
    """The client counts no race wins itself: a best-of match's score is the view's `wins`
    (here made to differ from the races); a view without them shows no score."""
    t, names = started(FormatRules(Format.SINGLE_ELIMINATION, best_of=3), 2)
    (match,) = t.live_matches()
    t.record_race(match.match_id, 1, RaceResult.from_order(list(match.players)), now=3)
    view = view_of(t, names)
    assert view.rounds[0].matches[0].wins == [1, 0]
    assert "W1-1 n1 vs n2 [ready 1-0]" in render_tournament(view)
    assert "W1-1 n1 vs n2: 1-0 (race 1 n1), race 2 to come" in render_tournament(view)
    turned = render_tournament(with_matches(view, wins=[0, 1]))
    assert "W1-1 n1 vs n2 [ready 0-1]" in turned
    assert "W1-1 n1 vs n2: 0-1 (race 1 n1), race 2 to come" in turned
    older = render_tournament(with_matches(view, wins=[]))
    assert "W1-1 n1 vs n2 [ready]" in older
    assert "W1-1 n1 vs n2: (race 1 n1), race 2 to come" in older


def test_a_bracket_line_gives_the_score_in_its_own_players_order() -> None:
    """A match's wins come in its players' order, which need not be the bracket's (a third
    place match): the bracket line, which names the bracket's players, orders the score so."""
    t, names = started(FormatRules(Format.SINGLE_ELIMINATION, best_of=3), 2)
    (match,) = t.live_matches()
    t.record_race(match.match_id, 1, RaceResult.from_order(list(match.players)), now=3)
    view = view_of(t, names)
    played = view.rounds[0].matches[0]
    assert (played.players, played.wins) == (["p1", "p2"], [1, 0])
    swapped = with_matches(view, players=["p2", "p1"], wins=[0, 1])  # the same score
    for shown in (view, swapped):
        assert "W1-1 n1 vs n2 [ready 1-0]" in render_tournament(shown)


def upset_final(best_of: int = 1) -> tuple[Tournament, dict[str, str], TournamentModel]:
    """Four players, n4 beats n1 and n2 beats n3: the final W2-1 is n4 (from the top half of
    the tree) against n2, the better seed; the final's first race is open as RACE-F."""
    t, names = started(FormatRules(Format.SINGLE_ELIMINATION, best_of=best_of), 4)
    for winner, loser in (("p4", "p1"), ("p2", "p3")):
        match = next(m for m in t.live_matches() if winner in m.players)
        while not match.is_ended:
            assert match.pending_race is not None
            order = [PlayerId(winner), PlayerId(loser)]
            t.record_race(match.match_id, match.pending_race, RaceResult.from_order(order), now=3)
    (final,) = t.live_matches()
    return t, names, view_of(t, names, 2, {(final.match_id, 1): RaceId("RACE-F")})


def test_a_match_names_its_players_in_one_order_everywhere() -> None:
    """The bracket's seats (n4 from the tree's top half) and the round's match (best seed
    first) differ: every line names them best seed first."""
    _, _, view = upset_final()
    bracket = next(m for m in view.bracket if m.match_id == "W2-1")
    assert bracket.players == ["p4", "p2"]  # the tree's order, as the server sends it
    text = render_tournament(view)
    assert text.splitlines()[3] == "W2-1 n2 vs n4 [playing]"
    assert "  W2-1 n2 vs n4: race 1 on RACE-F" in text
    assert "  W2-1 race 1: RACE-F  n2 vs n4" in text
    assert "n4 vs n2" not in text
    assert "round 2 started: W2-1 n2 vs n4" in progress_lines(None, view)


def test_a_match_whose_race_is_on_shows_playing() -> None:
    """`[playing]` while the view lists a race of the match as live; `[ready]` before its
    race is open; a best-of match's score either way."""
    t, names, view = upset_final()
    assert "W2-1 n2 vs n4 [playing]" in render_tournament(view)
    assert "W2-1 n2 vs n4 [ready]" in render_tournament(view_of(t, names))  # no race id yet

    t, names, view = upset_final(best_of=3)
    (final,) = t.live_matches()
    t.record_race(final.match_id, 1, RaceResult.from_order([PlayerId("p4"), PlayerId("p2")]), now=4)
    on = view_of(t, names, 3, {(final.match_id, 2): RaceId("RACE-F2")})
    assert "W2-1 n2 vs n4 [playing 0-1]" in render_tournament(on)
    assert "W2-1 n2 vs n4 [ready 0-1]" in render_tournament(view_of(t, names, 3))


def double_elimination(winner_of_gf: str) -> tuple[list[str], list[str]]:
    """Two players in a double elimination, n1 winning W1-1 and `winner_of_gf` the grand
    final: the bracket's grand-final lines before the grand final and after it."""
    t, names = started(FormatRules(Format.DOUBLE_ELIMINATION), 2)
    (first,) = t.live_matches()
    t.record_race(first.match_id, 1, RaceResult.from_order([PlayerId("p1"), PlayerId("p2")]), now=3)

    def finals() -> list[str]:
        lines = render_tournament(view_of(t, names)).splitlines()
        return [line for line in lines if line.startswith("step")]

    before = finals()
    (final,) = t.live_matches()
    assert final.match_id == "GF"
    loser = "p2" if winner_of_gf == "p1" else "p1"
    order = [PlayerId(winner_of_gf), PlayerId(loser)]
    t.record_race(final.match_id, 1, RaceResult.from_order(order), now=4)
    return before, finals()


def test_an_unused_bracket_reset_says_it_is_not_needed() -> None:
    before, after = double_elimination("p1")
    assert before == [
        "step 2: GF n1 vs n2 [ready]",
        "step 3: GF2 [waiting: only if n2 (losers' bracket) wins GF]",
    ]
    assert after == [
        "step 2: GF n1* vs n2 [played]",
        "step 3: GF2 not needed: n1 (winners' bracket) won GF",
    ]


def test_a_bracket_reset_the_losers_bracket_champion_forces_is_a_match() -> None:
    _, after = double_elimination("p2")
    assert after == ["step 2: GF n1 vs n2* [played]", "step 3: GF2 n1 vs n2 [ready]"]


def test_counts_are_singular_for_one() -> None:
    def summary(players: int) -> TournamentSummary:
        return TournamentSummary(
            tournament_id="t1",
            name="cup",
            game="klondike",
            format="swiss",
            phase="registration",
            players=players,
            round=0,
            champion=None,
        )

    assert (
        render_list([summary(1)]) == "t1  cup  swiss of klondike  registration  1 player  round 0"
    )
    in_check_in = summary(1).model_copy(update={"phase": "check_in"})
    assert "  check-in  " in render_list([in_check_in])  # words, not the wire's check_in
    assert "  0 players  " in render_list([summary(0)])
    assert "  2 players  " in render_list([summary(2)])
    more = render(TournamentList(tournaments=[summary(2)], more=1))
    assert more is not None and more.splitlines()[-1].startswith(
        "1 older finished tournament not listed: "
    )


def test_a_profile_without_results_says_so() -> None:
    empty = Profile(player_id=PlayerId("p1"), name="ann", ratings=[], recent=[])
    assert render_profile(empty) == "ann: no rated races yet"


def test_a_leaderboard_of_as_many_rows_as_the_server_lists_says_it_lists_no_more() -> None:
    rows = [
        LeaderboardRow(
            rank=n,
            player_id=PlayerId(f"p{n}"),
            name=f"r-{n}",
            rating=1500 - n,
            races=1,
            wins=0,
            provisional=True,
        )
        for n in range(1, 101)
    ]
    full = render_leaderboard(Leaderboard(game="klondike", entries=rows), 100)
    assert full.splitlines()[-1] == "the first 100 only: the server lists no more"
    cut = render_leaderboard(Leaderboard(game="klondike", entries=rows[:3]), 2).splitlines()
    assert len(cut) == 4 and cut[-1].startswith("more players not listed: ")


def long_names(count: int) -> dict[str, str]:
    """p1... named with 24 letters each, told apart by their first three."""
    return {f"p{i}": f"{chr(96 + i) * 3}-with-a-long-name-xyz" for i in range(1, count + 1)}


def test_a_bracket_within_a_width_cuts_its_names_not_its_lines() -> None:
    """At 60 columns a line of two long names wrapped and broke the tree."""
    t, _ = started(FormatRules(Format.DOUBLE_ELIMINATION), 8)
    names = long_names(8)
    view = view_of(t, names)
    whole = render_board(view).splitlines()
    assert max(len(line) for line in whole) > 60
    for width in (60, 50):
        fitted = render_board(view, width).splitlines()
        assert max(len(line) for line in fitted) <= width
        tree = whole.index("")
        for before, after in zip(whole[:tree], fitted[:tree], strict=True):
            # The same tree, match and state: only the names are shorter.
            assert after.split(" ")[:-4] == before.split(" ")[:-4]
            assert after.endswith(before.rsplit(" ", 1)[1])
            for word in after.split():
                if word.endswith("…"):
                    assert any(name.startswith(word[:-1]) for name in names.values())
        # The round's lines keep their names and race ids whole, on more lines.
        assert all(
            name in render_board(view, width).replace("\n      ", " ") for name in names.values()
        )
    assert render_board(view, 0) == "\n".join(whole)


def test_the_standings_within_a_width_cut_the_player_column() -> None:
    t, _ = started(FormatRules(Format.SWISS), 4)
    names = long_names(4)
    text = render_board(view_of(t, names), 50)
    table = text.split("\n\n")[0].splitlines()
    assert max(len(line) for line in table) <= 50
    assert table[0].split() == ["#", "player", "pts", "tb", "cards", "W-D-L"]
    assert all(row.split()[1].endswith("…") for row in table[2:])
    assert len({len(row) for row in table[2:]}) == 1  # the columns still line up


def test_the_log_says_a_corrected_result_and_who_dropped_out() -> None:
    """A correction of an ended match and a player out of the running tournament each get
    their line (the log kept the old winner, and said nothing of a drop)."""
    t, names = started(FormatRules(Format.SWISS), 6)
    admin = PlayerId("a")
    first, second, _ = t.live_matches()
    a, b = first.racing
    start = view_of(t, names, 0)
    t.record_race(first.match_id, 1, RaceResult.from_order([a, b]), now=3)
    before = view_of(t, names, 1)
    assert progress_lines(start, before) == [
        f"round 1, {first.match_id} {names[a]} vs {names[b]}: winner {names[a]} (1 race)"
    ]
    tie = RaceResult.from_groups([[a, b]])
    t.correct_result(admin, first.match_id, 1, tie, now=4)
    c, d = second.racing
    t.drop(c, actor=admin, now=5)
    t.drop(d, actor=d, now=6)
    lines = progress_lines(before, view_of(t, names, 2))
    assert lines[:3] == [
        f"{names[c]} dropped by the director",
        f"{names[d]} withdrawn",
        f"round 1, corrected: {first.match_id} {names[a]} vs {names[b]}: draw (1 race)",
    ]


def test_a_resume_comes_before_the_round_it_lets_start() -> None:
    t, names = started(FormatRules(Format.SINGLE_ELIMINATION), 4)
    admin = PlayerId("a")
    first, second = t.live_matches()
    t.record_race(first.match_id, 1, RaceResult.from_order(list(first.racing)), now=3)
    t.pause(admin, now=4)
    t.record_race(second.match_id, 1, RaceResult.from_order(list(second.racing)), now=5)
    before = view_of(t, names, 1)
    t.resume(admin, now=6)
    lines = progress_lines(before, view_of(t, names, 2))
    assert lines[0] == "tournament resumed", lines
    assert lines[1].startswith("round 2 started: "), lines


def test_a_swiss_says_the_rounds_it_plays_when_fewer_than_asked() -> None:
    """`--rounds 10` with 4 players plays 3 rounds: the view says so before the start (as
    far as the players registered go) and once the field is seeded."""
    rules = FormatRules(Format.SWISS, swiss_rounds=10)
    settings = TournamentSettings(rules, check_in_required=False)
    admin = PlayerId("a")
    t = Tournament.create(
        TournamentId("t1"), "klondike", settings, admin=admin, now=0, deal_source=lambda r, n: "7"
    )
    names = {f"p{i}": f"n{i}" for i in range(1, 5)}
    for p in names:
        t.register(PlayerId(p), now=1)
    lines = render_tournament(view_of(t, names)).splitlines()
    assert lines[1] == (
        "rounds: 3 of the 10 asked (a Swiss of 4 players registered so far plays at most 3,"
        " so that nobody meets anyone twice)"
    )
    t.start(admin, now=2)
    assert render_tournament(view_of(t, names)).splitlines()[1] == (
        "rounds: 3 of the 10 asked (a Swiss of 4 players plays at most 3, so that nobody"
        " meets anyone twice)"
    )
    automatic, _ = started(FormatRules(Format.SWISS), 5)
    view = view_of(automatic, {f"p{i}": f"n{i}" for i in range(1, 6)})
    assert render_tournament(view).splitlines()[1] == "rounds: 3 (automatic, for 5 players)"
    elimination, names = started(FormatRules(Format.SINGLE_ELIMINATION), 4)
    assert "rounds: " not in render_tournament(view_of(elimination, names))


def test_the_commands_the_text_names_name_a_server_other_than_the_default() -> None:
    """`live (solrace watch RACE)`, `solrace tournament leaderboard ...` and `solrace
    tournament list --skip-finished N` left `--server` out: pasted by a player of a server on
    another port, they went to the default one (`cannot reach ws://127.0.0.1:8765`)."""
    t, names = started(FormatRules(Format.SINGLE_ELIMINATION), 2)
    (match,) = t.live_matches()
    view = view_of(t, names, race_ids={(match.match_id, 1): RaceId("r1")})
    assert "live (solrace watch RACE):" in render_tournament(view).splitlines()
    other = "ws://127.0.0.1:9000"
    live = "live (solrace watch RACE --server ws://127.0.0.1:9000):"
    assert live in render_tournament(view, server=other).splitlines()
    rows = [
        LeaderboardRow(
            rank=n, player_id=PlayerId(f"p{n}"), name=f"r-{n}", rating=1500, races=1, wins=0,
            provisional=True,
        )
        for n in (1, 2)
    ]  # fmt: skip
    board = render_leaderboard(Leaderboard(game="klondike", entries=rows), 1, server=other)
    assert board.splitlines()[-1] == (
        "more players not listed: solrace tournament --server ws://127.0.0.1:9000 leaderboard "
        "klondike --limit 100 lists up to 100"
    )
    summary = TournamentSummary(
        tournament_id=TournamentId("t1"), name="cup", game="klondike", format="swiss",
        phase="finished", players=2, round=2, champion=None,
    )  # fmt: skip
    listed = render(TournamentList(tournaments=[summary], more=1), server=other)
    assert listed is not None and listed.splitlines()[-1] == (
        "1 older finished tournament not listed: "
        "solrace tournament --server ws://127.0.0.1:9000 list --skip-finished 1"
    )
