"""`ws://` to a server that speaks TLS: said to try `wss://`, against a real TLS server on
loopback (a self-signed certificate made by `openssl` for the test)."""

from __future__ import annotations

import asyncio
import functools
import shutil
import ssl
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from websockets.asyncio.server import ServerConnection, serve

import solrace.client.connection
from solrace.client.connect_failures import ConnectionFailedError
from solrace.client.connection import Connection
from solrace.client.tls_probe import speaks_tls

#: How long the test waits for the connect to fail (against the probe's hour-long timeout).
WAIT_S = 30.0

TLS_HINT = "(a server with TLS: try wss://)"
TRUST_HINT = "SSL_CERT_FILE=CA.pem"


def self_signed(folder: Path, subject_alt_name: str) -> tuple[Path, Path]:
    """A self-signed certificate for `subject_alt_name` (`IP:...`, `DNS:...`) and its key,
    made by `openssl` in `folder`: (certificate, key)."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is not installed")
    key, cert = folder / "key.pem", folder / "cert.pem"
    subprocess.run(
        [
            openssl,
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "1",
            "-subj",
            f"/CN={subject_alt_name.split(':', 1)[1]}",
            "-addext",
            f"subjectAltName={subject_alt_name}",
        ],
        check=True,
        capture_output=True,
        timeout=30,
    )
    return cert, key


def server_context(cert: Path, key: Path) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    return context


@pytest.fixture
def tls_context(tmp_path: Path) -> ssl.SSLContext:
    """A server's TLS context with a self-signed certificate for 127.0.0.1."""
    return server_context(*self_signed(tmp_path, "IP:127.0.0.1"))


@pytest.fixture
def tls_certificate(tls_context: ssl.SSLContext, tmp_path: Path) -> Path:
    """The self-signed certificate of `tls_context` (its own CA)."""
    return tmp_path / "cert.pem"


@pytest.fixture
async def tls_port(tls_context: ssl.SSLContext) -> AsyncIterator[int]:
    """The port of a WebSocket server on loopback that speaks only TLS (`wss://`)."""

    async def echo(ws: ServerConnection) -> None:
        async for message in ws:
            await ws.send(message)

    async with serve(echo, "127.0.0.1", 0, ssl=tls_context) as server:
        yield server.sockets[0].getsockname()[1]


async def test_ws_to_a_server_with_tls_says_to_try_wss(tls_port: int) -> None:
    """It said only `cannot reach URL: did not receive a valid HTTP response`, and was tried
    again and again."""
    url = f"ws://127.0.0.1:{tls_port}"
    with pytest.raises(ConnectionFailedError) as failed:
        await Connection(url, name="x", open_timeout_s=5).connect()
    text = str(failed.value)
    assert text.startswith(f"cannot reach {url}: "), text
    assert text.endswith(TLS_HINT), text
    assert failed.value.fatal  # retrying ws:// cannot help


async def test_the_probe_tells_a_tls_port_from_a_plain_one(tls_port: int, server_url: str) -> None:
    assert await speaks_tls(f"ws://127.0.0.1:{tls_port}")
    assert not await speaks_tls(server_url)


async def test_a_plain_server_s_failures_get_no_tls_hint() -> None:
    """A plain server that closes the link on a request gets no `try wss://`."""

    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    server = await asyncio.start_server(hang_up, "127.0.0.1", 0)
    url = f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    try:
        with pytest.raises(ConnectionFailedError) as failed:
            await Connection(url, name="x", open_timeout_s=5).connect()
    finally:
        server.close()
        await server.wait_closed()
    assert TLS_HINT not in str(failed.value)
    assert not failed.value.fatal


async def test_a_plain_server_silent_on_the_tls_hello_is_not_waited_for_long(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A plain server that closes the link on an HTTP request but reads a TLS hello as the
    start of one and says nothing (as Redis does) kept the failure back for the probe's whole
    timeout; a TLS server answers within a round trip or so, and the probe waits a few of
    those. Here the whole timeout is made an hour: the failure coming at all shows the probe
    did not wait it out."""
    hour_long = functools.partial(speaks_tls, timeout_s=3600.0)
    monkeypatch.setattr(solrace.client.connection, "speaks_tls", hour_long)
    silent = asyncio.Event()

    async def hang_up_on_http(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if await reader.read(3) != b"GET":
            await silent.wait()  # the test's end
        writer.close()

    server = await asyncio.start_server(hang_up_on_http, "127.0.0.1", 0)
    url = f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    try:
        async with asyncio.timeout(WAIT_S):
            with pytest.raises(ConnectionFailedError) as failed:
                await Connection(url, name="x", open_timeout_s=5).connect()
    finally:
        silent.set()
        server.close()
        await server.wait_closed()
    assert TLS_HINT not in str(failed.value)


async def test_a_certificate_not_trusted_here_says_how_to_trust_it(
    tls_port: int, tls_certificate: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`wss://` to a server with a self-signed certificate said only `certificate verify
    failed`; SSL_CERT_FILE naming the certificate gets past TLS, as the line says."""
    url = f"wss://127.0.0.1:{tls_port}"
    with pytest.raises(ConnectionFailedError) as failed:
        await Connection(url, name="x", open_timeout_s=5).connect()
    text = str(failed.value)
    assert "certificate verify failed" in text, text
    assert text.endswith(
        f"(a certificate this machine does not trust: {TRUST_HINT} before the command "
        "trusts the CA certificates in CA.pem)"
    ), text
    monkeypatch.setenv("SSL_CERT_FILE", str(tls_certificate))
    with pytest.raises(ConnectionFailedError) as past_tls:
        await Connection(url, name="x", open_timeout_s=1).connect()
    # The echo server is no solrace server: the hello goes through TLS and gets no welcome.
    assert "did not answer the hello" in str(past_tls.value), str(past_tls.value)


async def test_a_certificate_for_another_name_gets_no_hint_to_trust_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A trusted certificate that is not for the URL's host was said to want SSL_CERT_FILE,
    which it already had: only the name is wrong."""
    cert, key = self_signed(tmp_path, "DNS:elsewhere.example")
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))

    async def echo(ws: ServerConnection) -> None:
        async for message in ws:
            await ws.send(message)

    async with serve(echo, "127.0.0.1", 0, ssl=server_context(cert, key)) as server:
        url = f"wss://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        with pytest.raises(ConnectionFailedError) as failed:
            await Connection(url, name="x", open_timeout_s=5).connect()
    text = str(failed.value)
    assert "certificate is not valid for '127.0.0.1'" in text, text
    assert TRUST_HINT not in text, text
