"""Klondike and its relatives (PySolFC 2, 18, 61, 129) and the rules-book variants."""

from __future__ import annotations

from typing import ClassVar

from ..cards import COLOR, KING, RANK, RANK_NAMES, SUIT, SUIT_NAMES, TEXT
from ..game import Game, explain_down_alternating, moving_text
from ..piles import FOUNDATION, STOCK, TABLEAU, WASTE, Pile


class Klondike(Game):
    """PySolFC's Klondike: four suit foundations, seven alternating-colour columns."""

    game_id = "klondike"
    title = "Klondike"
    pysolfc_id: ClassVar[int | None] = 2
    max_rounds = -1
    draw = 1
    #: A top foundation card may go back onto the tableau.
    takeback: ClassVar[bool] = True
    #: Rules book: tableau-to-tableau moves take the whole face-up run.
    whole_runs_only: ClassVar[bool] = False
    #: Rules book: spaces take any card once all four Kings lie at the bottom of a column.
    kings_free_spaces: ClassVar[bool] = False

    def start(self) -> None:
        t = self.tableau
        for i in range(1, 7):
            for p in reversed(t[i:]):
                self.deal_to(p, face_up=False)
        for p in reversed(t):
            self.deal_to(p)
        self.deal_click()

    def can_pick(self, src: Pile, n: int) -> bool:
        kind = src.kind
        if kind == TABLEAU:
            return n <= len(src.cards) - src.down
        if kind == WASTE:
            return n == 1
        if kind == FOUNDATION:
            return n == 1 and self.takeback
        return False

    def pickable_counts(self, src: Pile) -> range:
        """Every face-up count of a tableau column, one card elsewhere. The whole-runs games
        try the same counts: the top card alone may go to a foundation, the whole run to the
        tableau, and `accepts` refuses the counts between."""
        if src.kind == TABLEAU:
            return range(1, len(src.cards) - src.down + 1)
        return range(1, 2)

    def accepts(self, dst: Pile, src: Pile, n: int) -> bool:
        card = src.cards[-n]
        if dst.kind == FOUNDATION:
            return n == 1 and SUIT[card] == dst.index and RANK[card] == len(dst.cards)
        if dst.kind != TABLEAU:
            return False
        if self.whole_runs_only and src.kind == TABLEAU and n != len(src.cards) - src.down:
            return False
        if not dst.cards:
            return RANK[card] == KING or (self.kings_free_spaces and self._all_kings_at_bottom())
        top = dst.cards[-1]
        return RANK[top] == RANK[card] + 1 and COLOR[top] != COLOR[card]

    def has_card_move(self) -> bool:
        """Exactly ``Game.has_card_move`` (the same rules, read from the same card tables),
        without trying every source against every target: the server asks it after every
        move (the stuck test). The move found last is tried first. Property tests compare
        the two on random and odd positions, and along whole games. (`_card_move_hint` as in
        ``Game``; checked here by Klondike's own rules, which need no more.)"""
        hint = self._card_move_hint
        if hint is not None:
            src, n, dst = self.piles[hint[0]], hint[1], self.piles[hint[2]]
            if n <= len(src.cards) and self.can_pick(src, n) and self.accepts(dst, src, n):
                return True
        found = self._find_card_move()
        self._card_move_hint = found
        return found is not None

    def _find_card_move(self) -> tuple[int, int, int] | None:
        """A legal card move as pile numbers (source, count, target), or None."""
        # What each target takes, keyed by the card that fits: a foundation the next card
        # of its suit, a tableau column the card one rank lower of the other colour.
        takes: dict[tuple[int, int], list[Pile]] = {}
        for f in self.foundations:
            takes.setdefault((f.index, len(f.cards)), []).append(f)
        fits: dict[tuple[int, int], list[Pile]] = {}
        spaces: list[Pile] = []
        for t in self.tableau:
            if t.cards:
                top = t.cards[-1]
                fits.setdefault((RANK[top] - 1, 1 - COLOR[top]), []).append(t)
            else:
                spaces.append(t)
        space = bool(spaces)
        any_to_space = space and self.kings_free_spaces and self._all_kings_at_bottom()
        whole_runs = self.whole_runs_only

        def goes(src: Pile, n: int, card: int) -> Pile | None:
            """Where the top `n` cards of `src` (`card` the lowest of them) may go, if anywhere."""
            rank = RANK[card]
            if n == 1:
                for dst in takes.get((SUIT[card], rank), ()):
                    if dst is not src:
                        return dst
            if whole_runs and src.kind == TABLEAU and n != len(src.cards) - src.down:
                return None  # onto the tableau only whole runs (the foundation came first)
            if space and (any_to_space or rank == KING):
                return spaces[0]  # an empty column is never the source (it has no card)
            for dst in fits.get((rank, COLOR[card]), ()):
                if dst is not src:
                    return dst
            return None

        waste = self.waste.cards
        if waste and (dst := goes(self.waste, 1, waste[-1])) is not None:
            return self.waste.number, 1, dst.number
        if self.takeback:
            for f in self.foundations:
                if f.cards and (dst := goes(f, 1, f.cards[-1])) is not None:
                    return f.number, 1, dst.number
        for t in self.tableau:
            cards = t.cards
            for n in range(1, len(cards) - t.down + 1):
                if (dst := goes(t, n, cards[-n])) is not None:
                    return t.number, n, dst.number
        return None

    def a_click_helps(self) -> bool:
        """Exactly ``Game.a_click_helps``, without clicking on the board: a click moves cards
        only between the stock and the waste, so the one card it can make playable is the
        waste's new top, checked against the foundations and tableau as they stand. The clicks
        are followed on copies of the two piles' cards, as ``play`` makes them (the automatic
        deal onto an emptied waste included). The generic way costs a board step, an undo and
        a move search per click: ~0.5 ms a move for the rules-book games, whose boards often
        have no card move (``bench/engine_bench.py``, "stuck moves/s")."""
        if any(t.down and t.down == len(t.cards) for t in self.tableau):
            return super().a_click_helps()  # a click would also turn a card up (no legal board)
        foundation_wants = {(f.index, len(f.cards)) for f in self.foundations}
        tableau_wants = {
            (RANK[t.cards[-1]] - 1, 1 - COLOR[t.cards[-1]]) for t in self.tableau if t.cards
        }
        space = any(not t.cards for t in self.tableau)
        any_to_space = space and self.kings_free_spaces and self._all_kings_at_bottom()
        stock, waste, rounds = self.stock.cards[:], self.waste.cards[:], self.round
        draw, max_rounds = self.draw, self.max_rounds

        def click() -> None:
            nonlocal stock, waste, rounds
            if stock:
                for _ in range(min(draw, len(stock))):
                    waste.append(stock.pop())
            else:  # turn the waste over
                stock, waste, rounds = waste[::-1], [], rounds + 1

        limit = 2 * (len(stock) + len(waste)) + 4
        for _ in range(limit):
            if not (stock or (waste and (max_rounds < 0 or rounds < max_rounds))):
                break  # no click left: ``can_deal``
            click()
            if not waste and stock:  # ``auto_deal``: an emptied waste is refilled at once
                click()
            if waste:
                card = waste[-1]
                rank = RANK[card]
                if (
                    (SUIT[card], rank) in foundation_wants
                    or (rank, COLOR[card]) in tableau_wants
                    or (space and (any_to_space or rank == KING))
                ):
                    return True
        return False

    def _all_kings_at_bottom(self) -> bool:
        return self._kings_at_bottom() == 4

    def _kings_at_bottom(self) -> int:
        # Only face-up Kings count: legality must never depend on a hidden card.
        return sum(1 for p in self.tableau if p.cards and not p.down and RANK[p.cards[0]] == KING)

    def can_deal(self) -> bool:
        if self.stock.cards:
            return True
        return bool(self.waste.cards) and (self.max_rounds < 0 or self.round < self.max_rounds)

    def deal_click(self) -> None:
        if self.stock.cards:
            super().deal_click()
            return
        # Turn the waste over: the stock gets the cards back in their original order.
        self.touch(self.stock)
        self.touch(self.waste)
        self.stock.cards = self.waste.cards[::-1]
        self.waste.cards = []
        self.round += 1

    def explain(self, src: Pile, dst: Pile, n: int) -> str:
        run = len(src.cards) - src.down
        if self.whole_runs_only and src.kind == TABLEAU and dst.kind == TABLEAU and n < run:
            return f"only the whole face-up run of {src.short} moves ({run} cards)"
        if src.kind == FOUNDATION and not self.takeback:
            return "foundation cards never move back in this game"
        if src.kind == STOCK:
            return "cards leave the stock only by dealing ('deal')"
        return super().explain(src, dst, n)

    def explain_tableau(self, dst: Pile, src: Pile, n: int) -> str:
        if dst.cards:
            return explain_down_alternating(dst, src, n, wrap=False)
        why = f"{dst.short} is empty: only a King may start it, not {moving_text(src, n)}"
        if self.kings_free_spaces:
            kings = self._kings_at_bottom()
            why += (
                " (any card may once all four Kings lie at the bottom of columns: "
                f"{kings} {'does' if kings == 1 else 'do'} now)"
            )
        return why

    def explain_foundation(self, dst: Pile, card: int) -> str:
        suit, size = SUIT_NAMES[dst.index], len(dst.cards)
        if size >= 13:
            return f"{dst.short} is complete (Ace to King of {suit}), not {TEXT[card]}"
        if not size:
            return f"{dst.short} starts with the Ace of {suit}, not {TEXT[card]}"
        return f"{dst.short} needs the {RANK_NAMES[size]} of {suit} next, not {TEXT[card]}"

    def explain_deal(self) -> str:
        if not self.stock.cards and not self.waste.cards:
            return "the stock and the waste are both empty"
        return f"no redeal left: this game allows {self.max_rounds} pass(es) through the stock"


class KlondikeDraw3(Klondike):
    game_id = "klondike-draw3"
    title = "Klondike (Draw 3)"
    pysolfc_id = 18
    draw = 3


class VegasKlondike(Klondike):
    game_id = "vegas-klondike"
    title = "Vegas Klondike"
    pysolfc_id = 129
    max_rounds = 1


class CasinoKlondike(Klondike):
    game_id = "casino-klondike"
    title = "Casino Klondike"
    pysolfc_id = 61
    max_rounds = 3


class KlondikeBook(Klondike):
    """The classic rules book: whole runs, Kings-only spaces until all Kings are down."""

    game_id = "klondike-book"
    title = "Klondike (rules book, draw 3)"
    pysolfc_id = None
    draw = 3
    takeback = False
    whole_runs_only = True
    kings_free_spaces = True


class KlondikeBook3(KlondikeBook):
    game_id = "klondike-book-3"
    title = "Klondike (rules book, draw 3, three redeals)"
    max_rounds = 4


class KlondikeBook1(KlondikeBook):
    game_id = "klondike-book-1"
    title = "Klondike (rules book, draw 1, one pass)"
    draw = 1
    max_rounds = 1
