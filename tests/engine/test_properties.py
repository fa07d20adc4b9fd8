"""Property tests (hypothesis): random legal playouts of every game keep every promise.

Cards are conserved, undo restores exactly, replay is deterministic, move text round-trips, the
rules' invariants hold after every action, ``legal_moves`` and ``is_legal`` agree, a player's view
lists the same legal moves as the full board, and copies are independent. Derandomized: the same
examples run every time.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from itertools import pairwise

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solrace.engine import (
    GAME_IDS,
    Game,
    Move,
    board_from_view,
    deal,
    game_class,
    replay,
    view,
)
from solrace.engine.cards import COLOR, RANK, SUIT
from solrace.engine.games.british_square import BritishSquare
from solrace.engine.games.colorado import Colorado
from solrace.engine.games.klondike import Klondike
from solrace.engine.games.terrace import Terrace
from solrace.engine.views import BoardView

PROPERTY_SETTINGS = settings(
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=8,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

GAME_NUMBERS = st.one_of(
    st.integers(1, 31999).map(str),
    st.integers(32000, 10**25).map(str),
    st.integers(1, 2**33 - 1).map(lambda n: f"ms{n}"),
)
# One entry per action: which legal move to take (modulo their number).
CHOICES = st.lists(st.integers(0, 2**16), min_size=30, max_size=250)


def pick(game: Game, choice: int) -> Move | None:
    """A legal move chosen by ``choice``; one time in three, a foundation move if there is one."""
    moves = game.legal_moves()
    if not moves:
        return None
    if choice % 3 == 0:
        # Plain random play rarely gets far: lean towards the foundations to reach late game.
        upward = [m for m in moves if m.dst.startswith("f") and not m.src.startswith("f")]
        if upward:
            return upward[(choice // 3) % len(upward)]
    return moves[choice % len(moves)]


def playout_on(game: Game, choices: list[int]) -> Iterator[Game]:
    """Yield the board after every action chosen by ``choices`` (until no move is left)."""
    for choice in choices:
        move = pick(game, choice)
        if move is None:
            return
        game.play(move)
        yield game


def playout(game_id: str, number: str, choices: list[int]) -> Iterator[Game]:
    """Yield the board after the deal and after every random legal action."""
    game = deal(game_id, number)
    yield game
    yield from playout_on(game, choices)


# -- invariants ------------------------------------------------------------------------------


def assert_cards_conserved(game: Game) -> None:
    cards = Counter(c for p in game.piles for c in p.cards)
    assert cards == Counter({c: game.decks for c in range(52)})


def assert_face_down_only_under_face_up(game: Game) -> None:
    for p in game.piles:
        if p is game.stock:
            continue
        if isinstance(game, Klondike) and p in game.tableau:
            assert p.down < len(p.cards) or not p.cards, p
        else:
            assert p.down == 0, p


def assert_klondike_rules(game: Klondike) -> None:
    for i, f in enumerate(game.foundations):
        assert f.cards == [13 * i + r for r in range(len(f.cards))], f
    for p in game.tableau:
        up = p.cards[p.down :]
        for lower, upper in pairwise(up):
            assert RANK[lower] == RANK[upper] + 1 and COLOR[lower] != COLOR[upper], p
    assert game.round >= 1
    if game.max_rounds > 0:
        assert game.round <= game.max_rounds


def assert_colorado_rules(game: Colorado) -> None:
    for i, f in enumerate(game.foundations):
        if i < 4:
            assert f.cards == [13 * i + r for r in range(len(f.cards))], f
        else:
            assert f.cards == [13 * (i - 4) + 12 - r for r in range(len(f.cards))], f
    assert len(game.waste.cards) <= 1
    if game.stock.cards:
        # Auto deal keeps the waste full, so an emptied pile was always refilled.
        assert game.waste.cards
        assert all(p.cards for p in game.tableau)


def _is_terrace_build(lower: int, upper: int) -> bool:
    return COLOR[lower] != COLOR[upper] and RANK[lower] == (RANK[upper] + 1) % 13


def assert_terrace_rules(game: Terrace, reserve: list[int]) -> None:
    base = game.base_rank()
    assert (game.phase() == "choose_base") == (base is None)
    for i, f in enumerate(game.foundations):
        if not f.cards:
            continue
        assert SUIT[f.cards[0]] == i >> 1 and RANK[f.cards[0]] == base, f
        assert len(f.cards) <= 13, f
        for lower, upper in pairwise(f.cards):
            assert RANK[upper] == (RANK[lower] + 1) % 13, f
            if game.in_suit:
                assert SUIT[upper] == SUIT[lower], f
            else:
                assert COLOR[upper] != COLOR[lower], f
    for p in game.tableau:
        for lower, upper in pairwise(p.cards):
            assert _is_terrace_build(lower, upper), p
    assert game.reserves[0].cards == reserve[: len(game.reserves[0].cards)]
    if base is None:
        assert not game.waste.cards and all(not p.cards for p in game.tableau[4:])
        return
    if not game.waste.cards:
        assert not game.stock.cards
    if game.refills and not all(p.cards for p in game.tableau):
        assert not game.waste.cards and not game.stock.cards


def assert_british_square_rules(game: BritishSquare) -> None:
    pattern = list(range(13)) + list(range(12, -1, -1))
    for i, f in enumerate(game.foundations):
        assert f.cards == [13 * i + r for r in pattern[: len(f.cards)]], f
    for p in game.tableau:
        if len(p.cards) < 2:
            continue
        step = RANK[p.cards[1]] - RANK[p.cards[0]]
        assert step in (1, -1), p
        for lower, upper in pairwise(p.cards):
            assert SUIT[upper] == SUIT[lower] and RANK[upper] - RANK[lower] == step, p


def assert_rules_hold(game: Game, reserve: list[int]) -> None:
    assert_cards_conserved(game)
    assert_face_down_only_under_face_up(game)
    if isinstance(game, Klondike):
        assert_klondike_rules(game)
    elif isinstance(game, Colorado):
        assert_colorado_rules(game)
    elif isinstance(game, Terrace):
        assert_terrace_rules(game, reserve)
    else:
        assert isinstance(game, BritishSquare)
        assert_british_square_rules(game)
    on, total = game.progress()
    assert total == 52 * game.decks
    assert game.is_won() == (on == total)


# -- properties ------------------------------------------------------------------------------


@pytest.mark.parametrize("game_id", GAME_IDS)
@PROPERTY_SETTINGS
@given(number=GAME_NUMBERS, choices=CHOICES)
def test_random_play_conserves_cards_and_keeps_the_rules(
    game_id: str, number: str, choices: list[int]
) -> None:
    reserve: list[int] = []
    for game in playout(game_id, number, choices):
        if not reserve and game.reserves:
            reserve = game.reserves[0].cards[:]
        assert_rules_hold(game, reserve)


@pytest.mark.parametrize("game_id", GAME_IDS)
@PROPERTY_SETTINGS
@given(number=GAME_NUMBERS, choices=CHOICES)
def test_undo_restores_exactly_and_replay_is_deterministic(
    game_id: str, number: str, choices: list[int]
) -> None:
    states = []
    game = deal(game_id, number)
    for game in playout(game_id, number, choices):
        states.append((game.pile_texts(), game.round, game.phase(), game.base_rank()))
    again = replay(game_id, number, [str(m) for m in game.history])
    assert again.history == game.history
    assert (again.pile_texts(), again.round, again.phase(), again.base_rank()) == states[-1]
    while game.history:
        states.pop()
        game.undo()
        assert (game.pile_texts(), game.round, game.phase(), game.base_rank()) == states[-1]
    assert game.pile_texts() == deal(game_id, number).pile_texts()


@pytest.mark.parametrize("game_id", GAME_IDS)
@PROPERTY_SETTINGS
@given(number=GAME_NUMBERS, choices=CHOICES)
def test_every_legal_move_plays_and_undoes(game_id: str, number: str, choices: list[int]) -> None:
    for game in playout(game_id, number, choices):
        before = (game.pile_texts(), game.round)
        legal = game.legal_moves()
        assert len(set(legal)) == len(legal)
        for move in legal:
            assert game.is_legal(move)
            assert Move.parse(str(move)) == move
            game.play(move)
            game.undo()
            assert (game.pile_texts(), game.round) == before, move


def _candidates(game: Game) -> Iterator[Move]:
    yield Move.parse("deal")
    for src in game.piles:
        for dst in game.piles:
            for n in range(1, min(len(src.cards), 13) + 2):
                yield Move(src.short, dst.short, n)


@pytest.mark.parametrize("game_id", GAME_IDS)
@settings(PROPERTY_SETTINGS, max_examples=2)
@given(number=GAME_NUMBERS, choices=CHOICES)
def test_is_legal_accepts_exactly_the_generated_moves(
    game_id: str, number: str, choices: list[int]
) -> None:
    for ply, game in enumerate(playout(game_id, number, choices)):
        if ply % 5:
            continue
        legal = set(game.legal_moves())
        assert {m for m in _candidates(game) if game.is_legal(m)} == legal


@pytest.mark.parametrize("game_id", GAME_IDS)
@PROPERTY_SETTINGS
@given(number=GAME_NUMBERS, choices=CHOICES)
def test_the_player_view_lists_the_same_legal_moves(
    game_id: str, number: str, choices: list[int]
) -> None:
    for game in playout(game_id, number, choices):
        seen = view(game, "player")
        assert isinstance(seen, BoardView)
        rebuilt = board_from_view(seen)
        assert set(rebuilt.legal_moves()) == set(game.legal_moves())
        assert rebuilt.phase() == game.phase()
        assert rebuilt.base_rank() == game.base_rank()


@pytest.mark.parametrize("game_id", GAME_IDS)
@PROPERTY_SETTINGS
@given(number=GAME_NUMBERS, choices=CHOICES, split=st.integers(0, 250))
def test_copies_are_independent(game_id: str, number: str, choices: list[int], split: int) -> None:
    original = deal(game_id, number)
    for game in playout(game_id, number, choices[:split]):
        original = game
    frozen = (original.pile_texts(), original.round, list(original.history))
    twin = original.copy()
    assert (twin.pile_texts(), twin.round, list(twin.history)) == frozen
    for _ in playout_on(twin, choices[split:]):
        assert (original.pile_texts(), original.round, list(original.history)) == frozen
        # The copy generates its moves from its own piles.
        rebuilt = type(twin).from_piles(twin.pile_texts(), round_=twin.round)
        assert twin.legal_moves() == rebuilt.legal_moves()
    while twin.history:
        twin.undo()
    assert (original.pile_texts(), original.round, list(original.history)) == frozen
    assert twin.pile_texts() == deal(game_id, number).pile_texts()
    if original.legal_moves():
        original.play(original.legal_moves()[0])
        assert twin.pile_texts() == deal(game_id, number).pile_texts()


@pytest.mark.parametrize("game_id", GAME_IDS)
@PROPERTY_SETTINGS
@given(number=GAME_NUMBERS, choices=CHOICES)
def test_the_card_move_test_agrees_with_move_generation_along_a_game(
    game_id: str, number: str, choices: list[int]
) -> None:
    """`has_card_move` tries the move it found last first (a hint, checked by the rules):
    along a whole game it answers as generating every move does, and the move it keeps is
    one of them. With no redeal, a board is stuck exactly when it has no legal action."""
    for game in playout(game_id, number, choices):
        assert game.has_card_move() == bool(game.card_moves())
        hint = game._card_move_hint
        if hint is not None:
            src, n, dst = (game.piles[hint[0]], hint[1], game.piles[hint[2]])
            assert Move(src.short, dst.short, n) in game.card_moves()
        if game.max_rounds == 1:
            assert game.is_stuck() == (not game.is_won() and not game.legal_moves())


KLONDIKE_IDS = [g for g in GAME_IDS if issubclass(game_class(g), Klondike)]


def generic_is_stuck(game: Game) -> bool:
    """`Game.is_stuck` with the generic click-through (on the board, taken back), whatever
    the game's own `a_click_helps`."""
    if game.is_won():
        return False
    if game.max_rounds == 1:
        return not game.can_deal() and not game.card_moves()
    return not game.card_moves() and not Game.a_click_helps(game)


