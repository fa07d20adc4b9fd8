"""One log line when something starts failing and one when it works again, not one per try.

A store or Redis outage makes the same step fail many times a second (every move, every
tick, every reconnect): a line each would flood the log, and on a full disk fill it further.
`Outage` logs the first failure as a warning, counts the others quietly (DEBUG), and says how
many there were once the thing works again.
"""

from __future__ import annotations

import logging


class Outage:
    """The failures of one thing (`what`, e.g. "storing moves") since it last worked."""

    def __init__(self, log: logging.Logger, what: str) -> None:
        self.log = log
        self.what = what
        self.failures = 0

    def failed(self, reason: object) -> None:
        """One more failure: a warning for the first, DEBUG for the rest."""
        self.failures += 1
        if self.failures == 1:
            self.log.warning("%s failed: %s (said once until it works again)", self.what, reason)
        else:
            self.log.debug("%s failed again (%d): %s", self.what, self.failures, reason)

    def worked(self) -> None:
        """It worked: after failures, one line says so and how many there were."""
        if self.failures:
            self.log.warning("%s works again after %d failure(s)", self.what, self.failures)
            self.failures = 0
