"""British Square (PySolFC 35, "Union Square"): sixteen piles built up or down in suit."""

from __future__ import annotations

from ..cards import KING, RANK, RANK_NAMES, SUIT, SUIT_NAMES, TEXT, with_article
from ..game import Game
from ..piles import FOUNDATION, STOCK, TABLEAU, WASTE, Pile


class BritishSquare(Game):
    game_id = "british-square"
    title = "British Square"
    pysolfc_id = 35
    decks = 2
    n_foundations = 4
    n_tableau = 16
    max_rounds = 1
    pile_order = (STOCK, WASTE, TABLEAU, FOUNDATION)

    def start(self) -> None:
        for p in self.tableau:
            self.deal_to(p)
        self.deal_click()

    def can_pick(self, src: Pile, n: int) -> bool:
        return n == 1 and src.kind in (TABLEAU, WASTE)

    def accepts(self, dst: Pile, src: Pile, n: int) -> bool:
        if n != 1:
            return False
        card = src.cards[-1]
        cards = dst.cards
        if dst.kind == FOUNDATION:
            size = len(cards)
            if SUIT[card] != dst.index or size >= 26:
                return False
            return RANK[card] == (size if size < 13 else 25 - size)
        if dst.kind != TABLEAU:
            return False
        if not cards:
            return True
        if SUIT[card] != SUIT[cards[0]]:
            return False
        if len(cards) == 1:
            return abs(RANK[card] - RANK[cards[0]]) == 1
        return RANK[cards[-1]] + (RANK[cards[1]] - RANK[cards[0]]) == RANK[card]

    def auto_flip_piles(self) -> list[Pile]:
        return []

    def explain(self, src: Pile, dst: Pile, n: int) -> str:
        if src.kind == FOUNDATION and src.cards:
            return "foundation cards never move back in British Square"
        if n > 1 and src.cards:
            return "British Square moves one card at a time"
        return super().explain(src, dst, n)

    def explain_tableau(self, dst: Pile, src: Pile, n: int) -> str | None:
        """A one-card pile takes its suit one rank above or below; a longer one keeps the
        direction its two bottom cards set, in suit, without wrapping. (A space takes any card
        `explain` has not refused already.)"""
        cards, card = dst.cards, src.cards[-1]
        if not cards:
            return None
        top, suit = cards[-1], SUIT_NAMES[SUIT[cards[0]]]
        not_card = f"on {TEXT[top]}, not {TEXT[card]}"
        if len(cards) == 1:
            ranks = [RANK_NAMES[r] for r in (RANK[top] - 1, RANK[top] + 1) if 0 <= r <= KING]
            wanted = with_article(f"{' or '.join(ranks)} of {suit}")
            return f"{dst.short} builds in suit, up or down: it needs {wanted} {not_card}"
        step = RANK[cards[1]] - RANK[cards[0]]
        if step not in (1, -1):
            return None  # not a pile the rules build
        way = "up" if step == 1 else "down"
        rule = f"{dst.short} builds {way} in {suit}"
        if not 0 <= RANK[top] + step <= KING:
            end = "King" if step == 1 else "Ace"
            return f"{rule} and ends at the {end}: nothing goes {not_card}"
        wanted = with_article(f"{RANK_NAMES[RANK[top] + step]} of {suit}")
        return f"{rule}: it needs {wanted} {not_card}"

    def explain_foundation(self, dst: Pile, card: int) -> str:
        """Each foundation builds its own suit Ace to King, then the second King down to Ace."""
        suit, size, not_card = SUIT_NAMES[dst.index], len(dst.cards), f"not {TEXT[card]}"
        if size >= 26:
            return f"{dst.short} is complete (26 cards), {not_card}"
        if not size:
            return f"{dst.short} starts with an Ace of {suit}, {not_card}"
        wanted = with_article(f"{RANK_NAMES[size if size < 13 else 25 - size]} of {suit}")
        if size == 13:
            return f"{dst.short} needs a second King of {suit} next (then builds down), {not_card}"
        if size > 13:
            return f"{dst.short} builds down now and needs {wanted} next, {not_card}"
        return f"{dst.short} needs {wanted} next, {not_card}"

    def explain_deal(self) -> str:
        return "the stock is empty (one pass only)"
