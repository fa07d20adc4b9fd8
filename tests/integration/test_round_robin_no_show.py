"""A round robin on a real node: a player who never comes forfeits as a no-show on the
service's tick and is withdrawn, so the rounds after give his scheduled opponents a bye
instead of a race that waits out the no-show grace for him."""

from __future__ import annotations

from solrace.server.protocol.messages import RaceStarted, Resign
from solrace.server.protocol.tournament_messages import TournamentRace, TournamentView
from tests.integration.conftest import ServerFactory
from tests.integration.no_shows import GHOST, started_without_the_ghost
from tests.integration.wsclient import Client


async def resign_race(round_number: int, first: Client, second: Client) -> None:
    """Both players of their race of round `round_number` resign it once it has started."""
    notice = await first.expect(TournamentRace, lambda m: m.round == round_number)
    await second.expect(TournamentRace, lambda m: m.race_id == notice.race_id)
    for client in (first, second):
        await client.expect(RaceStarted, lambda m: m.race_id == notice.race_id)
        await client.send(Resign(race_id=notice.race_id))


async def test_a_round_robin_player_who_never_comes_is_not_paired_again(
    start_server: ServerFactory,
) -> None:
    """Four players seeded in the order they joined, three rounds: ann-ghost and bob-cid,
    then ann-cid and bob-ghost, then ann-bob and cid-ghost. The ghost disconnects before the
    start and forfeits round 1 once the grace (1 s) runs out. Round 2 then pairs ann-cid
    and gives bob a bye, round 3 ann-bob and cid's bye: before, each paired the ghost again
    and his opponent won only when the grace ran out once more."""
    names = ("ann", "bob", "cid", GHOST)
    async with started_without_the_ghost(start_server, "round_robin", names, no_show_grace_s=1) as (
        admin,
        clients,
        ids,
        running,
    ):
        assert [m.players for m in running.tournament.rounds[0].matches] == [
            [ids["ann"], ids["ghost"]],
            [ids["bob"], ids["cid"]],
        ]
        await resign_race(1, clients["bob"], clients["cid"])

        second = await admin.expect(TournamentView, lambda m: len(m.tournament.rounds) == 2)
        model = second.tournament
        [anns_match] = [m for m in model.rounds[0].matches if ids["ann"] in m.players]
        assert anns_match.forfeited == [ids["ghost"]] and anns_match.winner == ids["ann"]
        assert model.dropped == [ids["ghost"]]
        assert [m.players for m in model.rounds[1].matches] == [[ids["ann"], ids["cid"]]]
        assert model.rounds[1].byes == [ids["bob"]]
        await resign_race(2, clients["ann"], clients["cid"])

        third = await admin.expect(TournamentView, lambda m: len(m.tournament.rounds) == 3)
        assert [m.players for m in third.tournament.rounds[2].matches] == [[ids["ann"], ids["bob"]]]
        assert third.tournament.rounds[2].byes == [ids["cid"]]
        await resign_race(3, clients["ann"], clients["bob"])

        final = await admin.expect(TournamentView, lambda m: m.tournament.phase == "finished")
        ghost_line = next(s for s in final.tournament.standings if s.player_id == ids["ghost"])
        assert ghost_line.is_dropped and ghost_line.points == 0
        assert final.tournament.standings[-1].player_id == ids["ghost"]