@pytest.mark.parametrize("game_id", KLONDIKE_IDS)
@PROPERTY_SETTINGS
@given(number=GAME_NUMBERS, choices=CHOICES)
def test_klondike_fast_card_move_test_agrees_with_the_generic_one(
    game_id: str, number: str, choices: list[int]
) -> None:
    """Klondike answers `has_card_move` (the server's stuck test) without generating moves;
    it must agree with the generic search on every board, and on the player's view of it."""
    for game in playout(game_id, number, choices):
        assert isinstance(game, Klondike)
        assert game.has_card_move() == bool(game.card_moves())
        # The move it remembers to try first next time is one the generic search finds.
        hint = game._card_move_hint
        if hint is not None:
            src, n, dst = (game.piles[hint[0]], hint[1], game.piles[hint[2]])
            assert Move(src.short, dst.short, n) in game.card_moves()
        # Its stuck test follows the clicks on copies; the generic one clicks on the board
        # and takes the clicks back (the board as it was after: checked by the next move).
        assert game.is_stuck() == generic_is_stuck(game)
        assert game.has_card_move() == bool(game.card_moves())
        seen = view(game, "player")
        assert isinstance(seen, BoardView)
        rebuilt = board_from_view(seen)
        assert rebuilt.has_card_move() == bool(rebuilt.card_moves())


