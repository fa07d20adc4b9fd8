"""The client imports the engine and the server's protocol, never the server's runtime
(only `solrace play` without `--server` loads it, lazily, to embed a server)."""

from __future__ import annotations

import json
import subprocess
import sys

MODULES = [
    "solrace.client.app",
    "solrace.client.bots",
    "solrace.client.connection",
    "solrace.client.plain",
    "solrace.client.render",
    "solrace.client.replay",
    "solrace.client.state",
    "solrace.client.tui",
    "solrace.client.watching",
]


def test_client_modules_do_not_load_the_server_runtime() -> None:
    code = (
        "import importlib, json, sys\n"
        f"for name in {MODULES!r}: importlib.import_module(name)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    loaded: list[str] = json.loads(result.stdout)
    server = [
        m
        for m in loaded
        if m.startswith("solrace.server.") and not m.startswith("solrace.server.protocol")
    ]
    assert server == []
