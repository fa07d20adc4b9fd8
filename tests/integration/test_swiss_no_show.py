"""A Swiss on a real node: a player who never comes forfeits as a no-show on the service's
tick and is withdrawn, so the next round neither pairs him nor hands him the bye."""

from __future__ import annotations

from solrace.server.protocol.messages import RaceStarted, Resign
from solrace.server.protocol.tournament_messages import TournamentRace, TournamentView
from tests.integration.conftest import ServerFactory
from tests.integration.no_shows import GHOST, started_without_the_ghost


async def test_a_swiss_player_who_never_comes_is_not_paired_again_nor_given_the_bye(
    start_server: ServerFactory,
) -> None:
    """Five players seeded in the order they joined: round 1 is ann-cid, bob-ghost and eve's
    bye. The ghost disconnects before the start; ann and cid resign their race. The ghost
    is then last (no point, no card; cid, or ann, has as few points but a better seed) and
    has had no bye, so the round 2 he was paired into gave it to him."""
    names = ("ann", "bob", "cid", GHOST, "eve")
    async with started_without_the_ghost(
        start_server, "swiss", names, swiss_rounds=3, no_show_grace_s=1
    ) as (admin, clients, ids, running):
        first = running.tournament.rounds[0]
        assert [m.players for m in first.matches] == [
            [ids["ann"], ids["cid"]],
            [ids["bob"], ids["ghost"]],
        ]
        assert first.byes == [ids["eve"]]
        notice = await clients["ann"].expect(TournamentRace)
        for name in ("ann", "cid"):
            await clients[name].expect(RaceStarted, lambda m: m.race_id == notice.race_id)
            await clients[name].send(Resign(race_id=notice.race_id))

        second = await admin.expect(TournamentView, lambda m: len(m.tournament.rounds) == 2)
        model = second.tournament
        [bobs_match] = [m for m in model.rounds[0].matches if ids["bob"] in m.players]
        assert bobs_match.forfeited == [ids["ghost"]] and bobs_match.winner == ids["bob"]
        round_two = model.rounds[1]
        assert round_two.byes == []  # four players are still in
        seated = sorted(p for m in round_two.matches for p in m.players)
        assert seated == sorted(ids[name] for name in ("ann", "bob", "cid", "eve"))
        assert model.dropped == [ids["ghost"]]
        ghost_line = next(s for s in model.standings if s.player_id == ids["ghost"])
        assert ghost_line.is_dropped and ghost_line.points == 0