@pytest.mark.parametrize("game_id", KLONDIKE_IDS)
@settings(PROPERTY_SETTINGS, max_examples=150)
@given(
    deck=st.permutations(range(52)),
    placed=st.integers(0, 24),
    spots=st.lists(st.integers(0, 11), min_size=24, max_size=24),
    downs=st.lists(st.integers(0, 3), min_size=7, max_size=7),
    kings_down=st.booleans(),
    rounds_done=st.integers(0, 4),
)
def test_klondike_fast_card_move_test_agrees_on_any_position(
    game_id: str,
    deck: list[int],
    placed: int,
    spots: list[int],
    downs: list[int],
    kings_down: bool,
    rounds_done: int,
) -> None:
    """Arbitrary sparse positions too (foundations out of order, broken runs, empty columns,
    all Kings at the bottom), which no legal game reaches but from_piles can build: few
    cards, so that a single rule often decides whether any move is left."""
    game = game_class(game_id).from_piles({})
    assert isinstance(game, Klondike)
    piles = [game.waste, *game.foundations, *game.tableau]
    cards = [c for c in deck if not (kings_down and RANK[c] == 12)]
    if kings_down:  # the four Kings face up at the bottom of four columns
        for column, suit in zip(game.tableau[1:5], range(4), strict=True):
            column.cards.append(13 * suit + 12)
    for card, spot in zip(cards[:placed], spots, strict=False):
        piles[spot].cards.append(card)
    game.stock.cards = cards[placed:]
    for column, down in zip(game.tableau, downs, strict=True):
        column.down = min(down, max(0, len(column.cards) - 1))
    if kings_down:
        game.tableau[0].cards = []
        game.tableau[0].down = 0
    assert game.has_card_move() == bool(game.card_moves())
    game.round = rounds_done
    assert game.is_stuck() == generic_is_stuck(game)


