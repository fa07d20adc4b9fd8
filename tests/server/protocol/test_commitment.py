from __future__ import annotations

import hashlib

import pytest

from solrace.server.protocol.commitment import commit, is_commitment_valid


def test_commitment_is_sha256_of_game_number_and_salt() -> None:
    expected = hashlib.sha256(b"klondike\n123\nabc").hexdigest()
    assert commit("klondike", "123", "abc") == expected
    assert is_commitment_valid(expected, "klondike", "123", "abc")
    assert not is_commitment_valid(expected, "klondike", "124", "abc")


@pytest.mark.parametrize("forged", ["é" * 64, "a\u202eb", "a\x9bb", "a\ud800"])
def test_any_text_is_checked_not_crashed_on(forged: str) -> None:
    """A replay file's commitment is anyone's text: a non-ASCII one made `compare_digest`
    raise (`solrace verify` and the replay viewer ended in a traceback)."""
    assert not is_commitment_valid(forged, "klondike", "1", "s")
