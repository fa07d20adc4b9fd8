"""The dependency rule: the sans-I/O protocol layer loads no asyncio, sockets or store."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, sys
import solrace.server.protocol.codec, solrace.server.protocol.race
import solrace.server.protocol.replay, solrace.server.protocol.views
import solrace.server.protocol.tokens, solrace.server.protocol.ratelimit
print(json.dumps(sorted(sys.modules)))
"""


def test_protocol_layer_is_sans_io() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    loaded = set(json.loads(out.stdout))
    forbidden = {"websockets", "sqlite3", "redis", "solrace.server.hub", "solrace.server.store"}
    assert not loaded & forbidden
    assert not any(m.startswith("solrace.client") for m in loaded)
