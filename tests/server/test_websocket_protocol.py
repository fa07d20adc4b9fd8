"""The frames the transport writes and reads by itself, byte for byte as websockets does."""

from __future__ import annotations

import pytest
from websockets.frames import Frame, Opcode

from solrace.server.websocket_protocol import server_frame


@pytest.mark.parametrize("size", [0, 1, 125, 126, 127, 65535, 65536, 70000])
def test_a_server_frame_is_what_websockets_writes(size: int) -> None:
    payload = bytes(i % 251 for i in range(size))
    expected = Frame(Opcode.BINARY, payload, fin=True).serialize(mask=False, extensions=[])
    assert server_frame(payload) == expected
