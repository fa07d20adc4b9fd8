"""A URL fit for logs and error lines: the password it may carry (a Redis URL's) hidden."""

from __future__ import annotations

import re

__all__ = ["redact"]

#: A password given as a query option (`unix:///PATH?db=0&password=...`), and all that
#: follows it: a raw `&` or `#` in the password would make its rest look like more options.
_QUERY_PASSWORD = re.compile(r"([?&]password=).*", re.DOTALL)
#: The scheme a URL starts with (`redis://`, `unix://`, or `redis:/` with a slash missing).
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:/*")


def redact(url: str) -> str:
    """A URL fit for logs: no password. Everything between the scheme and the last `@` is
    hidden: a password may itself hold an `@`, or a `/`, `?` or `#` that ends the host part
    early. A SQLite URL, or a text with no scheme (a file's path, which may hold an `@`), is
    shown as it is."""
    if url.startswith("sqlite:"):
        return url
    url = _QUERY_PASSWORD.sub(r"\1***", url)
    before, at, after = url.rpartition("@")
    scheme = _SCHEME.match(before)
    if not at or scheme is None:
        return url
    return f"{scheme.group()}***@{after}"
