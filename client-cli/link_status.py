"""What a `Connection`'s reader gets (`Incoming`): the server's messages, and a `StatusChange`
when the link goes down, comes back, or is closed for good (its new `LinkStatus`)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from solrace.server.protocol.messages import ServerMessage


class LinkStatus(StrEnum):
    CONNECTED = "connected"
    RECONNECTING = "reconnecting"
    CLOSED = "closed"


@dataclass(frozen=True, slots=True)
class StatusChange:
    """The link went down, came back, or is closed for good (`detail` says why)."""

    status: LinkStatus
    detail: str = ""


Incoming = ServerMessage | StatusChange


__all__ = ["Incoming", "LinkStatus", "StatusChange"]
