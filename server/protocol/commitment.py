"""Commit-reveal of a race's deal: sha256 over game id, game number and a salt.

The commitment is published at the start; the number and salt at the end. Anyone can then
check `commitment == commit(game, number, salt)` and replay every board on that deal.
"""

from __future__ import annotations

import hashlib
import hmac


def commit(game_id: str, game_number: str, salt: str) -> str:
    """Hex sha256 of ``"{game_id}\\n{game_number}\\n{salt}"`` (UTF-8)."""
    text = f"{game_id}\n{game_number}\n{salt}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def is_commitment_valid(commitment: str, game_id: str, game_number: str, salt: str) -> bool:
    """Does `commitment` commit to this deal? Any text is an answer (a replay file's is
    anyone's): compared as UTF-8 bytes, since `compare_digest` refuses non-ASCII text."""
    expected = commit(game_id, game_number, salt)
    return hmac.compare_digest(commitment.encode("utf-8", "surrogatepass"), expected.encode())
