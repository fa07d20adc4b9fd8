"""The identity kept in the config folder: a token per server and name, reused after a
restart; a corrupt file is moved aside; a refused token is explained."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from websockets.asyncio.client import connect

from solrace.client.defaults import server_url
from solrace.client.identity import (
    NAME_RULE,
    Identity,
    IdentityError,
    admin_name,
    connect_player,
    data_dir,
    default_name,
    identity_file,
    known_players,
    load_identity,
    name_problem,
    registration_key,
    save_identity,
)
from solrace.server.protocol.codec import decode_server, encode
from solrace.server.protocol.messages import PROTOCOL_VERSION, Hello, Welcome

from .process import Child


def test_save_and_load_round_trip() -> None:
    assert load_identity("ws://x") is None
    save_identity("ws://x", Identity("alice", "tok"))
    save_identity("ws://y", Identity("bob"))
    assert load_identity("ws://x") == Identity("alice", "tok")
    assert load_identity("ws://y") == Identity("bob", None)


def test_default_name_follows_the_server_rules() -> None:
    name = default_name()
    assert 1 <= len(name) <= 24
    assert all(c.isalnum() or c in "_.-" for c in name)


def test_the_name_rule_is_the_protocols() -> None:
    assert NAME_RULE == "1-24 characters from A-Z a-z 0-9 _ . -"
    assert name_problem("Jane_Doe-2.0") is None
    assert name_problem("x" * 24) is None
    for bad in ("Jane Doe", "", "x" * 25, "zoë"):
        assert name_problem(bad) == f"invalid --name {bad!r}: {NAME_RULE}"
        with pytest.raises(ValueError):
            Hello(protocol=1, name=bad)


BAD_NAME = "x" * 30


@pytest.mark.parametrize(
    "command",
    [
        ["play", "--plain", "--name", "a b"],
        ["play", "--plain", "--name", ""],
        ["bot", "--name", BAD_NAME, "--create", "klondike"],
        ["bot", "--name", "a b", "--count", "2", "--create", "klondike"],
        ["tournament", "--name", BAD_NAME, "join", "t1"],
    ],
)
async def test_a_name_the_server_refuses_is_one_line_before_connecting(
    server_url: str, tmp_path: Path, command: list[str]
) -> None:
    child = await Child.start(tmp_path, *command[:1], "--server", server_url, *command[1:])
    try:
        assert await child.finish() == 2
    finally:
        await child.kill()
    name = command[command.index("--name") + 1]
    assert child.lines == [f"solrace {command[0]}: invalid --name {name!r}: {NAME_RULE}"]


async def test_the_token_survives_a_client_restart(server_url: str) -> None:
    first = await connect_player(server_url, server_url, "alice")
    player = first.welcome.player_id if first.welcome else None
    await first.close()
    stored = load_identity(server_url)
    assert stored is not None and stored.token
    again = await connect_player(server_url, server_url, None)
    assert again.welcome is not None and again.welcome.player_id == player
    await again.close()


async def test_a_stale_token_falls_back_to_the_name(server_url: str) -> None:
    save_identity(server_url, Identity("zed", "v1.pgone.forged"))
    conn = await connect_player(server_url, server_url, None)
    assert conn.welcome is not None and conn.welcome.name == "zed"
    stored = load_identity(server_url)
    assert stored is not None and stored.token != "v1.pgone.forged"
    await conn.close()


async def test_a_welcome_lost_after_the_name_was_stored_costs_nothing(server_url: str) -> None:
    """The name reached the server (stored) but its welcome never came back: the next run
    sends the same name with the registration key kept before the hello, and gets the same
    player (it used to be `name_taken`: the name lost for good)."""
    key = registration_key(server_url, "alice")
    assert registration_key(server_url, "alice") == key  # kept, not made anew
    async with connect(server_url, compression=None) as lost:  # the first run's hello
        await lost.send(encode(Hello(protocol=PROTOCOL_VERSION, name="alice", key=key)))
        welcome = decode_server(await lost.recv(decode=False))
    assert isinstance(welcome, Welcome) and welcome.player_id is not None
    conn = await connect_player(server_url, server_url, "alice")
    try:
        assert conn.welcome is not None and conn.welcome.player_id == welcome.player_id
    finally:
        await conn.close()
    assert known_players(server_url) == {"alice": welcome.player_id}
    assert "keys" not in json.loads(identity_file().read_text())[server_url]  # token saved


async def test_a_name_taken_by_someone_else_keeps_no_key(server_url: str) -> None:
    async with connect(server_url, compression=None) as other:
        await other.send(encode(Hello(protocol=PROTOCOL_VERSION, name="bob")))
        assert isinstance(decode_server(await other.recv(decode=False)), Welcome)
    with pytest.raises(IdentityError, match="name_taken"):
        await connect_player(server_url, server_url, "bob")
    assert "keys" not in json.loads(identity_file().read_text())[server_url]


async def player_of(url: str, name: str | None, key: str | None = None) -> str:
    """Connect as `name` (None: the one used last) and hang up; the player id. `key`: the
    server's key in identity.json (default: its URL)."""
    conn = await connect_player(url, key or url, name)
    try:
        assert conn.welcome is not None and conn.welcome.player_id is not None
        return conn.welcome.player_id
    finally:
        await conn.close()


