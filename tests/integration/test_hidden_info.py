"""Play whole races and scan every frame every client received for hidden information:
no face-down card, no stock card before it is turned, no game number before the end, no
opponent's card; every board and ack must be exactly the engine's view for its audience."""

from __future__ import annotations

import random
import re
from typing import Any

from solrace.engine import Audience, BoardView, PileView, board_from_view, replay, view_piles
from solrace.server.app import App
from solrace.server.protocol.codec import unpack_map
from solrace.server.protocol.messages import (
    Board,
    GetReplay,
    MakeMove,
    MoveAck,
    MoveRejected,
    PileModel,
    RaceFinished,
    Replay,
    ReplayModel,
    Resign,
    Watch,
)
from solrace.server.protocol.views import board_for, pile_models
from tests.integration.conftest import ClientFactory
from tests.integration.helpers import create_race, seat_and_start
from tests.integration.wsclient import Client

CARD = re.compile(r"^[A2-9TJQK][CSHD]$")
CARD_IN_TEXT = re.compile(r"\b[A2-9TJQK][CSHD]\b")
#: Moves Klondike always refuses whose explanation could name a hidden card (the stock's).
PROBES = ("w-s", "s-f0", "s-t0", "t6-s")


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


class Racer:
    """A client that picks moves from what it can see (the engine's view of its board)."""

    def __init__(self, client: Client, race_id: str, game: str, seed: int) -> None:
        self.client = client
        self.race_id = race_id
        self.game = game
        self.rng = random.Random(seed)
        self.piles: dict[str, PileModel] = {}
        self.seq = 0

    def see(self, piles: list[PileModel]) -> None:
        self.piles.update({p.name: p for p in piles})

    def choose(self) -> str:
        visible = BoardView(
            game_id=self.game,
            piles={n: PileView(n, p.down, tuple(p.cards)) for n, p in self.piles.items()},
            round=1,
            phase="play",
            base_rank=None,
            progress=(0, 0),
            won=False,
            stuck=False,
        )
        moves = board_from_view(visible).legal_moves()
        to_foundation = [m for m in moves if m.dst.startswith("f")]
        pool = to_foundation or [m for m in moves if not m.src.startswith("f")] or moves
        return str(self.rng.choice(pool))

    async def play(self, count: int) -> None:
        [board] = [m for m in self.client.received if isinstance(m, Board)]
        self.see(board.board.piles)
        for turn in range(count):
            if turn % 8 == 0:  # refused moves too: their reasons must not name hidden cards
                for probe in PROBES:
                    self.seq += 1
                    await self.client.send(MakeMove(race_id=self.race_id, seq=self.seq, move=probe))
                    await self.client.expect(MoveRejected, lambda m, s=self.seq: m.seq == s)
            self.seq += 1
            await self.client.send(MakeMove(race_id=self.race_id, seq=self.seq, move=self.choose()))
            ack = await self.client.expect(MoveAck, lambda m, s=self.seq: m.seq == s)
            self.see(ack.piles)


def check_frames(who: Client, race: ReplayModel, spectator: bool) -> int:
    """Every frame `who` received about the race; returns how many boards were checked."""
    number = race.game_number.encode()
    moves = {r.player_id: [m.move for m in r.moves] for r in race.racers}
    finished = False
    checked = 0
    shown: set[str] = set()  # every card `who` was shown so far
    for frame, message in zip(who.frames, who.received, strict=True):
        if isinstance(message, RaceFinished):
            finished = True
        if not finished:
            assert number not in frame, "the game number leaked before the end"
        raw = unpack_map(frame)
        if isinstance(message, Board):
            if not spectator:
                assert message.player_id == who.player_id, "a racer got another racer's board"
            game = replay(race.game, race.game_number, moves[message.player_id][: message.ply])
            audience = Audience.SPECTATOR if spectator else Audience.PLAYER
            assert message.board == board_for(game, audience)
            stock = [p for p in message.board.piles if p.name == "stock"]
            assert all(not p.cards for p in stock), "a stock card was shown"
            shown.update(card for p in message.board.piles for card in p.cards)
            checked += 1
        elif isinstance(message, MoveAck):
            assert not spectator
            game = replay(race.game, race.game_number, moves[who.player_id][: message.ply + 1])
            names = [p.name for p in message.piles]
            assert message.piles == pile_models(view_piles(game, names))
            shown.update(card for p in message.piles for card in p.cards)
            checked += 1
        elif isinstance(message, MoveRejected):
            named = set(CARD_IN_TEXT.findall(message.reason))
            assert named <= shown, f"{message.move!r} refused naming unseen {named - shown}"
            checked += 1
        elif not isinstance(message, Replay):
            cards = [s for s in _strings(raw) if CARD.match(s)]
            assert not cards, f"{message.type} carries cards {cards}"
    return checked


async def test_no_frame_reveals_hidden_information(server: App, client: ClientFactory) -> None:
    alice, bob = await client("alice"), await client("bob")
    watcher = await client()
    await watcher.hello()
    race_id = await create_race(alice, game_number=None)  # a secret ranked-style number
    await watcher.send(Watch(race_id=race_id))
    await seat_and_start(race_id, [bob], [alice, bob])
    racers = [Racer(alice, race_id, "klondike", 1), Racer(bob, race_id, "klondike", 2)]
    for racer in racers:
        await racer.play(40)
    for each in (alice, bob):
        await each.send(Resign(race_id=race_id))
    for each in (alice, bob, watcher):
        await each.expect(RaceFinished)
    # Spectators get the final boards once the race is over.
    await watcher.expect(Board, lambda m: m.player_id == bob.player_id and m.ply == 40)
    await alice.send(GetReplay(race_id=race_id))
    race = (await alice.expect(Replay)).replay
    assert len(race.game_number) >= 17

    assert check_frames(alice, race, spectator=False) >= 41
    assert check_frames(bob, race, spectator=False) >= 41
    assert check_frames(watcher, race, spectator=True) >= 2
