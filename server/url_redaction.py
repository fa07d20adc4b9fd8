"""A URL fit for logs and error lines: the password it may carry (a Redis URL's) hidden."""

from __future__ import annotations

__all__ = ["redact"]


def redact(url: str) -> str:
    """A URL fit for logs: no password."""
    scheme, sep, rest = url.partition("://")
    if sep and "@" in rest:
        return f"{scheme}://***@{rest.split('@', 1)[1]}"
    return url