async def test_each_name_keeps_its_own_token(server_url: str) -> None:
    alice = await player_of(server_url, "alice")
    carol = await player_of(server_url, "carol")
    assert carol != alice
    assert await player_of(server_url, "alice") == alice  # not name_taken: alice's token
    assert await player_of(server_url, None) == alice  # without a name: the one used last
    assert await player_of(server_url, "carol") == carol
    assert await player_of(server_url, None) == carol
    assert known_players(server_url) == {"alice": alice, "carol": carol}


def test_a_file_of_an_older_version_is_read_and_kept(client_dirs: Path) -> None:
    path = identity_file()
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"ws://x": {"name": "zed", "token": "v1.pzed.sig"}}))
    assert load_identity("ws://x") == Identity("zed", "v1.pzed.sig")
    save_identity("ws://x", Identity("amy", "v1.pamy.sig"))
    assert load_identity("ws://x") == Identity("amy", "v1.pamy.sig")
    assert load_identity("ws://x", "zed") == Identity("zed", "v1.pzed.sig")
    assert known_players("ws://x") == {"zed": "pzed", "amy": "pamy"}


async def test_a_corrupt_file_is_moved_aside_not_overwritten(
    server_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = identity_file()
    path.parent.mkdir(parents=True)
    corrupt = '{"ws://elsewhere": {"name": "kim", "token": "v1.pkim.s'  # cut short
    path.write_text(corrupt)
    conn = await connect_player(server_url, server_url, "alice")
    await conn.close()
    aside = path.with_name("identity.json.bad")
    assert aside.read_text() == corrupt  # kim's token is still there for the user
    assert f"moved it to {aside}" in capsys.readouterr().err
    assert load_identity(server_url) == Identity("alice", conn.token)
    path.write_text("[]")  # valid JSON, but not identities: moved aside too, next to the first
    assert load_identity(server_url) is None
    assert path.with_name("identity.json.bad2").read_text() == "[]"
    assert aside.read_text() == corrupt


@pytest.mark.parametrize("file", ["identity.json", "bots.json"])
async def test_a_file_that_is_no_text_is_moved_aside_too(
    server_url: str, tmp_path: Path, file: str
) -> None:
    """Bytes that are not UTF-8 (a damaged disk, another program's file) ended every command
    with a UnicodeDecodeError traceback."""
    folder = tmp_path / "child-config"
    folder.mkdir()
    (folder / file).write_bytes(b"\xff\xfe\x00garbage")
    argv = ["play", "--plain"] if file == "identity.json" else ["bot"]
    child = await Child.start(tmp_path, *argv, "--server", server_url, "--name", "pat")
    try:
        await child.finish()
    finally:
        await child.kill()
    assert "Traceback" not in child.output, child.output
    assert f"{folder / file} is not valid JSON; moved it to {folder / file}.bad" in child.output
    assert (folder / f"{file}.bad").read_bytes() == b"\xff\xfe\x00garbage"


async def test_a_refused_token_of_a_taken_name_says_where_the_tokens_are(
    server_url: str,
) -> None:
    dave = await player_of(server_url, "dave")
    # A token the server refuses (4001), as after its secret changed: dave's id, bad signature.
    save_identity(server_url, Identity("dave", f"v1.{dave}.not-the-signature"))
    with pytest.raises(IdentityError) as refused:
        await connect_player(server_url, server_url, "dave")
    text = str(refused.value)
    assert "refused the token saved for 'dave'" in text
    assert str(identity_file()) in text
    assert "belongs to someone else" not in text


async def test_a_taken_name_without_a_token_is_a_clear_error(server_url: str) -> None:
    await player_of(server_url, "erin")
    save_identity(server_url, Identity("other"))
    with pytest.raises(IdentityError, match="'erin' belongs to someone else") as taken:
        await connect_player(server_url, server_url + "/", "erin")  # another key: no token
    assert "choose another --name" in str(taken.value)


@pytest.mark.parametrize("command", ["play", "bot", "tournament"])
async def test_a_server_url_ending_in_a_slash_is_the_same_server(
    server_url: str, tmp_path: Path, command: str
) -> None:
    """`--server ws://HOST:PORT/` kept its tokens apart from `ws://HOST:PORT`, though it is the
    same server: the player's own name was `name_taken: 'pat' belongs to someone else`."""
    for url in (server_url, server_url + "/"):
        if command == "play":
            child = await Child.start(tmp_path, "play", "--plain", "--server", url, "--name", "pat")
            await child.send("quit")
        elif command == "bot":  # no race to join: it says so once it has connected
            child = await Child.start(tmp_path, "bot", "--server", url, "--name", "pat")
        else:  # no such tournament: refused once connected as the player
            child = await Child.start(
                tmp_path, "tournament", "--server", url, "--name", "pat", "join", "tnope"
            )
        try:
            await child.finish()
        finally:
            await child.kill()
        assert "name_taken" not in child.output and "taken on" not in child.output, child.output
    kept = "bots.json" if command == "bot" else "identity.json"
    entries = json.loads((tmp_path / "child-config" / kept).read_text())
    assert sorted(entries) == [server_url]


@pytest.mark.parametrize("command", ["play", "bot"])
async def test_tokens_an_older_version_kept_under_the_url_with_a_slash_are_found(
    server_url: str, tmp_path: Path, command: str
) -> None:
    """Older versions kept `--server ws://HOST:PORT/`'s tokens under that URL, slash and all;
    once the slash was dropped from `--server`, those tokens were not found: the player's own
    name was `name_taken` (a bot's got a random suffix)."""
    kept = tmp_path / "child-config" / ("bots.json" if command == "bot" else "identity.json")
    for run in ("first", "after the upgrade"):
        if command == "play":
            argv = ["play", "--plain", "--server", server_url, "--name", "pat"]
        else:  # no race to join: it says so once it has connected
            argv = ["bot", "--server", server_url, "--name", "pat"]
        child = await Child.start(tmp_path, *argv)
        if command == "play":
            await child.send("quit")
        try:
            await child.finish()
        finally:
            await child.kill()
        assert "name_taken" not in child.output and "taken on" not in child.output, (
            run,
            child.output,
        )
        entries = json.loads(kept.read_text())
        assert sorted(entries) == [server_url], entries
        if run == "first":  # as an older version kept it
            kept.write_text(json.dumps({server_url + "/": entries[server_url]}))


@pytest.mark.parametrize(
    ("typed", "kept"),
    [
        ("ws://127.0.0.1:8765/", "ws://127.0.0.1:8765"),
        ("ws://[::1]:8765/", "ws://[::1]:8765"),
        ("ws://[::1]:8765", "ws://[::1]:8765"),
        ("wss://play.example/", "wss://play.example"),
        ("wss://play.example/solrace/", "wss://play.example/solrace/"),
        ("wss://play.example/solrace", "wss://play.example/solrace"),
        ("wss://play.example?key=a/", "wss://play.example?key=a/"),
        ("ws://127.0.0.1:8765/?key=a/", "ws://127.0.0.1:8765/?key=a/"),
    ],
)
def test_only_a_path_of_a_slash_alone_is_dropped_from_the_server_url(typed: str, kept: str) -> None:
    """A `/` that ends a query was cut off too (`wss://HOST?key=a/` became `...?key=a`): the
    URL asked the server for another query than the one typed."""
    assert server_url(typed) == kept


@pytest.mark.parametrize("command", ["play", "bot", "tournament"])
async def test_a_server_that_is_no_websocket_url_is_refused_before_anything_is_kept(
    tmp_path: Path, command: str
) -> None:
    """`--server http://HOST:PORT` was tried (exit 1), after a registration key was kept for
    that "server" in identity.json; `ws://HOST:99999` ended in a traceback."""
    for url in ("http://127.0.0.1:8765", "ws://127.0.0.1:99999"):
        argv = {
            "play": ["play", "--plain", "--server", url, "--name", "pat"],
            "bot": ["bot", "--server", url, "--name", "pat"],
            "tournament": ["tournament", "--server", url, "--name", "pat", "join", "t1"],
        }[command]
        child = await Child.start(tmp_path, *argv)
        try:
            assert await child.finish() == 2, child.output
        finally:
            await child.kill()
        assert child.lines[-1].endswith(
            f"error: argument --server: {url!r} is not a WebSocket URL (ws://HOST:PORT or "
            "wss://HOST:PORT)"
        ), child.output
    assert not (tmp_path / "child-config").exists() or not any(
        (tmp_path / "child-config").glob("*.json")
    )


async def test_the_admin_identity_is_separate_and_not_the_default(server_url: str) -> None:
    alice = await player_of(server_url, "alice")
    conn = await connect_player(server_url, server_url, None, role="admin")
    await conn.close()
    assert conn.welcome is not None and conn.welcome.name == "alice-admin"
    assert conn.welcome.player_id != alice
    assert admin_name(server_url) == "alice-admin"
    assert await player_of(server_url, None) == alice  # still alice by default
    again = await connect_player(server_url, server_url, None, role="admin")
    await again.close()
    assert again.welcome is not None and again.welcome.player_id == conn.welcome.player_id


async def play_embedded(tmp_path: Path, folder: Path) -> Child:
    """`solrace play --plain` on the embedded server of `folder` as ann, quit once connected."""
    child = await Child.start(
        tmp_path, "play", "--plain", "--bot", "none", "--name", "ann", "--data-dir", str(folder)
    )
    try:
        await child.expect("connected to ")
        await child.send("quit")
        assert await child.finish() == 0, child.output
    finally:
        await child.kill()
    return child


async def test_each_embedded_data_folder_keeps_its_own_identity(tmp_path: Path) -> None:
    # Each data folder is a server of its own (secret, players): playing in B must not lose
    # ann's token of A (it did: one "embedded" entry, B's token replaced A's, and A refused it
    # with 'the name is taken there').
    first = await play_embedded(tmp_path, tmp_path / "A")
    await play_embedded(tmp_path, tmp_path / "B")
    again = await play_embedded(tmp_path, tmp_path / "A")
    assert "warning" not in again.output
    saved = json.loads((tmp_path / "child-config" / "identity.json").read_text())
    a, b = (f"embedded:{(tmp_path / f).resolve()}" for f in ("A", "B"))
    assert set(saved[a]["players"]) == set(saved[b]["players"]) == {"ann"}
    assert saved[a]["players"]["ann"] != saved[b]["players"]["ann"]
    assert first.lines[0].endswith(" as ann") and again.lines[0].endswith(" as ann")


async def test_the_single_embedded_entry_of_older_versions_is_still_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from solrace.client.embedded import EmbeddedServer
    from solrace.client.identity import EMBEDDED_KEY, embedded_key

    async def player_in(folder: Path, key: str, name: str) -> str:
        embedded = EmbeddedServer(folder)
        url = await embedded.start()
        try:
            return await player_of(url, name, key)
        finally:
            await embedded.stop()

    # An older version played as ann in A and kept her token under "embedded".
    ann_in_a = await player_in(tmp_path / "A", EMBEDDED_KEY, "ann")
    # Now: A's server takes that token (ann stays ann) and it is saved under A's key.
    assert await player_in(tmp_path / "A", embedded_key(tmp_path / "A"), "ann") == ann_in_a
    assert known_players(embedded_key(tmp_path / "A")) == {"ann": ann_in_a}
    # B's server refuses it (another secret): ann is a new player of B, without a warning.
    ann_in_b = await player_in(tmp_path / "B", embedded_key(tmp_path / "B"), "ann")
    assert ann_in_b != ann_in_a
    assert "warning" not in capsys.readouterr().err
    assert await player_in(tmp_path / "A", embedded_key(tmp_path / "A"), "ann") == ann_in_a


async def test_a_refused_embedded_token_names_the_data_folder(tmp_path: Path) -> None:
    from solrace.client.embedded import EmbeddedServer
    from solrace.client.identity import embedded_key

    folder = tmp_path / "A"
    key = embedded_key(folder)
    embedded = EmbeddedServer(folder)
    url = await embedded.start()
    try:
        dave = await player_of(url, "dave", key)
        save_identity(key, Identity("dave", f"v1.{dave}.not-the-signature"))
        with pytest.raises(IdentityError) as refused:
            await connect_player(url, key, "dave")
    finally:
        await embedded.stop()
    text = str(refused.value)
    assert text.startswith(f"the embedded server of the data folder {folder.resolve()} refused")
    assert url not in text


def test_the_user_data_folder_is_not_the_server_s(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`SOLRACE_DATA_DIR` is `solrace serve --data-dir`: a shell that exported it for the
    client put the server's database and secret into the client's folder, and the reverse."""
    monkeypatch.setenv("SOLRACE_DATA_DIR", str(tmp_path / "server"))
    monkeypatch.setenv("SOLRACE_USER_DATA_DIR", str(tmp_path / "client"))
    assert data_dir() == tmp_path / "client"
    monkeypatch.delenv("SOLRACE_USER_DATA_DIR")
    assert data_dir() != tmp_path / "server"
