"""The per-address guess budget's log, on a clock the test moves: the WARNING that an address
ran out of credit is said when it runs out, not each time a trickle of guesses drains the
credit that came back since."""

from __future__ import annotations

import logging

import pytest

from solrace.server.guesses import INVITE_CODE_GUESSES, Guesses
from solrace.server.protocol.errors import ErrorCode, RaceError
from tests.server.sessions import RecordingSession

WRONG = RaceError(ErrorCode.BAD_INVITE, "this race needs its invite code (a wrong invite code)")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def ran_out_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and "refused unchecked" in r.getMessage()
    ]


def test_running_out_is_said_once_while_a_trickle_keeps_the_address_drained(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="solrace.server.guesses")
    limit = INVITE_CODE_GUESSES
    clock = Clock()
    guesses = Guesses(limit, per_address=True, clock=clock)
    session = RecordingSession(1)
    session.address = "192.0.2.7"
    scope = "race r0123456789"
    for _ in range(limit.per_address):
        guesses.check(session, scope)
        guesses.wrong(session, WRONG, scope)
    assert len(ran_out_lines(caplog)) == 1
    assert "from 192.0.2.7 for race r0123456789" in ran_out_lines(caplog)[0]
    # One guess is taken each time a credit comes back, and spends it: still out, not said.
    refill_s = limit.window_s / limit.per_address
    for _ in range(10):
        with pytest.raises(RaceError) as refused:
            guesses.check(session, scope)
        assert refused.value.code is ErrorCode.TOO_MANY_GUESSES
        clock.now += refill_s
        guesses.check(session, scope)
        guesses.wrong(session, WRONG, scope)
    assert len(ran_out_lines(caplog)) == 1
    # Left alone until its credit is whole again, it is said anew the next time it runs out.
    clock.now += limit.window_s
    for _ in range(limit.per_address):
        guesses.check(session, scope)
        guesses.wrong(session, WRONG, scope)
    assert len(ran_out_lines(caplog)) == 2


def test_a_connection_s_wrong_guesses_come_back_over_the_window() -> None:
    """A lobby left open all evening that now and then mistypes a code is not closed for it:
    the connection's wrong guesses come back evenly over the window; a burst closes it."""
    limit = INVITE_CODE_GUESSES
    clock = Clock()
    guesses = Guesses(limit, per_address=False, clock=clock)
    session = RecordingSession(1)
    refill_s = limit.window_s / limit.per_connection
    for _ in range(3 * limit.per_connection):  # one a refill apart: never closed
        assert guesses.wrong(session, WRONG).close_reason is None
        clock.now += refill_s
    closes = [guesses.wrong(session, WRONG).close_reason for _ in range(limit.per_connection)]
    assert closes == [None] * (limit.per_connection - 1) + ["too many wrong invite codes"]
