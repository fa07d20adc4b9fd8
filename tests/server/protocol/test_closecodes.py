from __future__ import annotations

import re
from pathlib import Path

from solrace.server.protocol.closecodes import CLOSE_REASONS, CloseCode
from solrace.server.protocol.errors import ErrorCode

DOC = Path(__file__).resolve().parents[3] / "docs" / "protocol.md"


def test_every_close_code_has_a_reason() -> None:
    assert set(CLOSE_REASONS) == set(CloseCode)


def test_docs_list_the_close_code_table() -> None:
    rows = dict(re.findall(r"^\| (\d{4}) \| (.+) \|$", DOC.read_text(), re.MULTILINE))
    assert {int(code): text for code, text in rows.items()} == {
        int(code): text for code, text in CLOSE_REASONS.items()
    }


def test_docs_name_every_error_code() -> None:
    text = DOC.read_text()
    assert [code for code in ErrorCode if f"`{code.value}`" not in text] == []
