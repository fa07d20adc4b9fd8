"""Why a link could not be opened, in words the user can act on: `ConnectionFailedError`,
said for a failure before any WebSocket frame (`connect_failure`: nothing listening, a
refused or no WebSocket handshake, the wrong scheme for the port, an untrusted certificate)
and for a link the server closed before it was up (`closed_error`)."""

from __future__ import annotations

import re
import socket
import ssl
from typing import Final
from urllib.parse import urlsplit

from websockets.exceptions import ConnectionClosed, InvalidMessage, InvalidStatus
from websockets.http11 import Response

from .link_closes import FATAL_CLOSE_CODES, close_text


class ConnectionFailedError(Exception):
    """The server could not be reached or refused the hello (`fatal`: retrying cannot help).

    `close_code`: the close code the server ended the hello with (4001: a refused token);
    `error_code`: the code of the `error` it answered the hello with (`name_taken`);
    `retry_after_s`: how long the server asked to wait before trying again (the `Retry-After`
    of a handshake it refused past its connection limits, 429 or 503)."""

    def __init__(
        self,
        message: str,
        *,
        fatal: bool = False,
        close_code: int | None = None,
        error_code: str | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(message)
        self.fatal = fatal
        self.close_code = close_code
        self.error_code = error_code
        self.retry_after_s = retry_after_s


def closed_error(exc: ConnectionClosed) -> ConnectionFailedError:
    """A link the server closed before it was up (during the hello or the resume)."""
    code = exc.rcvd.code if exc.rcvd else None
    reason = exc.rcvd.reason if exc.rcvd else ""
    return ConnectionFailedError(
        f"the server closed the connection: {close_text(code, reason)}",
        fatal=code in FATAL_CLOSE_CODES,
        close_code=code,
    )


#: A tag of an HTML page (`_refusal_text` keeps its words).
_TAG: Final = re.compile(r"<[^>]*>")


def _refusal_text(response: Response) -> str:
    """The status and the reason of a refused handshake: the server's one-line body, or the
    words of a proxy's HTML page (HAProxy's 503 with no node up), at most 200 characters."""
    body = response.body.decode("utf-8", "replace")
    if body.lstrip().startswith("<"):
        body = _TAG.sub(" ", body)
    reason = " ".join(body.split())
    said = f": {reason[:200]}" if reason else ""
    return f"HTTP {response.status_code}{said}"


#: What a WebSocket server answers only to a request it would take: a success or a redirect
#: instead of the upgrade, or "no such page", is an HTTP server, not a solrace server (which
#: refuses with 400, 403, 429, 431 or 503, and a path it does not serve with a 404 of its own:
#: `Server: solrace`).
_NOT_A_REFUSAL: Final = frozenset({404})


def _handshake_failure(url: str, exc: InvalidStatus) -> ConnectionFailedError:
    """A handshake answered with an HTTP status instead of the upgrade: a refusal (the
    server's limits, a proxy with no node up: retried, never before its `Retry-After`), or
    the answer of something that is not a solrace server at all."""
    response = exc.response
    if response.status_code == 404 and response.headers.get("Server") == "solrace":
        # A solrace server with no WebSocket at this path: its answer names the one it has.
        return ConnectionFailedError(f"{url} refused the path: {_refusal_text(response)}")
    if response.status_code < 400 or response.status_code in _NOT_A_REFUSAL:
        return ConnectionFailedError(
            f"{url} is not a solrace server: its answer is no WebSocket handshake "
            f"({_refusal_text(response)})"
        )
    return ConnectionFailedError(
        f"{url} refused the connection: {_refusal_text(response)}",
        retry_after_s=_retry_after_s(response),
    )


#: What OpenSSL says of an answer to its hello that is no TLS record (a plain ws:// server).
_NOT_TLS: Final = "WRONG_VERSION_NUMBER"

#: OpenSSL's verify codes of a certificate whose issuer is not trusted here: self-signed
#: (18, or 19 in the chain), or of a CA this machine does not have (2, 20, 21).
_UNTRUSTED_ISSUER: Final = frozenset({2, 18, 19, 20, 21})


def connect_failure(url: str, exc: BaseException) -> ConnectionFailedError:
    """What a failure to open the link to `url` (before any WebSocket frame) means."""
    if isinstance(exc, InvalidStatus):  # refused before the upgrade, e.g. too many connections
        return _handshake_failure(url, exc)
    if isinstance(exc, InvalidMessage):
        if not isinstance(exc.__cause__, ValueError):  # the link closed during the handshake
            return ConnectionFailedError(f"cannot reach {url}: {exc}")
        # An answer that is no HTTP/1.1 response (an HTTP/1.0 server, another protocol).
        return ConnectionFailedError(
            f"{url} is not a solrace server: its answer is no WebSocket handshake ({exc.__cause__})"
        )
    if isinstance(exc, ConnectionRefusedError):
        return ConnectionFailedError(
            f"cannot reach {url}: connection refused (no server is listening there)"
        )
    if isinstance(exc, socket.gaierror):
        # A host name that does not resolve (a typo in --server, no DNS): said as such, not
        # as `[Errno -2] Name or service not known`.
        host = urlsplit(url).hostname or url
        return ConnectionFailedError(
            f"cannot reach {url}: cannot look up the host {host} ({exc.strerror}): check the "
            "server URL"
        )
    if isinstance(exc, ssl.SSLCertVerificationError) and exc.verify_code in _UNTRUSTED_ISSUER:
        # A self-signed certificate, or one of a private CA: Python's default context trusts
        # the CA file SSL_CERT_FILE names instead of the system's. (A certificate for another
        # name, or expired, is said as OpenSSL says it: trusting a CA would not help.)
        return ConnectionFailedError(
            f"cannot reach {url}: {exc} (a certificate this machine does not trust: "
            "SSL_CERT_FILE=CA.pem before the command trusts the CA certificates in CA.pem)"
        )
    if isinstance(exc, ssl.SSLError):
        # wss:// to a server that speaks plain ws://: its answer is no TLS record.
        plain = " (a server without TLS: try ws://)" if exc.reason == _NOT_TLS else ""
        return ConnectionFailedError(f"cannot reach {url}: {exc}{plain}")
    return ConnectionFailedError(f"cannot reach {url}: {exc}")


def _retry_after_s(response: Response) -> float | None:
    """`Retry-After` in seconds (the server sends no dates), at most a minute; None if absent
    or unreadable."""
    value = response.headers.get("Retry-After")
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None
    return None if seconds is None or seconds < 0 else min(seconds, 60.0)


__all__ = ["ConnectionFailedError", "closed_error", "connect_failure"]
