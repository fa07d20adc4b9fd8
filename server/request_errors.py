"""The error a session is sent when the hub refuses its request: an `Error` with the refusal's
code and message, the type of the request refused, and the race it names if any."""

from __future__ import annotations

from solrace.server.protocol.errors import ErrorCode
from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.messages import ClientMessage, Error
from solrace.server.session import Session


def send_error(
    session: Session,
    code: ErrorCode,
    message: str,
    request: ClientMessage | None = None,
    race_id: RaceId | None = None,
) -> None:
    session.send(
        Error(
            code=code.value,
            message=message,
            request=None if request is None else request.type,
            race_id=race_id,
        )
    )


__all__ = ["send_error"]
