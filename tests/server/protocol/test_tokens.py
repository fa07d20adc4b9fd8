from __future__ import annotations

from solrace.server.protocol.ids import PlayerId
from solrace.server.protocol.tokens import sign_token, verify_token


def test_a_signed_token_proves_its_player() -> None:
    assert verify_token(sign_token(PlayerId("p1"), b"s"), b"s") == "p1"


def test_forged_and_malformed_tokens_prove_nothing() -> None:
    token = sign_token(PlayerId("p1"), b"s")
    assert verify_token(token, b"other") is None
    assert verify_token(token.replace("p1", "p2"), b"s") is None
    for bad in ("", "v1", "v1..x", "v2.p1.x", token + ".x"):
        assert verify_token(bad, b"s") is None
