from __future__ import annotations

from pathlib import Path

import pytest

from solrace.server.app import build_parser, main, settings_from_args
from solrace.server.settings import Settings


def test_defaults_listen_on_loopback_8765_with_sqlite_in_data(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("SOLRACE_PORT", "SOLRACE_HOST", "SOLRACE_DATA_DIR", "SOLRACE_STORE"):
        monkeypatch.delenv(name, raising=False)
    settings = Settings()
    assert (settings.host, settings.port) == ("127.0.0.1", 8765)
    assert settings.store_url() == f"sqlite:{Path('data') / 'solrace.sqlite3'}"
    assert settings.max_frame_bytes == 16 * 1024


def test_environment_then_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOLRACE_PORT", "9001")
    monkeypatch.setenv("SOLRACE_GRACE_S", "5")
    assert Settings().port == 9001
    settings = settings_from_args(build_parser().parse_args(["--port", "9002"]))
    assert (settings.port, settings.grace_s) == (9002, 5.0)


def test_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["--help"])
    assert caught.value.code == 0
    assert "SOLRACE_" in capsys.readouterr().out
