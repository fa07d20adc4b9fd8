"""What the hub knows of one connection; the transport supplies `send` and `close`."""

from __future__ import annotations

from abc import ABC, abstractmethod

from pydantic import BaseModel

from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.codec import decode_server
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.ratelimit import CreditBucket


class Session(ABC):
    """One client connection: its identity, what it watches, and a way to reach it."""

    def __init__(self, session_id: int) -> None:
        self.session_id = session_id
        #: The client's address as the admission limits count it (`admission.client_key`);
        #: "" when it has none (a session of the tests).
        self.address = ""
        #: The credit of wrong guesses of each secret left to this connection, by its noun
        #: (`guesses.Guesses`).
        self.wrong_guesses: dict[str, CreditBucket] = {}
        self.said_hello = False
        #: Whether its hello was answered: one replaced before that closes once it is.
        self.welcomed = False
        self.player_id: PlayerId | None = None
        self.name: str | None = None
        self.watching: set[RaceId] = set()
        #: Race id -> (epoch, version) of the last event of it this session was sent.
        self.versions: dict[RaceId, tuple[str, int]] = {}
        self.closed = False

    @property
    def label(self) -> str:
        """How the log names this connection: `connection 12 from 192.0.2.7`."""
        return f"connection {self.session_id} from {self.address or 'an unknown address'}"

    @abstractmethod
    def send(self, message: BaseModel) -> None:
        """Queue a message; never blocks (a client that does not read is closed)."""

    def send_frame(self, frame: bytes) -> None:
        """Queue `frame`, a message already encoded (`codec.encode`, or built as bytes as the
        move ack is): a message sent to many sessions, or kept for resending, is encoded once.
        This fallback, for a session with only `send`, decodes the frame."""
        self.send(decode_server(frame))

    def hold_frame(self, frame: bytes) -> None:
        """Queue `frame`, which may wait a little to go out with the next frame sent (a
        racer's progress: `held_frames.py`). This fallback sends it at once."""
        self.send_frame(frame)

    @property
    def backed_up(self) -> bool:
        """Its client is not reading what it was sent (the socket pushes back): a list that
        will be sent again whole, like the lobby's, can skip it until it reads again."""
        return False

    def register(self) -> str | None:
        """May this connection's client register one more name now (a hello with a new
        name)? Spends a credit of the registration budgets if so; otherwise says why not."""
        return None

    def unregister(self) -> None:
        """The name `register` allowed was not made: its credits go back (none spent here)."""
        return None

    @abstractmethod
    def close(self, code: CloseCode, reason: str) -> None:
        """Close after the messages already queued."""

    def __hash__(self) -> int:
        return self.session_id

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Session) and other.session_id == self.session_id


def holder_name(node_id: str, session: Session) -> str:
    """The name of `session`'s connection in its races (`Racer.holder`): its node and the
    session, so a racer who reconnected elsewhere is not marked away from here."""
    return holder_of_session(node_id, session.session_id)


def holder_of_session(node_id: str, session_id: int) -> str:
    """`holder_name` of the session numbered `session_id` on node `node_id`."""
    return f"{node_id}:{session_id}"


def node_of_holder(holder: str) -> str:
    """The node of a `holder_name` (`<node>:<session>`)."""
    return holder.partition(":")[0]
