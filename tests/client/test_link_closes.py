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
