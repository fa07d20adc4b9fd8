"""The bots' names: a name numbered to fit the server's longest (`numbered`), the default
`bot-N` of `solrace bot`, and the names a run's bots play as, each held for that program
(`held_names`, through `bot_identities`)."""

from __future__ import annotations

from .bot_identities import HeldName, free_names, hold
from .identity import NAME_LIMIT


def held_names(server: str, base: str | None, count: int) -> list[tuple[str, HeldName | None]]:
    """The bots' names, held for this program (`bot_identities`): `--name` (numbered when
    `count` > 1), each held unless another program holds it; without a name, the first
    `bot-N` names no other program holds."""
    if base is None:
        return [(held.asked, held) for held in free_numbered(server, "bot", count)]
    names = [base] if count == 1 else [numbered(base, i + 1) for i in range(count)]
    return [(name, hold(server, name)) for name in names]


def free_numbered(server: str, stem: str, count: int) -> list[HeldName]:
    """`count` names `stem-1`, `stem-2`, ... held for this program, passing over those other
    programs hold (a second run at once plays as the next numbers)."""
    return free_names(server, lambda number: numbered(stem, number), count)


def default_bot_name(number: int) -> str:
    """The default name of the `solrace bot` numbered `number`."""
    return numbered("bot", number)


def numbered(stem: str, number: int) -> str:
    """`stem-number`, `stem` cut so that it fits the server's longest name."""
    suffix = f"-{number}"
    return stem[: NAME_LIMIT - len(suffix)] + suffix


__all__ = ["default_bot_name", "free_numbered", "held_names", "numbered"]
