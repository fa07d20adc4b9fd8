"""What every command of the terminal client assumes unless told otherwise."""

from __future__ import annotations

import argparse
from typing import Final

from websockets.exceptions import InvalidURI
from websockets.uri import parse_uri

#: The server a command talks to without `--server`: `solrace serve`'s own default address.
DEFAULT_SERVER_URL: Final = "ws://127.0.0.1:8765"


def server_url(text: str) -> str:
    """`--server` as every command keeps it (the identities' key, the lines that name it): a
    URL whose path is only `/` is the same server as without it (the handshake asks for `/`
    either way), so `ws://127.0.0.1:8765/` is `ws://127.0.0.1:8765`, and the saved token is
    found whichever was typed. What is no WebSocket URL is refused (`ArgumentTypeError`:
    argparse says so, exit status 2) before anything connects or is saved for it."""
    problem = url_problem(text)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return same_server(text)


def url_problem(url: str) -> str | None:
    """Why `url` is no WebSocket URL (no scheme, `http://`, a port that is no port), or None."""
    try:
        parse_uri(url)
    except (InvalidURI, ValueError):  # ValueError: a port that is no port (`:99999`)
        return f"{url!r} is not a WebSocket URL (ws://HOST:PORT or wss://HOST:PORT)"
    return None


def server_option(url: str) -> str:
    """` --server URL` for a command to paste, or nothing for the default server: a hint that
    left it out sent a player of another server to the default one (`cannot reach
    ws://127.0.0.1:8765`)."""
    return "" if same_server(url) == DEFAULT_SERVER_URL else f" --server {url}"


def tournament_command(url: str, words: str) -> str:
    """`solrace tournament WORDS` to paste, with `--server URL` (before WORDS, where
    `solrace tournament` takes it) unless `url` is the default server's."""
    return f"solrace tournament{server_option(url)} {words}"


def same_server(key: str) -> str:
    """`key` (a server URL, or another identities' key, such as an embedded folder's) without
    a path and query of `/` alone (`ws://HOST:PORT/` is `ws://HOST:PORT`): a `/` at the end of
    a longer path or of a query (`wss://HOST/solrace/`, `wss://HOST?key=a/`) is part of what
    is asked for and stays."""
    try:
        uri = parse_uri(key)
    except (InvalidURI, ValueError):
        return key
    return key[:-1] if uri.resource_name == "/" and key.endswith("/") else key
