"""What a close means, in the words every line of the client says it with."""

from __future__ import annotations

from solrace.client.link_closes import CLOSE_MEANINGS, close_text
from solrace.server.protocol.closecodes import CloseCode


def test_a_close_is_said_by_what_it_means() -> None:
    """A close is named by what it means, its code in brackets (a restarting server's 1012 was
    `link lost (1012)`), with the server's reason when it gave one; every code of the server's
    table has a meaning."""
    assert close_text(1012) == "the server is restarting (1012)"
    assert close_text(1001) == "going away: a proxy between (or the server) closed the link (1001)"
    assert close_text(1011) == "a server error (or the link stopped answering its keepalive) (1011)"
    assert (
        close_text(4001, "bad token") == "the server refused this player's token (4001: bad token)"
    )
    assert close_text(4999) == "link lost (4999)"
    assert close_text(None) == "link lost"
    assert all(code in CLOSE_MEANINGS for code in CloseCode)


def test_a_1008_for_wrong_guesses_is_not_said_as_speed() -> None:
    """The server closes with 1008 for a flood and for too many wrong admin tokens or invite
    codes; the reason tells them apart, and so does the meaning said."""
    assert close_text(1008, "too many wrong invite codes") == (
        "the server closed the link after too many wrong guesses (1008: too many wrong invite"
        " codes)"
    )
    assert close_text(1008, "rate budget exceeded") == (
        "too fast: the server's rate limit closed the link (1008: rate budget exceeded)"
    )
