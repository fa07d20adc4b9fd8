"""What the node's port answers before a WebSocket opens: probes, refusals and the opening
handshake, as `http_head` judges the request's head.

The same port answers `GET` (and `HEAD`) `/healthz` and `/metrics`; other methods get 405.
The WebSocket opens on one path (`Settings.ws_path`, `/` by default; the query aside): a
request on any other path is answered 404, naming that one.
One request per connection: its answer closes it, and bytes after its head are discarded.

Each is a function of the connection (`WebSocketSession`), which hands its first reads to
`take_head` and the request its protocol parsed to `answer_request`.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import TYPE_CHECKING, assert_never

from websockets.http11 import Request, Response
from websockets.protocol import State

from solrace.server.admission import Refusal
from solrace.server.http_head import (
    MAX_HEAD_BYTES,
    HandshakeBody,
    Incomplete,
    NotAllowed,
    NotFound,
    NotHttp,
    TooLarge,
    WholeHead,
    allowed_methods,
    is_probe,
    path_of,
)
from solrace.server.metrics import CONTENT_TYPE
from solrace.server.websocket_protocol import probe_log

if TYPE_CHECKING:
    from solrace.server.websocket_session import WebSocketSession


def take_head(session: WebSocketSession, data: bytes) -> bytes:
    """Until the request head is whole it is kept (`http_head.HeadReader`, which says
    why); then this does what the reader's verdict says. Returns the bytes for the
    protocol after the head: none while it is incomplete, or once it is answered here."""
    reader = session.head
    assert reader is not None
    verdict = reader.feed(data)
    if isinstance(verdict, Incomplete):
        return b""
    session.head = None
    match verdict:
        case TooLarge():
            return _not_http(
                session,
                f"a request head is at most {MAX_HEAD_BYTES // 1024} KiB",
                HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE,
            )
        case NotHttp(reason=reason):
            return _not_http(session, reason)
        case NotFound(method=method):
            return _refuse(session, _not_found(session, method))
        case NotAllowed(method=method, path=path):
            return _refuse(session, _not_allowed(session, method, path))
        case HandshakeBody():
            text = "a WebSocket handshake has no body\n"
            return _refuse(session, session.ws.reject(HTTPStatus.BAD_REQUEST, text))
        case WholeHead(head=head, rest=rest):
            ws = session.ws
            ws.receive_data(head)
            for event in ws.events_received():
                if isinstance(event, Request):
                    answer_request(session, event)
            session.flush()
            return rest
    assert_never(verdict)


def _not_http(
    session: WebSocketSession, reason: str, status: HTTPStatus = HTTPStatus.BAD_REQUEST
) -> bytes:
    """Answer 400 (or `status`) to bytes no request begins with, a malformed head or one
    too large, and close once it is written: such a peer (a TLS hello, a scanner) reads
    no answer and may never close; logged at DEBUG, like a probe, so that a flood of
    them does not flood the log."""
    session.ws.logger = probe_log
    rest = _refuse(session, session.ws.reject(status, reason + "\n"))
    if session.transport is not None:
        session.transport.close()  # after what is buffered
    return rest


def _refuse(session: WebSocketSession, response: Response) -> bytes:
    """Answer the request before the protocol reads it; whatever follows is discarded."""
    session.ws.send_response(response)
    session.flush()
    return b""


def _not_found(session: WebSocketSession, method: str) -> Response:
    """The answer to a request on a path the server does not serve: 404, naming the
    WebSocket path (a HEAD gets the headers alone). Logged at DEBUG, like a probe: a
    scanner trying paths must not flood the log."""
    session.ws.logger = probe_log
    response = session.ws.reject(
        HTTPStatus.NOT_FOUND, f"this server's WebSocket path is {session.edge.settings.ws_path}\n"
    )
    response.headers["Server"] = "solrace"
    if method == "HEAD":
        response.body = b""
    return response


def _not_allowed(session: WebSocketSession, method: str, path: str) -> Response:
    allowed = allowed_methods(path)
    response = session.ws.reject(
        HTTPStatus.METHOD_NOT_ALLOWED, f"{method[:16]} is not allowed: {allowed}\n"
    )
    response.headers["Allow"] = allowed
    return response


def answer_request(session: WebSocketSession, request: Request) -> None:
    """The opening handshake, or a plain HTTP request for `/healthz` or `/metrics`."""
    ws = session.ws
    if ws.eof_sent:
        return  # a request the protocol could not read: it closes the stream unanswered
    path = path_of(request.path)  # the WebSocket path or a probe's (`HeadReader`)
    if is_probe(path):
        ws.logger = probe_log  # the protocol logs the answer and the close with it
    method = request.method
    if method not in ("GET", "HEAD"):
        response = _not_allowed(session, method, path)
    elif path == "/healthz":
        response = ws.reject(HTTPStatus.OK, "ok\n")
    elif path == "/metrics":
        response = ws.reject(HTTPStatus.OK, "")
        response.body = session.edge.metrics.render()
        del response.headers["Content-Type"], response.headers["Content-Length"]
        response.headers["Content-Type"] = CONTENT_TYPE
        response.headers["Content-Length"] = str(len(response.body))
    elif session.refusal is not None:
        response = _refused(session, session.refusal)
    else:
        response = ws.accept(request)  # 405 (`Allow: GET`) for a HEAD
        response.headers["Server"] = "solrace"
    if method == "HEAD":
        response.body = b""  # the headers a GET would get (Content-Length too), no body
    ws.send_response(response)
    if ws.state is State.OPEN:
        session.accepted()


def _refused(session: WebSocketSession, refusal: Refusal) -> Response:
    """The answer to a handshake past an admission limit (`solrace.server.admission`),
    logged at DEBUG like a probe's: a flood of handshakes, which the limits are for, must
    not flood the log too (`solrace_connections_refused_total` counts them)."""
    session.ws.logger = probe_log
    session.edge.metrics.connections_refused.labels(refusal.kind.value).inc()
    response = session.ws.reject(refusal.status, refusal.text + "\n")
    response.headers["Retry-After"] = str(refusal.retry_after_s)
    return response


__all__ = ["answer_request", "take_head"]
