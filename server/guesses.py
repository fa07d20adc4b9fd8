"""Wrong guesses of a secret are expensive: the admin token (`create_tournament`,
`tournament_admin`) and a race's invite code (`join_race`).

A secret a client presents that turns out wrong is a wrong guess, and each kind of secret has
two limits (`GuessLimit`):

- per connection: `per_connection` wrong guesses, refilled evenly over `window_s` (a credit
  bucket): the wrong guess that spends its last credit is answered, then the connection is
  closed with 1008 and a reason naming the secret. A connection open all evening that now and
  then mistypes a code is not closed for it; one that guesses is, at once;
- per client address (`admission.client_key`) and scope, over a window: `per_address` wrong
  guesses, refilled evenly over `window_s` (a credit bucket). The scope is what the secret
  opens: one race for an invite code (wrong codes for one race do not lock the address out of
  the others), none for the admin token. An address with no credit left in a scope has every
  guess there refused without being checked (`too_many_guesses`, saying in how many seconds
  the next is taken), so reconnecting does not start it again. Such a refusal does not count
  toward the connection's limit: only a wrong guess that was checked does.

A right secret from an address with credit costs nothing: the check before it is one lookup.
Behind a proxy (`max_connections_per_address` 0: every client has the proxy's address) the
per-address limit is off, as admission's are, and the proxy's pace of connections bounds
the guesses.

A wrong guess is logged (`log_level`: a WARNING for admin tokens), with the connection and its
address, at most once a minute per address, counting the ones since that address's last line.
An address's running out of credit in a scope is a WARNING, said when a wrong guess spends its
last credit there; it is said again only once that credit has refilled entirely (`window_s`
without wrong guesses there) and run out anew, so a guesser who keeps it drained is told once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from solrace.server.log_throttle import LogThrottle
from solrace.server.protocol.errors import ErrorCode, RaceError
from solrace.server.protocol.ratelimit import CreditBucket
from solrace.server.session import Session

log = logging.getLogger("solrace.server.guesses")

#: Seconds between two log lines about one address's wrong guesses of one kind.
WARN_EVERY_S = 60.0

#: Seconds between two sweeps of the addresses whose credit has refilled.
SWEEP_EVERY_S = 60.0


@dataclass(frozen=True, slots=True)
class GuessLimit:
    """How many wrong guesses of one secret (`noun`) a connection and an address get."""

    noun: str
    per_connection: int
    per_address: int
    window_s: float
    log_level: int


ADMIN_TOKEN_GUESSES = GuessLimit(
    "admin token", per_connection=5, per_address=10, window_s=600.0, log_level=logging.WARNING
)
INVITE_CODE_GUESSES = GuessLimit(
    "invite code", per_connection=10, per_address=20, window_s=600.0, log_level=logging.INFO
)


class WrongGuess(RaceError):
    """The refusal of a wrong guess (or of a guess not checked), and the reason of the close
    (1008) that follows it when the connection has reached its limit (None: it stays open)."""

    def __init__(self, code: ErrorCode, message: str, close_reason: str | None) -> None:
        super().__init__(code, message)
        self.close_reason = close_reason


class Guesses:
    """The wrong guesses of one kind of secret on this node (the module's docstring)."""

    def __init__(
        self,
        limit: GuessLimit,
        *,
        per_address: bool,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limit = limit
        #: False behind a proxy: no per-address credit (the module's docstring).
        self.per_address = per_address
        self.clock = clock
        #: Each address's credit of wrong guesses, dropped once refilled.
        self.credits: dict[tuple[str, str], CreditBucket] = {}
        #: The (address, scope)s told to have run out, and not refilled entirely since.
        self.out: set[tuple[str, str]] = set()
        #: When each address's wrong guesses are next logged.
        self.lines = LogThrottle(WARN_EVERY_S)
        self.swept_at = clock()

    def check(self, session: Session, scope: str = "") -> None:
        """Before a guess from `session` in `scope` is checked: raises `WrongGuess`
        (`too_many_guesses`, the connection kept open) when its address has no credit left
        there."""
        bucket = self.credits.get((session.address, scope)) if self.per_address else None
        if bucket is None:
            return
        now = self.clock()
        if bucket.can_spend(now):
            return
        wait_s = max(1, round(bucket.wait_s(now)))
        raise WrongGuess(
            ErrorCode.TOO_MANY_GUESSES,
            f"too many wrong {self.limit.noun}s from your address: try again in {wait_s} s",
            None,
        )

    def wrong(self, session: Session, refusal: RaceError, scope: str = "") -> WrongGuess:
        """`session`'s guess in `scope` was wrong, refused with `refusal`: counted for the
        connection and for its address in `scope`, and logged. Returns the error to raise in
        its place."""
        now = self.clock()
        self._sweep(now)
        self._note(session, now)
        if self.per_address:
            key = (session.address, scope)
            bucket = self.credits.get(key)
            if bucket is None:
                limit = self.limit
                bucket = self.credits[key] = CreditBucket(
                    limit.per_address, limit.per_address / limit.window_s, now
                )
            elif bucket.is_full(now):
                self.out.discard(key)
            if bucket.spend(now) and not bucket.can_spend(now) and key not in self.out:
                self.out.add(key)
                log.warning(
                    "%s: %d wrong %ss from %s%s within %g s: its %ss there are refused "
                    "unchecked for %d s",
                    session.label,
                    self.limit.per_address,
                    self.limit.noun,
                    session.address or "an unknown address",
                    f" for {scope}" if scope else "",
                    self.limit.window_s,
                    self.limit.noun,
                    round(bucket.wait_s(now)),
                )
        return self._count(session, refusal, now)

    def _count(self, session: Session, refusal: RaceError, now: float) -> WrongGuess:
        """Count a wrong guess on the connection: the error to raise, with the close once
        the connection has spent its last credit."""
        limit = self.limit
        bucket = session.wrong_guesses.get(limit.noun)
        if bucket is None:
            bucket = session.wrong_guesses[limit.noun] = CreditBucket(
                limit.per_connection, limit.per_connection / limit.window_s, now
            )
        bucket.spend(now)
        close = None if bucket.can_spend(now) else f"too many wrong {limit.noun}s"
        return WrongGuess(refusal.code, refusal.message, close)

    def _note(self, session: Session, now: float) -> None:
        """Log a wrong guess, at most once per `WARN_EVERY_S` per address."""
        unsaid = self.lines.due(session.address, now)
        if unsaid is None:
            return
        log.log(
            self.limit.log_level,
            "%s: wrong %s (%d from this address since its previous such line; one a minute "
            "at most)",
            session.label,
            self.limit.noun,
            unsaid + 1,
        )

    def _sweep(self, now: float) -> None:
        """Once a minute, forget the credit that has refilled and the log lines a minute old:
        what a flood from many addresses leaves behind is bounded."""
        if now - self.swept_at < SWEEP_EVERY_S:
            return
        self.swept_at = now
        for scoped in [k for k, b in self.credits.items() if b.is_full(now)]:
            del self.credits[scoped]
            self.out.discard(scoped)
        self.lines.forget(now)


__all__ = [
    "ADMIN_TOKEN_GUESSES",
    "INVITE_CODE_GUESSES",
    "GuessLimit",
    "Guesses",
    "WrongGuess",
]
