"""Whether the server behind a `ws://` URL that gave no handshake speaks TLS (wants `wss://`).

A plain HTTP request sent to a TLS port is answered in ways that do not say TLS: a closed link
(Python's `ssl`, haproxy) or an HTTP 400 in the proxy's words (nginx, Go). A TLS handshake to
the same host and port tells such a port from a plain server that failed the same way.
"""

from __future__ import annotations

import asyncio
import ssl

from websockets.exceptions import InvalidMessage, InvalidStatus
from websockets.uri import parse_uri

#: Seconds the probe may take in all, at most (a far or slow server).
PROBE_TIMEOUT_S = 3.0
#: Seconds a TLS answer to the probe's hello may take past `PROBE_ROUND_TRIPS` round trips
#: (the server's key work): a plain server that reads the hello as the start of a request
#: says nothing, and is not waited for longer.
PROBE_ANSWER_S = 0.5
#: Round trips, each as long as opening the TCP link took, that a TLS answer may take.
PROBE_ROUND_TRIPS = 4


def may_be_tls_port(url: str, failure: BaseException) -> bool:
    """Whether `failure` (of a handshake to `url`) is how a TLS port answers plain HTTP: the
    URL says `ws://` and the link was closed or reset before any answer, or the answer was an
    HTTP 400. (An answer that is no HTTP response is not: the TLS servers tried close the link
    instead, and a plain server that sent it may wait on the probe's hello until its timeout.)"""
    if parse_uri(url).secure:
        return False
    if isinstance(failure, InvalidStatus):
        return failure.response.status_code == 400
    if isinstance(failure, InvalidMessage):
        return not isinstance(failure.__cause__, ValueError)  # closed, not answered
    return isinstance(failure, ConnectionResetError)


async def speaks_tls(url: str, timeout_s: float = PROBE_TIMEOUT_S) -> bool:
    """Whether the host and port of `url` complete a TLS handshake, or answer it with a TLS
    alert, within a few round trips (`probe_wait_s`) and `timeout_s` in all. The certificate
    is not checked: the question is only which protocol it speaks."""
    uri = parse_uri(url)
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(timeout_s):
            started = loop.time()
            _, writer = await asyncio.open_connection(uri.host, uri.port)
            round_trip_s = loop.time() - started
            try:
                async with asyncio.timeout(probe_wait_s(round_trip_s)):
                    await writer.start_tls(context, server_hostname=uri.host)
            finally:
                # The answer is in, or never comes: the link is cut, without waiting on a TLS
                # goodbye the server may never send.
                writer.transport.abort()
    except ssl.SSLError as exc:
        return "ALERT" in (exc.reason or "")  # the server answered in TLS, refusing the hello
    except (OSError, TimeoutError):
        return False
    return True


def probe_wait_s(round_trip_s: float) -> float:
    """Seconds the probe waits for the answer to its TLS hello, given how long opening the TCP
    link took (`round_trip_s`, about one round trip)."""
    return PROBE_ANSWER_S + PROBE_ROUND_TRIPS * round_trip_s
