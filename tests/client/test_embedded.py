"""The embedded server of `solrace play`: one at a time on its data folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from solrace.client.embedded import EmbeddedServer, EmbeddedServerBusyError

from .process import Child


async def test_a_second_embedded_server_on_the_same_data_is_refused_until_the_first_stops(
    tmp_path: Path,
) -> None:
    first, second = EmbeddedServer(tmp_path / "data"), EmbeddedServer(tmp_path / "data")
    await first.start()
    try:
        with pytest.raises(EmbeddedServerBusyError) as refused:
            await second.start()
        assert refused.value.holder_pid == os.getpid()
        assert "solrace play --server" in str(refused.value)
    finally:
        await first.stop()
    assert (await second.start()).startswith("ws://127.0.0.1:")
    await second.stop()


async def test_play_says_in_one_line_when_the_embedded_server_cannot_start(
    tmp_path: Path,
) -> None:
    (tmp_path / "a-file").write_text("")
    child = await Child.start(tmp_path, "play", "--plain", "--data-dir", str(tmp_path / "a-file/x"))
    try:
        assert await child.finish() == 1
        assert "cannot use the data folder" in child.output, child.output
        assert "Traceback" not in child.output
    finally:
        await child.kill()

    # The token secret cannot be read (`secret` is a folder): the server refuses in `App()`.
    (tmp_path / "odd" / "secret").mkdir(parents=True)
    child = await Child.start(tmp_path, "play", "--plain", "--data-dir", str(tmp_path / "odd"))
    try:
        assert await child.finish() == 1
        assert child.lines == [
            "solrace play: cannot start the embedded server: cannot use the data dir "
            f"{tmp_path / 'odd'}: Is a directory: '{tmp_path / 'odd' / 'secret'}'"
        ], child.output
    finally:
        await child.kill()

    first = EmbeddedServer(tmp_path / "data")
    await first.start()
    child = await Child.start(tmp_path, "play", "--plain", "--data-dir", str(tmp_path / "data"))
    try:
        assert await child.finish() == 1
        assert f"process {os.getpid()} is already racing" in child.output, child.output
        assert "Traceback" not in child.output
    finally:
        await child.kill()
        await first.stop()
