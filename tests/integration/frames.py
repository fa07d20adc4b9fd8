"""WebSocket frames as a client writes them, byte for byte, with a mask the test chooses.

websockets' client draws a random mask for every frame (`os.urandom`): a test that writes
frames by hand picks its masks instead, so that the same bytes go out on every run (a mask
holding a line feed, say, every time rather than one time in ten)."""

from __future__ import annotations

import struct

from websockets.frames import Opcode

#: Masks whose bytes an HTTP parser could take for the end of a line or of a head.
LINE_END_MASKS = (b"\n\n\n\n", b"\r\n\r\n", b"\x00\r\n\x00", b"\n\r\n\r")


def client_frame(opcode: Opcode, payload: bytes, mask: bytes, *, fin: bool = True) -> bytes:
    """One frame from a client: `payload` masked with `mask` (4 bytes), the shortest length
    encoding, no extension bits."""
    assert len(mask) == 4
    head = bytes(((0x80 if fin else 0) | opcode,))
    size = len(payload)
    if size < 126:
        head += bytes((0x80 | size,))
    elif size < 1 << 16:
        head += bytes((0x80 | 126,)) + struct.pack("!H", size)
    else:
        head += bytes((0x80 | 127,)) + struct.pack("!Q", size)
    return head + mask + bytes(byte ^ mask[i % 4] for i, byte in enumerate(payload))
