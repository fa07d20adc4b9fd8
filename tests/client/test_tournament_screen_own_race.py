"""The tournament screen and the player's own race, and a tournament the server does not know,
driven by Textual's pilot against a real server on loopback. Nobody plays: the seated players
stay idle, so every step waits on a pushed view or a screen change, never on a race's pace."""

from __future__ import annotations

from solrace.client.race_screen import RaceScreen
from solrace.client.tournament_screen import TournamentApp, TournamentScreen
from solrace.client.tui import PlayApp
from tests.waiting import eventually

from .conftest import Opened
from .test_tournament_screen import act, create, register


async def test_enter_ctrl_r_and_the_title_agree_on_the_player_s_own_race(opened: Opened) -> None:
    """The title said `you: playing W1-2 race 1 (RACE, Enter)` while Enter watched the
    highlighted row, another match's race; Ctrl+R ("back to your race") did nothing there."""
    admin = await opened.open("director")
    tid = await create(admin, "single_elimination")
    # Seeded in this order: W1-1 ann vs dee, W1-2 pat vs cid (the second live row).
    pat = (await register(opened, tid, ["ann", "pat", "cid", "dee"]))[1]
    app = PlayApp(pat, tournament_id=tid)
    async with app.run_test(size=(80, 24)) as pilot:
        await eventually(lambda: isinstance(app.screen, TournamentScreen), what="the screen")
        screen = app.screen
        assert isinstance(screen, TournamentScreen)
        await act(admin, tid, "start")
        await eventually(lambda: isinstance(app.screen, RaceScreen), what="pat's race opens")
        assert isinstance(app.screen, RaceScreen)
        own = app.screen.race_id
        view = pat.state.tournaments[tid]
        assert [live.match_id for live in view.live if live.race_id == own] == ["W1-2"]

        async def back_on_the_tournament() -> None:
            app.back_to_tournament(own)  # `l` on the race screen
            await eventually(lambda: app.screen is screen, what="the tournament again")
            await eventually(lambda: len(screen.live_race_ids) == 2, what="two live matches")

        await back_on_the_tournament()
        assert f"you: playing W1-2 race 1 ({own}, Ctrl+R)" in screen.title_text
        assert screen.live_race_ids.index(own) == 1  # not the first row
        await pilot.press("enter")  # the cursor is on the player's own match
        await eventually(
            lambda: isinstance(app.screen, RaceScreen) and app.screen.race_id == own,
            what="Enter opens pat's race",
        )

        await back_on_the_tournament()
        await pilot.press("up")  # another match highlighted: Ctrl+R still means pat's race
        await pilot.press("ctrl+r")
        await eventually(
            lambda: isinstance(app.screen, RaceScreen) and app.screen.race_id == own,
            what="Ctrl+R opens pat's race",
        )


async def test_a_spectator_is_not_offered_ctrl_r(opened: Opened) -> None:
    admin = await opened.open("director")
    tid = await create(admin, "single_elimination")
    app = TournamentApp(await opened.open(None), tid)
    async with app.run_test(size=(80, 24)):
        await eventually(lambda: isinstance(app.screen, TournamentScreen), what="the screen")
        screen = app.screen
        assert isinstance(screen, TournamentScreen)
        await eventually(lambda: "registered: nobody yet" in screen.body_text, what="the view")
        assert screen.check_action("own_race", ()) is False


async def test_an_unknown_tournament_says_the_refusal_on_the_screen(opened: Opened) -> None:
    """It said "waiting for the server…" for ever, the refusal only in a toast."""
    app = TournamentApp(await opened.open(None), "tnope")
    async with app.run_test(size=(80, 24)):
        await eventually(lambda: isinstance(app.screen, TournamentScreen), what="the screen")
        screen = app.screen
        assert isinstance(screen, TournamentScreen)
        await eventually(lambda: "refused" in screen.title_text, within=5, what="the refusal")
        assert screen.title_text.splitlines() == [
            "tournament tnope: refused by the server",
            "no tournament 'tnope' (unknown_tournament); F5 asks again",
        ]
        # Not asked again after a reconnect: the connection watches only what the server showed.
        assert "tnope" not in app.session.conn.watched_tournaments
