"""Every JSON example in docs/protocol.md is a message the protocol accepts: a client
message the server decodes, or a server message the client decodes, unchanged by a round
trip through the codec (so the document cannot drift from the models)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import msgpack
import pytest

from solrace.server.protocol.codec import decode_client, decode_server, encode
from solrace.server.protocol.errors import SchemaError

DOC = Path(__file__).resolve().parents[3] / "docs" / "protocol.md"


PLACEHOLDER = re.compile(r"\b[A-Z][A-Z_]{3,}\b")


def blocks() -> list[tuple[str | None, str]]:
    """The document's ```json blocks, each with the placeholder it defines (a block that a
    paragraph starting with `NAME`, e.g. `RACE_INFO`, leads to), if any."""
    found: list[tuple[str | None, str]] = []
    lines = DOC.read_text(encoding="utf-8").splitlines()
    block: list[str] | None = None
    defines: str | None = None
    for n, line in enumerate(lines):
        if block is None and line == "```json":
            start = n
            while start and lines[start - 1].strip() and not lines[start - 1].startswith("```"):
                start -= 1  # back to the first line of the paragraph that leads to the block
            named = re.match(r"`([A-Z][A-Z_]{3,})`", lines[start]) if start < n else None
            defines = named.group(1) if named else None
            block = []
        elif block is not None and line.startswith("```"):
            found.append((defines, "\n".join(block)))
            block = None
        elif block is not None:
            block.append(line)
    return found


def examples() -> list[dict[str, Any]]:
    """The messages of the document's examples (a map may span lines), with each placeholder
    replaced by its definition (a list of entries the document only describes: empty)."""
    definitions = {name: text for name, text in blocks() if name is not None}

    def fill(text: str) -> str:
        for _ in range(3):  # a definition may hold a placeholder too
            text = re.sub(
                r"\[([A-Z][A-Z_]{3,})\]", lambda m: f"[{definitions.get(m[1], '')}]", text
            )
            text = PLACEHOLDER.sub(lambda m: definitions.get(m[0], m[0]), text)
        return text

    found: list[dict[str, Any]] = []
    for name, text in blocks():
        if name is not None:
            continue  # a definition, used above
        pending = ""
        for line in text.splitlines():
            if not line.strip():
                continue
            pending += fill(line)
            try:
                value = json.loads(pending)
            except json.JSONDecodeError:
                continue  # the map goes on on the next line
            assert isinstance(value, dict), pending
            found.append(value)
            pending = ""
        assert not pending, f"an example does not end: {pending[:80]}"
    return found


EXAMPLES = examples()


def test_the_document_has_examples_of_most_messages() -> None:
    assert len(EXAMPLES) >= 40
    assert {"hello", "welcome", "move", "move_ack", "error"} <= {e["type"] for e in EXAMPLES}


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: str(e.get("type")))
def test_each_example_is_a_message_of_the_protocol(example: dict[str, Any]) -> None:
    frame: bytes = msgpack.packb(example)
    try:
        message: Any = decode_client(frame)
    except SchemaError:
        message = decode_server(frame)
    assert message.type == example["type"]
    again = msgpack.unpackb(encode(message))
    # Every field the example gives is a field of the message, with that value.
    assert {k: again.get(k, message.model_dump().get(k)) for k in example} == example
