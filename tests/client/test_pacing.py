"""Bots keep within the server's default rate budget (`pacing.py`): the bucket alone, and two
`--delay 0` bots racing 120 moves each on a server with the default budget, never closed for
flooding (1008). A person typing faster than the budget is told so in plain words."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from solrace.client.bots import Bot
from solrace.client.link_closes import close_text
from solrace.client.pacing import SERVER_RATE_CAPACITY, SERVER_RATE_REFILL_PER_S, RateBudget
from solrace.client.strategy import make_strategy
from solrace.server.app import App
from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.messages import RateBudgetInfo

from .conftest import server_settings
from .process import Child
from .test_plain import Opponent


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_budget_lends_its_capacity_then_its_refill() -> None:
    clock = FakeClock()
    budget = RateBudget(capacity=3, refill_per_s=2, clock=clock)
    for _ in range(3):
        assert budget.wait_s() == 0
        budget.spend()
    assert budget.wait_s() == pytest.approx(0.5)
    clock.now = 0.25
    assert budget.wait_s() == pytest.approx(0.25)
    clock.now = 10.0  # a long pause refills to the capacity, no further
    assert budget.wait_s() == 0 and budget.bucket.credits_at(clock.now) == 3


def test_the_budget_stays_inside_the_servers() -> None:
    budget = RateBudget.for_server()
    assert (budget.capacity, budget.refill_per_s) == (90, 4.5)  # of the defaults 100 and 5
    said = RateBudgetInfo(capacity=40, refill_per_s=0.5)  # what a server's welcome says
    budget = RateBudget.for_server(said)
    assert (budget.capacity, budget.refill_per_s) == (30, 0.25)


async def test_a_bot_paces_to_the_budget_its_server_s_welcome_says(tmp_path: Path) -> None:
    app = await started(tmp_path, rate_capacity=500.0, rate_refill_per_s=50.0)
    try:
        bot = Bot(f"ws://127.0.0.1:{app.port}", "pacer", make_strategy("greedy", seed=1), delay_s=0)
        assert bot.budget.capacity == SERVER_RATE_CAPACITY - 10  # before: the defaults
        await bot.connect()
        assert (bot.budget.capacity, bot.budget.refill_per_s) == (490, 49.5)
        await bot.close()
    finally:
        await app.stop()


async def started(settings_dir: Path, **overrides: object) -> App:
    app = App(server_settings(settings_dir, **overrides))
    await app.start()
    return app


@pytest.fixture
async def default_budget_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[App]:
    """The client tests' server with the server's default rate budget (and nothing in the
    environment that tells the bots another)."""
    monkeypatch.delenv("SOLRACE_RATE_CAPACITY")
    monkeypatch.delenv("SOLRACE_RATE_REFILL_PER_S")
    app = await started(
        tmp_path / "server",
        rate_capacity=SERVER_RATE_CAPACITY,
        rate_refill_per_s=SERVER_RATE_REFILL_PER_S,
    )
    try:
        yield app
    finally:
        await app.stop()


def rate_closes(app: App) -> float:
    value = app.metrics.registry.get_sample_value("solrace_rate_limit_closes_total")
    assert value is not None
    return value


@pytest.mark.slow
async def test_bots_without_delay_are_never_closed_for_flooding(
    default_budget_server: App, tmp_path: Path
) -> None:
    url = f"ws://127.0.0.1:{default_budget_server.port}"
    # A fixed deal and seed: both random bots make 120 moves, more than the 100 credits.
    bots = await Child.start(
        tmp_path,
        *("bot", "--server", url, "--create", "klondike", "--seats", "2", "--count", "2"),
        *("--delay", "0", "--start", "--strategy", "random", "--seed", "1"),
        *("--game-number", "1", "--max-moves", "120"),
    )
    try:
        assert await bots.finish(90) == 0
    finally:
        await bots.kill()
    assert bots.output.count("move cap of 120 reached") == 2, bots.output
    assert rate_closes(default_budget_server) == 0


def test_a_1008_is_said_as_too_fast() -> None:
    assert close_text(1008) == "too fast: the server's rate limit closed the link (1008)"


async def test_plain_mode_says_too_fast_when_the_rate_limit_closes_it(tmp_path: Path) -> None:
    app = await started(tmp_path / "small", rate_capacity=15.0, rate_refill_per_s=1.0)
    url = f"ws://127.0.0.1:{app.port}"
    player = await Child.start(tmp_path, "play", "--plain", "--server", url, "--name", "pat")
    rival: Opponent | None = None
    try:
        await player.expect("connected to")
        await player.send("create klondike 2 600")
        race_id = RaceId((await player.expect("created")).split()[1])
        rival = await Opponent.open(url, "rival")
        await rival.session.join_race(race_id)
        for _ in range(30):
            await player.send("deal")
        line = await player.expect("reconnecting…")
        assert line == "reconnecting… (too fast: the server's rate limit closed the link (1008))"
        await player.expect("reconnected")
        assert rate_closes(app) >= 1
    finally:
        await player.kill()
        if rival is not None:
            await rival.close()
        await app.stop()
