from __future__ import annotations

import hashlib

from solrace.server.protocol.commitment import commit, is_commitment_valid


def test_commitment_is_sha256_of_game_number_and_salt() -> None:
    expected = hashlib.sha256(b"klondike\n123\nabc").hexdigest()
    assert commit("klondike", "123", "abc") == expected
    assert is_commitment_valid(expected, "klondike", "123", "abc")
    assert not is_commitment_valid(expected, "klondike", "124", "abc")
