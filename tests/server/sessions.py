"""A hub session for in-process tests: it records what the hub sends.

It implements `send` only: a frame the hub hands to `send_frame` comes back through
`Session`'s fallback, decoded, so `sent` holds what a client would read."""

from __future__ import annotations

from pydantic import BaseModel

from solrace.server.protocol.closecodes import CloseCode
from solrace.server.session import Session


class RecordingSession(Session):
    def __init__(self, session_id: int) -> None:
        super().__init__(session_id)
        self.sent: list[BaseModel] = []

    def send(self, message: BaseModel) -> None:
        self.sent.append(message)

    def close(self, code: CloseCode, reason: str) -> None:
        self.closed = True
