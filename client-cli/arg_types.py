"""Argparse types of the client's numeric options: a value out of range is refused by the
command line (exit status 2, the option named), before anything connects."""

from __future__ import annotations

import argparse
import math


def positive(text: str) -> int:
    """An option's whole number above 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value}: must be 1 or more")
    return value


def seconds(text: str) -> float:
    """An option's length of time in seconds: a finite number, 0 or more."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text}: must be a number of seconds, 0 or more")
    return value


__all__ = ["positive", "seconds"]
