"""The finish hooks (server/race_finish_hooks.py) a race this node finished goes to: in
order, a failing one logged, a removed one not called."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.messages import Resign
from solrace.server.protocol.records import RaceRecord
from tests.server.sessions import running_hub, start_race_of_two


async def test_finish_hooks_run_in_order_and_a_removed_one_does_not(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A race this node finishes goes to the hooks in the order they were added, a failing
    one logged and the next still called; a hook removed is not called, and removing one
    that is not there is refused."""
    calls: list[tuple[str, RaceId]] = []

    def hook(name: str, *, fails: bool = False) -> Callable[[RaceRecord], Awaitable[None]]:
        async def finished(record: RaceRecord) -> None:
            calls.append((name, record.race_id))
            if fails:
                raise RuntimeError(f"{name} failed")

        return finished

    removed = hook("removed")
    async with running_hub() as hub:
        for each in (hook("first"), hook("failing", fails=True), removed, hook("last")):
            hub.keeper.add_finish_hook(each)
        hub.keeper.remove_finish_hook(removed)
        with pytest.raises(ValueError):
            hub.keeper.remove_finish_hook(removed)
        race_id, alice, bob = await start_race_of_two(hub)
        for session in (alice, bob):
            await hub.handle(session, Resign(race_id=race_id))
    assert calls == [("first", race_id), ("failing", race_id), ("last", race_id)]
    assert f"race {race_id}: a finish hook failed" in caplog.text
