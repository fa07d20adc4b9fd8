"""Colorado (PySolFC 296): two decks, twenty piles fed only from a one-card waste."""

from __future__ import annotations

from ..cards import ACE, KING, RANK, RANK_NAMES, SUIT, SUIT_NAMES, TEXT, with_article
from ..game import Game
from ..piles import FOUNDATION, STOCK, TABLEAU, WASTE, Pile


class Colorado(Game):
    game_id = "colorado"
    title = "Colorado"
    pysolfc_id = 296
    decks = 2
    n_foundations = 8
    n_tableau = 20
    max_rounds = 1
    pile_order = (FOUNDATION, TABLEAU, STOCK, WASTE)

    def shuffle_hook(self, cards: list[tuple[int, int]]) -> list[tuple[int, int]]:
        def is_base(dc: tuple[int, int]) -> bool:
            return dc[0] == 0 and RANK[dc[1]] in (ACE, KING)

        bases = [dc for dc in cards if is_base(dc)]
        # Dealt first (the end of the list is the top): AC AS AH AD, then KC KS KH KD.
        bases.sort(key=lambda dc: (-RANK[dc[1]], -SUIT[dc[1]]))
        return [dc for dc in cards if not is_base(dc)] + bases

    def start(self) -> None:
        for p in self.foundations:
            self.deal_to(p)
        for p in self.tableau:
            self.deal_to(p)
        self.deal_to(self.waste)

    def can_pick(self, src: Pile, n: int) -> bool:
        return n == 1 and src.kind in (TABLEAU, WASTE)

    def accepts(self, dst: Pile, src: Pile, n: int) -> bool:
        if n != 1:
            return False
        card = src.cards[-1]
        if dst.kind == TABLEAU:
            return src.kind == WASTE
        if dst.kind != FOUNDATION:
            return False
        i = dst.index
        if i < 4:
            return SUIT[card] == i and RANK[card] == len(dst.cards)
        return SUIT[card] == i - 4 and RANK[card] == KING - len(dst.cards)

    def can_deal(self) -> bool:
        return bool(self.stock.cards) and not self.waste.cards

    def after_move(self, src: Pile, dst: Pile, n: int) -> None:
        if src.kind == TABLEAU and not src.cards and self.waste.cards:
            self.move_cards(self.waste, src, 1)

    def auto_flip_piles(self) -> list[Pile]:
        return []

    def explain(self, src: Pile, dst: Pile, n: int) -> str:
        if src.kind == FOUNDATION and src.cards:
            return "foundation cards never move in Colorado"
        if dst.kind == TABLEAU and src.kind != WASTE and src.cards:
            return f"{dst.short} takes cards only from the waste"
        if n > 1 and src.cards:
            return "Colorado moves one card at a time"
        return super().explain(src, dst, n)

    def explain_foundation(self, dst: Pile, card: int) -> str:
        """f0..f3 build up from the Ace, f4..f7 down from the King, each in its own suit."""
        up = dst.index < 4
        suit, size = SUIT_NAMES[dst.index % 4], len(dst.cards)
        if size >= 13:
            way = "Ace up to King" if up else "King down to Ace"
            return f"{dst.short} is complete ({way} of {suit}), not {TEXT[card]}"
        wanted = with_article(f"{RANK_NAMES[size if up else KING - size]} of {suit}")
        if not size:
            return f"{dst.short} starts with {wanted}, not {TEXT[card]}"
        return f"{dst.short} needs {wanted} next, not {TEXT[card]}"

    def explain_deal(self) -> str:
        if self.waste.cards:
            return "play the waste card first: the stock deals only onto an empty waste"
        return "the stock is empty (one pass only)"
