"""The board: one mutable :class:`Game` per player, with legal moves, play, undo and state.

Subclasses (one per rule family, see ``games/``) say which piles exist, how the cards are dealt,
what each pile gives and accepts, and what happens automatically after an action. This module owns
everything the families share: the undo journal, the move loop, state text and the stuck test.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, ClassVar

from .cards import ACE, COLOR, COLOR_NAMES, RANK, RANK_NAMES, TEXT, Card, with_article
from .errors import IllegalMoveError, InvalidPositionError, NothingToUndoError
from .moves import DEAL, Move
from .piles import FOUNDATION, KIND_NAMES, RESERVE, STOCK, TABLEAU, UNKNOWN, WASTE, Pile
from .seeds import GameNumber, parse_game_number, shuffled_deck

# One undo record: the piles as they were before the action, then the scalar state.
_Saved = dict[int, tuple[list[int], int]]


def seen(pile: Pile, index: int) -> str:
    """The text of `pile.cards[index]` if its player sees it, else that it is face down."""
    position = index % len(pile.cards)
    return "a face-down card" if position < pile.face_down_count() else TEXT[pile.cards[position]]


def moving_text(src: Pile, n: int) -> str:
    """The top ``n`` cards of ``src`` (face up) as a refusal names them: one card by itself
    ("QH"); a run by the card it starts with, the one the target pile must take, and by its
    size, since a player who asked for too many or too few must see that it is about the run
    ("the 3-card run from QH")."""
    head = TEXT[src.cards[-n]]
    return head if n == 1 else f"the {n}-card run from {head}"


def explain_down_alternating(dst: Pile, src: Pile, n: int, wrap: bool) -> str:
    """Why a tableau pile that builds down in alternating colours, its top card face up,
    refuses the top ``n`` cards of ``src``: "t1 builds down in alternating colours: it needs
    a red 9 on TS, not QH" ("not the 3-card run from QH"). With ``wrap`` a King goes on
    an Ace; without, nothing goes on an Ace."""
    top, moving = dst.cards[-1], moving_text(src, n)
    rule = f"{dst.short} builds down in alternating colours"
    if RANK[top] == ACE and not wrap:
        return f"{rule} and ends at the Ace: nothing goes on {TEXT[top]}, not {moving}"
    if RANK[top] == ACE:
        rule += " (a King goes on an Ace)"
    wanted = with_article(f"{COLOR_NAMES[1 - COLOR[top]]} {RANK_NAMES[(RANK[top] - 1) % 13]}")
    return f"{rule}: it needs {wanted} on {TEXT[top]}, not {moving}"


class Game:
    """A patience board that validates every action against its rules."""

    game_id: ClassVar[str] = ""
    title: ClassVar[str] = ""
    pysolfc_id: ClassVar[int | None] = None
    decks: ClassVar[int] = 1
    n_foundations: ClassVar[int] = 4
    n_tableau: ClassVar[int] = 7
    n_reserves: ClassVar[int] = 0
    #: PySolFC's talon: -1 for unlimited passes through the stock.
    max_rounds: ClassVar[int] = 1
    draw: ClassVar[int] = 1
    #: Order of the piles in state dumps (PySolFC's stack groups).
    pile_order: ClassVar[tuple[int, ...]] = (STOCK, WASTE, FOUNDATION, TABLEAU, RESERVE)

    def __init__(self, number: str | GameNumber) -> None:
        self.number_info: GameNumber | None = (
            number if isinstance(number, GameNumber) else parse_game_number(number)
        )
        self.number = self.number_info.text
        self._setup()
        deck = shuffled_deck(self.number_info, self.decks)
        self.stock.cards = [c for _, c in self.shuffle_hook(deck)]
        self.start()
        self._saved.clear()

    def _setup(self) -> None:
        counts = (
            (STOCK, 1),
            (WASTE, 1),
            (FOUNDATION, self.n_foundations),
            (TABLEAU, self.n_tableau),
            (RESERVE, self.n_reserves),
        )
        piles = [Pile(kind, i, 0) for kind, count in counts for i in range(count)]
        piles.sort(key=lambda p: (self.pile_order.index(p.kind), p.index))
        for number, p in enumerate(piles):
            p.number = number
        self._index_piles(piles)
        self.round = 1
        self.history: list[Move] = []
        self._journal: list[tuple[_Saved, tuple[Any, ...]]] = []
        self._saved: _Saved = {}
        self.total_cards = 52 * self.decks

    @classmethod
    def from_piles(cls, piles: Mapping[str, str], round_: int = 1) -> Game:
        """A board set up from pile texts in RULES.md form (``{"tableau[0]": "#TH 9S"}``).

        Piles not named are empty. The position is taken as given (no deal): the way to pin a
        rule down in a test, like a FEN in chess. Unknown cards may be written ``#??``. A card
        that does not parse raises `InvalidCardError`; a pile the game does not have, or
        face-down cards over face-up ones, `InvalidPositionError`.
        """
        game = cls.__new__(cls)
        game.number_info = None
        game.number = "custom"
        game._setup()
        for name, text in piles.items():
            pile = game._by_name.get(name)
            if pile is None:
                raise InvalidPositionError(f"{cls.game_id} has no pile {name!r}")
            cards, down = [], 0
            for token in text.split():
                hidden = token.startswith("#")
                face = token[1:] if hidden else token
                cards.append(UNKNOWN if face == "??" else int(Card.parse(face)))
                if hidden:
                    if len(cards) - 1 != down and pile.kind != STOCK:
                        raise InvalidPositionError(
                            f"{name}: face-down cards must lie under face-up ones"
                        )
                    down += 1
            pile.cards = cards
            pile.down = 0 if pile.kind == STOCK else down
        game.round = round_
        return game

    @classmethod
    def from_visible(cls, piles: Mapping[str, tuple[int, Sequence[str]]], round_: int = 1) -> Game:
        """A board rebuilt from what a player sees: ``name -> (face-down count, face-up cards)``.

        Face-down cards become unknown placeholders. The rules never read a face-down card, so
        ``legal_moves()`` here equals the real board's: clients and bots list moves with it.
        (Do not play stock clicks or ask ``is_stuck()`` on it: the stock's cards are unknown.)
        """
        texts = {
            name: " ".join(["#??"] * down + list(cards)) for name, (down, cards) in piles.items()
        }
        return cls.from_piles(texts, round_)

    def _index_piles(self, piles: list[Pile]) -> None:
        """Make `piles` (numbered in board order) this board's: the piles of each kind, the
        lookups by short and long name and the move targets all point at them. A new board
        and a copy (which has piles of its own) both come through here."""
        self.piles = piles
        of_kind: defaultdict[int, list[Pile]] = defaultdict(list)
        for p in piles:
            of_kind[p.kind].append(p)
        (self.stock,) = of_kind[STOCK]
        (self.waste,) = of_kind[WASTE]
        self.foundations = of_kind[FOUNDATION]
        self.tableau = of_kind[TABLEAU]
        self.reserves = of_kind[RESERVE]
        self._by_short = {p.short: p for p in piles}
        self._by_name = {p.name: p for p in piles}
        self._targets = tuple(self.move_targets())

    # -- what subclasses provide -------------------------------------------------------------

    def shuffle_hook(self, cards: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """Reorder the shuffled ``(deck, card)`` list before dealing (Colorado only)."""
        return cards

    def start(self) -> None:
        """Deal the opening layout from the stock."""
        raise NotImplementedError

    def can_pick(self, src: Pile, n: int) -> bool:
        """May the top ``n`` cards of ``src`` be picked up?"""
        raise NotImplementedError

    def accepts(self, dst: Pile, src: Pile, n: int) -> bool:
        """Does ``dst`` take the top ``n`` cards of ``src`` (already known to be pickable)?"""
        raise NotImplementedError

    def can_deal(self) -> bool:
        """May the stock be clicked now?"""
        return bool(self.stock.cards)

    def deal_click(self) -> None:
        """Click the stock (known legal): by default turn ``draw`` cards onto the waste."""
        for _ in range(min(self.draw, len(self.stock.cards))):
            self.move_cards(self.stock, self.waste, 1)

    def after_move(self, src: Pile, dst: Pile, n: int) -> None:
        """Automatic follow-ups of a card move (refills); auto face-up and auto deal come after."""

    def auto_flip_piles(self) -> Iterable[Pile]:
        """Piles whose face-down top card turns up automatically."""
        return self.tableau

    def pickable_counts(self, src: Pile) -> range:
        """Counts worth trying when generating moves from ``src``."""
        return range(1, 2) if src.cards else range(0)

    def scalar_state(self) -> tuple[Any, ...]:
        """Non-pile state saved for undo."""
        return (self.round,)

    def restore_scalar_state(self, state: tuple[Any, ...]) -> None:
        (self.round,) = state

    def refusal(self, src: Pile, dst: Pile, n: int) -> str:
        """Why a card move is refused, naming no card its player cannot see: a move from or
        onto the stock, or of face-down cards, is answered before any game's `explain` (which
        may name the cards it looked at) is asked."""
        if src.kind == STOCK and src.cards:
            return "cards leave the stock only by dealing ('deal')"
        if dst.kind == STOCK:
            return "no card goes onto the stock"
        up = len(src.cards) - src.face_down_count()
        if up < n <= len(src.cards):
            return f"{src.short} has only {up} face-up card(s), not {n}"
        return self.explain(src, dst, n)

    def explain(self, src: Pile, dst: Pile, n: int) -> str:
        """Why a card move is refused, in words a player can act on (`refusal` has already
        answered a move that would name a face-down card)."""
        if not src.cards:
            return f"{src.short} is empty"
        if n > len(src.cards):
            return f"{src.short} holds only {len(src.cards)} card(s)"
        if not self.can_pick(src, n):
            if n > 1:
                return f"{src.short} cannot give {n} cards at once"
            return f"cards do not move from {src.short} in this game"
        if dst.kind == FOUNDATION:
            if n > 1:
                return f"{dst.short} takes one card at a time, not {n}"
            why = self.explain_foundation(dst, src.cards[-1])
            if why is not None:
                return why
        elif dst.kind == TABLEAU and (not dst.cards or dst.down < len(dst.cards)):
            why = self.explain_tableau(dst, src, n)
            if why is not None:
                return why
        elif dst.kind in (WASTE, RESERVE):
            feeds = "only the stock deals to it" if dst.kind == WASTE else "it only gives cards"
            return f"no card goes onto the {KIND_NAMES[dst.kind]}: {feeds}"
        top = f"on {seen(dst, -1)}" if dst.cards else "on an empty pile"
        return f"{dst.short} does not accept {moving_text(src, n)} {top}"

    def explain_foundation(self, dst: Pile, card: int) -> str | None:
        """Why the foundation ``dst`` refuses ``card`` (face up, one card, from a pile that
        gives it), naming the card the pile needs next: "f0 needs the 3 of spades next, not
        5S". None falls back to "f0 does not accept 5S on 2S"."""
        return None

    def explain_tableau(self, dst: Pile, src: Pile, n: int) -> str | None:
        """Why the tableau pile ``dst`` (empty, or its top card face up) refuses the top ``n``
        cards of ``src`` (face up, and ``src`` gives them), naming the rule the move breaks:
        "t1 builds down in alternating colours: it needs a red 9 on TS, not QH". None falls
        back to "t1 does not accept QH on TS"."""
        return None

    def explain_deal(self) -> str:
        return "the stock cannot be dealt now"

    # -- shared mechanics --------------------------------------------------------------------

    def touch(self, pile: Pile) -> None:
        """Remember ``pile`` as it was before the current action (once per action)."""
        if pile.number not in self._saved:
            self._saved[pile.number] = (pile.cards[:], pile.down)

    def move_cards(self, src: Pile, dst: Pile, n: int) -> None:
        """Move the top ``n`` cards; cards leaving the stock arrive face up."""
        self.touch(src)
        self.touch(dst)
        cards = src.cards
        if n == 1:
            dst.cards.append(cards.pop())
        else:
            dst.cards.extend(cards[-n:])
            del cards[-n:]
        src.down = min(src.down, len(cards))

    def deal_to(self, dst: Pile, face_up: bool = True) -> None:
        """Deal the top stock card onto ``dst`` (face down only onto a face-down pile)."""
        self.touch(self.stock)
        self.touch(dst)
        dst.cards.append(self.stock.cards.pop())
        if not face_up:
            dst.down += 1

    def auto_flip(self) -> None:
        for p in self.auto_flip_piles():
            if p.down and p.down == len(p.cards):
                self.touch(p)
                p.down -= 1

    def auto_deal(self) -> None:
        """PySolFC's auto deal: an empty waste is refilled by a stock click."""
        if not self.waste.cards and self.stock.cards and self.can_deal():
            self.deal_click()

    def pile(self, short: str) -> Pile:
        try:
            return self._by_short[short]
        except KeyError:
            raise IllegalMoveError(f"{self.game_id} has no pile {short}") from None

    def pile_by_name(self, name: str) -> Pile:
        return self._by_name[name]

    def is_legal(self, move: Move) -> bool:
        """Would `play` take `move` here? Asked of `play` itself (the move is played and taken
        back), so the two never disagree and `play`, which the server runs for every move,
        carries no extra step for it. (As with `play`, not a stock click on a board from
        `from_visible`.)"""
        try:
            self.play(move)
        except IllegalMoveError:
            return False
        self.undo()
        return True

    def play(self, move: Move | str) -> None:
        """Play one action; an illegal one raises and leaves the board exactly as it was.
        Anything but a `Move` is read as notation (`Move.parse`), so a value that is not a
        move's text is refused with `InvalidMoveError`."""
        if not isinstance(move, Move):
            move = Move.parse(move)
        saved: _Saved = {}
        self._saved = saved
        scalars = self.scalar_state()
        try:
            if move.n == 0:
                if not self.can_deal():
                    raise IllegalMoveError(self.explain_deal())
                self.deal_click()
            else:
                src = self.pile(move.src)
                dst = self.pile(move.dst)
                if src is dst:
                    raise IllegalMoveError(f"{src.short} cannot move onto itself")
                n = move.n
                if n > len(src.cards) or not self.can_pick(src, n) or not self.accepts(dst, src, n):
                    raise IllegalMoveError(self.refusal(src, dst, n))
                self.move_cards(src, dst, n)
                self.after_move(src, dst, n)
            self.auto_flip()
            self.auto_deal()
        except BaseException:
            self._restore(saved, scalars)
            raise
        self.history.append(move)
        self._journal.append((saved, scalars))

    def undo(self) -> Move:
        """Take back the last action exactly (automatic follow-ups included)."""
        if not self._journal:
            raise NothingToUndoError("no move to undo")
        saved, scalars = self._journal.pop()
        self._restore(saved, scalars)
        return self.history.pop()

    @property
    def undo_depth(self) -> int:
        """How many of the latest actions can still be taken back."""
        return len(self._journal)

    def forget_undo(self, keep: int) -> None:
        """Forget how to take back all but the latest ``keep`` actions; the history stays
        (``ply`` and replays are unchanged, and with ``keep`` >= 1 so is ``touched_piles``),
        and so does the stuck test (it undoes only what it plays). Each undo record holds copies
        of the piles its action touched, so a long-lived board that only ever takes back its
        latest action (the server's) keeps its memory bounded this way."""
        excess = len(self._journal) - max(0, keep)
        if excess > 0:
            del self._journal[:excess]

    def _restore(self, saved: _Saved, scalars: tuple[Any, ...]) -> None:
        for number, (cards, down) in saved.items():
            p = self.piles[number]
            p.cards = cards
            p.down = down
        self.restore_scalar_state(scalars)

    def touched_piles(self) -> tuple[str, ...]:
        """Long names of the piles the last action changed (empty before any action)."""
        if not self._journal:
            return ()
        saved = self._journal[-1][0]
        return tuple(self.piles[i].name for i in sorted(saved) if self._changed(i, saved[i]))

    def _changed(self, number: int, before: tuple[list[int], int]) -> bool:
        p = self.piles[number]
        return p.cards != before[0] or p.down != before[1]

    @property
    def ply(self) -> int:
        return len(self.history)

    # -- move generation -----------------------------------------------------------------------

    def move_sources(self) -> Sequence[Pile]:
        return self.piles

    def move_targets(self) -> Sequence[Pile]:
        return [p for p in self.piles if p.kind in (FOUNDATION, TABLEAU)]

    def _card_moves(self) -> Iterator[Move]:
        for src, n, dst in self._card_move_piles():
            yield Move(src.short, dst.short, n)

    def _card_move_piles(self) -> Iterator[tuple[Pile, int, Pile]]:
        """Every legal card move as (source, count, target), by source and target order."""
        targets = self._targets
        for src in self.move_sources():
            if not src.cards:
                continue
            for n in self.pickable_counts(src):
                if not self.can_pick(src, n):
                    continue
                for dst in targets:
                    if dst is not src and self.accepts(dst, src, n):
                        yield src, n, dst

    def legal_moves(self) -> list[Move]:
        """Every legal action, the stock click first, then by source and target pile order."""
        moves: list[Move] = [DEAL] if self.can_deal() else []
        moves.extend(self._card_moves())
        return moves

    def card_moves(self) -> list[Move]:
        """Legal moves other than the stock click."""
        return list(self._card_moves())

    #: The card move `has_card_move` found last, as pile numbers (source, count, target):
    #: after most moves it is still legal, and checking it by the rules is a fraction of a
    #: search (the stuck test asks after every move). A hint only: checked each time.
    _card_move_hint: tuple[int, int, int] | None = None

    def has_card_move(self) -> bool:
        """Is any move other than the stock click legal? (The one found last is tried first,
        then the moves in order until one is found.)"""
        hint = self._card_move_hint
        if hint is not None and self._card_move_holds(*hint):
            return True
        found = next(self._card_move_piles(), None)
        self._card_move_hint = (
            None if found is None else (found[0].number, found[1], found[2].number)
        )
        return found is not None

    def _card_move_holds(self, source: int, n: int, target: int) -> bool:
        """Is the card move of `_card_move_hint` still legal, by the rules `_card_move_piles`
        applies (its target is one of the targets, and not its source: it was found so)?"""
        src, dst = self.piles[source], self.piles[target]
        return (
            n <= len(src.cards)
            and n in self.pickable_counts(src)
            and self.can_pick(src, n)
            and any(p is src for p in self.move_sources())
            and self.accepts(dst, src, n)
        )

    # -- outcome -----------------------------------------------------------------------------

    def progress(self) -> tuple[int, int]:
        """Cards on the foundations, out of all cards."""
        return sum(len(f.cards) for f in self.foundations), self.total_cards

    def is_won(self) -> bool:
        return sum(len(f.cards) for f in self.foundations) == self.total_cards

    def is_stuck(self) -> bool:
        """No way forward: see RULES.md "Common to all"."""
        if self.is_won():
            return False
        if self.max_rounds == 1:
            return not self.can_deal() and not self.has_card_move()
        if self.has_card_move():
            return False
        return not self.a_click_helps()

    def a_click_helps(self) -> bool:
        """With no card move now, does any run of stock clicks bring one? (The second half of
        `is_stuck`, for boards that may be turned over again.) Here by clicking on the board
        and taking the clicks back."""
        limit = 2 * (len(self.stock.cards) + len(self.waste.cards)) + 4
        clicks = 0
        try:
            while clicks < limit and self.can_deal():
                self.play(DEAL)
                clicks += 1
                if self.has_card_move():
                    return True
            return False
        finally:
            for _ in range(clicks):
                self.undo()

    # -- text --------------------------------------------------------------------------------

    def phase(self) -> str:
        return "play"

    def base_rank(self) -> int | None:
        return None

    def pile_texts(self) -> dict[str, str]:
        """Every pile in RULES.md text with full information (face-down cards marked ``#``)."""
        return {p.name: p.to_text() for p in self.piles}

    def __str__(self) -> str:
        return "\n".join(f"{name}: {text}" for name, text in self.pile_texts().items())

    def copy(self) -> Game:
        """An independent board in the same position (history included). The piles, history
        and undo journal are copied; every other attribute is shared with this board, so a
        family keeps its own state in immutable values (as `scalar_state` returns them)."""
        other = type(self).__new__(type(self))
        other.__dict__.update(self.__dict__)
        other._index_piles([p.copy() for p in self.piles])
        other.history = self.history[:]
        other._journal = [
            ({k: (v[0][:], v[1]) for k, v in s.items()}, sc) for s, sc in self._journal
        ]
        other._saved = {}
        return other
