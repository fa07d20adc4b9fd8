"""What each audience sees (engine/views.py), checked against the full board."""

from __future__ import annotations

import dataclasses
import random
import re
from collections.abc import Iterator

import pytest

from solrace.engine import (
    GAME_IDS,
    Audience,
    BoardView,
    EngineError,
    Game,
    ProgressView,
    deal,
    game_class,
    shown_cards,
    view,
    view_piles,
)

SEEDS = (1, 2, 3)


def boards(game_id: str, seed: int, plies: int = 120) -> Iterator[Game]:
    """The board of a seeded random playout, after the deal and after every action."""
    rng = random.Random(seed)
    game = deal(game_id, str(rng.randrange(1, 10**18)))
    yield game
    for _ in range(plies):
        moves = game.legal_moves()
        if not moves:
            return
        game.play(rng.choice(moves))
        yield game


def player_view(game: Game) -> BoardView:
    seen = view(game, "player")
    assert isinstance(seen, BoardView)
    return seen


def with_hidden_cards_moved(game: Game) -> Game:
    """The same board with every hidden card (face down or in the stock) moved one place on."""
    texts = game.pile_texts()
    tokens = {name: text.split() for name, text in texts.items()}
    hidden = [(name, i) for name, ts in tokens.items() for i, t in enumerate(ts) if t[0] == "#"]
    values = [tokens[name][i] for name, i in hidden]
    for (name, i), token in zip(hidden, values[1:] + values[:1], strict=True):
        tokens[name][i] = token
    moved = game_class(game.game_id).from_piles(
        {name: " ".join(ts) for name, ts in tokens.items()}, round_=game.round
    )
    return moved


def without_stuck(seen: BoardView) -> BoardView:
    return dataclasses.replace(seen, stuck=False)


@pytest.mark.parametrize("game_id", GAME_IDS)
def test_player_view_shows_exactly_the_face_up_cards(game_id: str) -> None:
    for seed in SEEDS:
        for game in boards(game_id, seed):
            seen = player_view(game)
            texts = game.pile_texts()
            assert set(seen.piles) == set(texts)
            for name, text in texts.items():
                tokens = text.split()
                pile = seen.piles[name]
                assert pile.name == name
                assert pile.down == sum(1 for t in tokens if t.startswith("#"))
                assert pile.cards == tuple(t for t in tokens if not t.startswith("#"))
                assert shown_cards(game.pile_by_name(name)) == (pile.down, list(pile.cards))
            assert seen.piles["stock"].cards == ()
            assert seen.piles["stock"].down == len(texts["stock"].split())


@pytest.mark.parametrize("game_id", GAME_IDS)
def test_player_view_does_not_depend_on_hidden_cards(game_id: str) -> None:
    moved_boards = 0
    for seed in SEEDS:
        for ply, game in enumerate(boards(game_id, seed)):
            if ply % 10:
                continue
            moved = with_hidden_cards_moved(game)
            if moved.pile_texts() != game.pile_texts():
                moved_boards += 1
            # "stuck" is derived from the stock in multi-pass games (see the report of issue 2);
            # everything else must be identical whatever the hidden cards are.
            assert without_stuck(player_view(moved)) == without_stuck(player_view(game))
    assert moved_boards > 3


@pytest.mark.parametrize("game_id", GAME_IDS)
def test_opponent_view_is_progress_only(game_id: str) -> None:
    fields = {f.name for f in dataclasses.fields(ProgressView)}
    assert fields == {"on_foundations", "total", "won", "stuck"}
    for game in boards(game_id, 7, plies=60):
        seen = view(game, Audience.OPPONENT)
        assert isinstance(seen, ProgressView)
        on, total = game.progress()
        assert seen == ProgressView(on, total, game.is_won(), game.is_stuck())


@pytest.mark.parametrize("game_id", GAME_IDS)
def test_spectator_sees_what_the_player_sees(game_id: str) -> None:
    for game in boards(game_id, 11, plies=60):
        assert view(game, "spectator") == view(game, "player")
        assert view(game, Audience.SPECTATOR) == view(game, Audience.PLAYER)


def test_board_view_carries_the_scalar_state() -> None:
    game = deal("terrace", "5")
    seen = player_view(game)
    assert (seen.game_id, seen.round, seen.phase, seen.base_rank) == (
        "terrace",
        1,
        "choose_base",
        None,
    )
    assert seen.progress == (0, 104)
    game.play(game.legal_moves()[0])
    seen = player_view(game)
    assert seen.phase == "play"
    assert seen.base_rank == "A23456789TJQK"[game.base_rank() or 0]
    assert seen.progress == (1, 104)


def test_view_piles_projects_only_the_named_piles() -> None:
    game = deal("klondike", "1")
    game.play("deal")
    piles = view_piles(game, game.touched_piles())
    assert set(piles) == {"stock", "waste"}
    assert piles["stock"].cards == ()
    assert piles["waste"] == player_view(game).piles["waste"]


def test_unknown_audience_is_refused() -> None:
    with pytest.raises(ValueError, match="admin"):
        view(deal("klondike", "1"), "admin")


CARD_TEXT = re.compile(r"\b[A2-9TJQK][CDHS]\b")


@pytest.mark.parametrize("game_id", GAME_IDS)
def test_a_refused_move_names_only_cards_its_player_sees(game_id: str) -> None:
    """Every card move the rules refuse, on every board of a playout, is explained without
    a face-down card: the stock's top card once showed in `w-s` and `s-f0` refusals."""
    refusals = 0
    for game in boards(game_id, seed=4, plies=40):
        seen = {card for pile in player_view(game).piles.values() for card in pile.cards}
        for src in game.piles:
            for dst in game.piles:
                for n in range(1, min(len(src.cards), 4) + 1):
                    text = f"{src.short}-{dst.short}" + (f":{n}" if n > 1 else "")
                    try:
                        game.play(text)
                    except EngineError as exc:
                        refusals += 1
                        hidden = set(CARD_TEXT.findall(str(exc))) - seen
                        assert not hidden, f"{text}: {exc} names {hidden}"
                    else:
                        game.undo()
    assert refusals > 100
