"""Routing client messages (server/routing.py): each message type is answered by the one
handler added for it; a second handler for a type is refused, not left to lose silently."""

from __future__ import annotations

from typing import Any

import pytest

from solrace.server.protocol.messages import ListRaces, Resign, Sync
from solrace.server.routing import Routes
from solrace.server.session import Session


async def first(session: Session, message: Any) -> None:
    """A handler (never called here: the routes only hand it out)."""


async def second(session: Session, message: Any) -> None:
    """Another handler."""


def test_each_message_type_goes_to_the_handler_added_for_it() -> None:
    routes = Routes()
    routes.add({ListRaces: first})
    routes.add({Resign: second})
    assert routes.handler_of(ListRaces()) is first
    assert routes.handler_of(Resign(race_id="r1")) is second
    assert routes.handler_of(Sync(race_id="r1")) is None


def test_a_second_handler_for_a_type_is_refused_and_nothing_of_its_batch_is_added() -> None:
    routes = Routes()
    routes.add({ListRaces: first})
    with pytest.raises(ValueError, match="answered already: ListRaces"):
        routes.add({Resign: second, ListRaces: second})
    assert routes.handler_of(ListRaces()) is first
    assert routes.handler_of(Resign(race_id="r1")) is None
