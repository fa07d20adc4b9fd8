"""The Terrace family (PySolFC 135-138, 431): a fanned reserve, wrapping foundations."""

from __future__ import annotations

from typing import Any, ClassVar

from ..cards import COLOR, COLOR_NAMES, RANK, RANK_NAMES, SUIT, SUIT_NAMES, TEXT, with_article
from ..game import Game, explain_down_alternating
from ..piles import FOUNDATION, RESERVE, STOCK, TABLEAU, WASTE, Pile


class Terrace(Game):
    """Terrace: choose the base rank from four tableau cards, then build in alternating colours."""

    game_id = "terrace"
    title = "Terrace"
    pysolfc_id = 135
    decks = 2
    n_foundations = 8
    n_tableau = 9
    n_reserves = 1
    max_rounds = 1
    pile_order = (STOCK, WASTE, RESERVE, FOUNDATION, TABLEAU)
    reserve_size: ClassVar[int] = 11
    #: The player picks the base card from t0..t3 (otherwise the stock gives it at the deal).
    choose_base: ClassVar[bool] = True
    #: Foundations build up in suit (otherwise in alternating colours); always wrapping K -> A.
    in_suit: ClassVar[bool] = False
    #: An emptied tableau pile takes the waste top at once (Terrace's fillStack).
    refills: ClassVar[bool] = True
    #: The top foundation card (never the base) may move again (Queen of Italy).
    foundation_moves: ClassVar[bool] = False

    def start(self) -> None:
        reserve = self.reserves[0]
        for _ in range(self.reserve_size):
            self.deal_to(reserve)
        if self.choose_base:
            for p in self.tableau[:4]:
                self.deal_to(p)
            return
        for p in self.tableau:
            self.deal_to(p)
        base = self.stock.cards[-1]
        self.deal_to(self.foundations[2 * SUIT[base]])
        self.deal_click()

    def phase(self) -> str:
        if self.choose_base and not any(f.cards for f in self.foundations):
            return "choose_base"
        return "play"

    def base_rank(self) -> int | None:
        for f in self.foundations:
            if f.cards:
                return RANK[f.cards[0]]
        return None

    def _is_choosing(self) -> bool:
        return self.choose_base and not any(f.cards for f in self.foundations)

    def can_pick(self, src: Pile, n: int) -> bool:
        if n != 1:
            return False
        kind = src.kind
        if kind in (TABLEAU, WASTE, RESERVE):
            return True
        return kind == FOUNDATION and self.foundation_moves and len(src.cards) > 1

    def accepts(self, dst: Pile, src: Pile, n: int) -> bool:
        if n != 1:
            return False
        card = src.cards[-1]
        if dst.kind == FOUNDATION:
            if self._is_choosing():
                return src.kind == TABLEAU and SUIT[card] == dst.index >> 1
            if not dst.cards:
                return SUIT[card] == dst.index >> 1 and RANK[card] == self.base_rank()
            top = dst.cards[-1]
            if len(dst.cards) >= 13 or RANK[card] != (RANK[top] + 1) % 13:
                return False
            return SUIT[card] == SUIT[top] if self.in_suit else COLOR[card] != COLOR[top]
        if dst.kind != TABLEAU or src.kind == RESERVE or self._is_choosing():
            return False
        if not dst.cards:
            return True
        top = dst.cards[-1]
        return COLOR[card] != COLOR[top] and RANK[top] == (RANK[card] + 1) % 13

    def can_deal(self) -> bool:
        return bool(self.stock.cards) and not self._is_choosing()

    def after_move(self, src: Pile, dst: Pile, n: int) -> None:
        if (
            self.choose_base
            and dst.kind == FOUNDATION
            and sum(len(f.cards) for f in self.foundations) == 1
        ):
            # The base is chosen: deal to every empty tableau pile, then one card to the waste.
            for p in self.tableau:
                if not p.cards and self.stock.cards:
                    self.deal_to(p)
            self.deal_click()
            return
        if self.refills and src.kind == TABLEAU and not src.cards and self.waste.cards:
            self.move_cards(self.waste, src, 1)

    def auto_flip_piles(self) -> list[Pile]:
        return []

    def explain(self, src: Pile, dst: Pile, n: int) -> str:
        if self._is_choosing():
            if src.kind == TABLEAU and dst.kind == FOUNDATION and src.cards and n == 1:
                suit = SUIT[src.cards[-1]]
                return (
                    f"{TEXT[src.cards[-1]]} can start only f{2 * suit} or f{2 * suit + 1} "
                    "(f0,f1 clubs, f2,f3 spades, f4,f5 hearts, f6,f7 diamonds)"
                )
            return (
                "choose the base card first: play one of t0..t3 to an empty foundation of its "
                "suit (f0,f1 clubs, f2,f3 spades, f4,f5 hearts, f6,f7 diamonds)"
            )
        if n > 1 and src.cards:
            return "cards move one at a time in this game"
        if src.kind == RESERVE and dst.kind == TABLEAU:
            return "reserve cards go only to the foundations"
        if src.kind == FOUNDATION and src.cards:
            if not self.foundation_moves:
                return "foundation cards never move in this game"
            if len(src.cards) == 1:
                return "a foundation's base card never moves"
        return super().explain(src, dst, n)

    def explain_tableau(self, dst: Pile, src: Pile, n: int) -> str | None:
        """The tableau builds down in alternating colours, a King on an Ace too. (A space
        takes any card `explain` has not refused already.)"""
        if not dst.cards:
            return None
        return explain_down_alternating(dst, src, n, wrap=True)

    def explain_foundation(self, dst: Pile, card: int) -> str | None:
        """A foundation starts with the base rank in its own suit (f0,f1 clubs, f2,f3 spades,
        f4,f5 hearts, f6,f7 diamonds), then builds up, wrapping from King to Ace, in
        alternating colours (in suit in General's Patience), thirteen cards in all."""
        not_card = f"not {TEXT[card]}"
        if not dst.cards:
            base = self.base_rank()
            if base is None:  # while the base is chosen `explain` answers first
                return None
            wanted = with_article(f"{RANK_NAMES[base]} of {SUIT_NAMES[dst.index >> 1]}")
            return f"{dst.short} starts with {wanted}, {not_card}"
        if len(dst.cards) >= 13:
            return f"{dst.short} is complete (13 cards), {not_card}"
        top = dst.cards[-1]
        rank = RANK_NAMES[(RANK[top] + 1) % 13]
        if self.in_suit:
            wanted = with_article(f"{rank} of {SUIT_NAMES[SUIT[top]]}")
        else:
            wanted = with_article(f"{COLOR_NAMES[1 - COLOR[top]]} {rank}")
        return f"{dst.short} needs {wanted} next, {not_card}"

    def explain_deal(self) -> str:
        if self._is_choosing():
            return "the stock is locked until the base card is chosen"
        return "the stock is empty (one pass only)"

    def scalar_state(self) -> tuple[Any, ...]:
        return (self.round,)


class QueenOfItaly(Terrace):
    game_id = "queen-of-italy"
    title = "Queen of Italy"
    pysolfc_id = 431
    refills = False
    foundation_moves = True


class GeneralsPatience(Terrace):
    game_id = "generals-patience"
    title = "General's Patience"
    pysolfc_id = 136
    reserve_size = 13
    in_suit = True


class BlondesAndBrunettes(Terrace):
    game_id = "blondes-and-brunettes"
    title = "Blondes and Brunettes"
    pysolfc_id = 137
    reserve_size = 10
    choose_base = False


class FallingStar(BlondesAndBrunettes):
    game_id = "falling-star"
    title = "Falling Star"
    pysolfc_id = 138
    reserve_size = 11