CARD_MOVE_EDGE_POSITIONS = [
    {"tableau[0]": "#KC 9H 8S", "tableau[1]": "9D"},  # only a part of a run fits
    {"tableau[0]": "5H 6S"},  # a run's inner card fits its own top (never a move)
    {"foundation[0]": "2C"},  # a foundation's own top "fits" it (never a move)
    {"foundation[0]": "AC", "tableau[0]": "2C", "tableau[1]": "#5D"},
    {"waste": "AS 2S", "foundation[1]": "AS"},
    {"tableau[0]": "KC", "tableau[1]": "KS", "tableau[2]": "KH", "tableau[3]": "KD 5C"},
    {"tableau[0]": "#KC 7D", "tableau[1]": "KS", "tableau[2]": "KH", "tableau[3]": "KD"},
]


@pytest.mark.parametrize("game_id", KLONDIKE_IDS)
@pytest.mark.parametrize("piles", CARD_MOVE_EDGE_POSITIONS)
def test_klondike_fast_card_move_test_agrees_on_edge_positions(
    game_id: str, piles: dict[str, str]
) -> None:
    game = game_class(game_id).from_piles(piles)
    assert game.has_card_move() == bool(game.card_moves())
    assert game.is_stuck() == generic_is_stuck(game)


# -- move text -------------------------------------------------------------------------------

PILE_TEXT = st.one_of(
    st.sampled_from(["s", "w"]),
    st.builds(lambda k, i: f"{k}{i}", st.sampled_from("ftr"), st.integers(0, 99)),
)
MOVE_TEXT = st.one_of(
    st.just("deal"),
    st.builds(lambda a, b: f"{a}-{b}", PILE_TEXT, PILE_TEXT),
    st.builds(lambda a, b, n: f"{a}-{b}:{n}", PILE_TEXT, PILE_TEXT, st.integers(2, 999)),
)


@settings(derandomize=True, database=None, max_examples=300)
@given(text=MOVE_TEXT)
def test_canonical_move_texts_round_trip(text: str) -> None:
    move = Move.parse(text)
    assert str(move) == text
    assert Move.parse(str(move)) == move


@settings(derandomize=True, database=None, max_examples=300)
@given(
    src=PILE_TEXT,
    dst=PILE_TEXT,
    n=st.integers(1, 999),
    upper=st.booleans(),
    pad=st.sampled_from(["", " ", "\t", "\n"]),
)
def test_any_valid_move_text_parses_to_a_move_that_round_trips(
    src: str, dst: str, n: int, upper: bool, pad: str
) -> None:
    text = f"{pad}{src}-{dst}:{n}{pad}"
    move = Move.parse(text.upper() if upper else text)
    assert (move.src, move.dst, move.n) == (src, dst, n)
    assert Move.parse(str(move)) == move
