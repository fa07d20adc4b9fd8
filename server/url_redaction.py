"""A URL fit for logs and error lines: the password it may carry (a Redis URL's) hidden."""

from __future__ import annotations

import re

__all__ = ["redact"]

#: A password given as a query option (`?password=...`), which a Redis URL refuses (it
#: belongs before the host) but the refusal names the URL.
_QUERY_PASSWORD = re.compile(r"([?&]password=)[^&#]*")


def redact(url: str) -> str:
    """A URL fit for logs: no password."""
    scheme, sep, rest = url.partition("://")
    if sep and "@" in rest:
        url = f"{scheme}://***@{rest.split('@', 1)[1]}"
    return _QUERY_PASSWORD.sub(r"\1***", url)
