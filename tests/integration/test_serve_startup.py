"""`solrace serve` as a real process: a start-up failure is one line on stderr and exit 1."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from pathlib import Path

START_WITHIN_S = 30


async def serve_expecting_failure(*argv: str) -> tuple[int, list[str]]:
    """Run `python -m solrace.cli serve ARGV` to its end (killed if it does not end in time):
    its exit status and its stderr lines."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "solrace.cli",
        "serve",
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        env={k: v for k, v in os.environ.items() if not k.startswith("SOLRACE_")},
    )
    try:
        async with asyncio.timeout(START_WITHIN_S):
            _, err = await process.communicate()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode is not None
    text = err.decode(errors="replace")
    assert "Traceback" not in text
    return process.returncode, text.splitlines()


async def test_a_port_in_use_is_one_line_and_exit_1(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        code, lines = await serve_expecting_failure(
            "--port", str(port), "--data-dir", str(tmp_path), "--secret", "s"
        )
    assert (code, lines) == (
        1,
        [f"solrace serve: error: port {port} on 127.0.0.1 is in use (another solrace serve?)"],
    )


async def test_invalid_settings_are_named_and_exit_2(tmp_path: Path) -> None:
    code, lines = await serve_expecting_failure("--port", "99999", "--data-dir", str(tmp_path))
    assert (code, lines) == (
        2,
        ["solrace serve: error: invalid --port 99999: Input should be less than or equal to 65535"],
    )
