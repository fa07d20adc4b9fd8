"""`solrace serve` run in the test's own process, for the tests of its command line and of the
node's start-up errors (test_serve_cli, test_app, test_node_secret, test_serve_process): `serve`,
its exit status and its stderr lines; `REDIS_FORMS`, the Redis URLs its refusals name."""

from __future__ import annotations

import pytest

from solrace.server.serve_cli import main

__all__ = ["REDIS_FORMS", "serve"]


def serve(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str]]:
    """`solrace serve ARGV` in this process: its exit status and its stderr lines."""
    code = main(list(argv))
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err.splitlines()


REDIS_FORMS = "redis://[:PASSWORD@]HOST:PORT/DB, rediss://... (TLS) or unix://PATH (a Redis socket)"
