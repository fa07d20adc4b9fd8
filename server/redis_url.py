"""What a Redis URL may say here, checked before a client is made (`check_redis_url`).

redis-py passes a query option it does not know to the connection as it is, and the first
connect fails with a `TypeError` (`?foo=bar`, or `?ssl_cert_reqs=none` on `redis://`, which
only `rediss://` takes); the options it does know win over what the caller gives, so
`?socket_timeout=` or `?max_connections=` would quietly replace the server's own timeouts
and pool size; and it reads a database that is no number (`/abc`) as database 0. Here the
database must be a whole number, and a URL takes only the options listed below, each with a
value of its kind: anything else is a `ValueError` naming what is wrong.

No message here shows a part of the password. A password with a raw `/`, `?` or `#` ends
the host part early, and what follows it would be read as the database, the query or the
port (redis-py's own `Port could not be cast to integer value as '...'`): a URL with an `@`
after its host part is refused before anything else is read, saying what to percent-encode.
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import SplitResult, parse_qsl, urlsplit

#: The query options every Redis URL takes, and what their values must be.
COMMON_OPTIONS: Final = {
    "db": "a whole number",
    "client_name": "a name",
    "health_check_interval": "a whole number of seconds",
}
#: What a URL of a TCP connection (`redis://`, `rediss://`) takes as well.
TCP_OPTIONS: Final = {"socket_keepalive": "yes or no"}
#: What a TLS URL (`rediss://`) takes as well: its certificates and how they are checked.
TLS_OPTIONS: Final = {
    "ssl_cert_reqs": "none, optional or required",
    "ssl_ca_certs": "a file",
    "ssl_ca_path": "a folder",
    "ssl_certfile": "a file",
    "ssl_keyfile": "a file",
    "ssl_check_hostname": "yes or no",
}

_YES_NO = {"true", "false", "yes", "no", "1", "0", "t", "f", "y", "n"}
_CERT_REQS = {"none", "optional", "required"}
#: The path of a TCP URL: none (`redis://HOST:PORT`, database 0) or `/DB`. redis-py reads a
#: path that is no number (`/abc`) as database 0, without a word: another cluster's data.
_DATABASE = re.compile(r"(/[0-9]+)?/?")
#: Where a URL's password (and user) go, by scheme.
_FORMS: Final = {
    "redis": "redis://[USER]:PASSWORD@HOST:PORT/DB",
    "rediss": "rediss://[USER]:PASSWORD@HOST:PORT/DB",
    "unix": "unix://[USER]:PASSWORD@/PATH?db=N (or unix:///PATH?db=N&password=PASSWORD)",
}
#: Why a URL with an `@` after its host part is refused (nothing of the URL is shown).
ENCODE_THE_PASSWORD: Final = (
    "the password has a character to percent-encode (/ -> %2F, ? -> %3F, # -> %23, @ -> %40)"
)


def accepted_options(scheme: str) -> dict[str, str]:
    """The query options a URL of `scheme` (`redis`, `rediss`, `unix`) takes, and their kind."""
    options = dict(COMMON_OPTIONS)
    if scheme in ("redis", "rediss"):
        options |= TCP_OPTIONS
    if scheme == "rediss":
        options |= TLS_OPTIONS
    return options


def check_redis_url(url: str) -> None:
    """`ValueError` if the database of a `redis://` or `rediss://` URL (its path) is not a
    whole number, or if its query has an option this server does not take from a Redis URL,
    or one without a value of its kind; or if an `@` follows its host part: a password
    with a character to percent-encode. The password is never in the message.

    A `unix://` URL may give its password in the query (`?db=0&password=PASSWORD`, the form
    redis-py documents for sockets); what follows it in the query is then named by no word
    of its own, as a raw `&` in the password would make its rest look like options."""
    parts = urlsplit(url)
    if any("@" in part for part in (parts.path, parts.query, parts.fragment)):
        raise ValueError(ENCODE_THE_PASSWORD)
    if parts.scheme in ("redis", "rediss") and not parts.hostname and _port_is_no_number(parts):
        # `redis://:PASSWORD/0`: redis-py would name the password as the port.
        raise ValueError(
            "no host, and no port number after the ':' (not shown): a password goes before "
            f"an @, {_FORMS[parts.scheme]}"
        )
    if parts.scheme in ("redis", "rediss") and not _DATABASE.fullmatch(parts.path):
        raise ValueError(
            f"the database {parts.path.removeprefix('/')!r} is not a whole number "
            f"({parts.scheme}://HOST:PORT/DB: /0 for the first)"
        )
    accepted = accepted_options(parts.scheme)
    after_password = False  # a raw `&` in the password makes its rest look like options
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if name == "password" and parts.scheme == "unix" and not after_password:
            after_password = True
            if parts.fragment:  # a raw `#` in it: the rest would be dropped
                raise ValueError(ENCODE_THE_PASSWORD)
            continue
        if name in ("password", "username") and not after_password:
            before = "path" if parts.scheme == "unix" else "host"
            form = _FORMS.get(parts.scheme, _FORMS["redis"])
            raise ValueError(f"the {name} goes before the {before}, not in the query: {form}")
        if after_password and (name not in accepted or not _fits(name, value)):
            raise ValueError(
                "an option after the password in the query is not one a unix:// URL takes "
                "here, or has no value of its kind (not shown, as it may be a piece of the "
                f"password: percent-encode a & in it as %26); accepted: {', '.join(accepted)}"
            )
        if name not in accepted:
            raise ValueError(
                f"{name!r} is not a query option of a {parts.scheme}:// URL here; "
                f"accepted: {', '.join(accepted)}"
            )
        if not _fits(name, value):
            raise ValueError(f"{name}={value!r}: should be {accepted[name]}")


def _port_is_no_number(parts: SplitResult) -> bool:
    """Whether the URL has a port that is no number (`urlsplit` says so once it is read)."""
    try:
        _ = parts.port
    except ValueError:
        return True
    return False


def _fits(name: str, value: str) -> bool:
    if not value:
        return False
    kind = accepted_options("rediss")[name]
    if kind.startswith("a whole number"):
        return value.isascii() and value.isdigit()
    if kind == "yes or no":
        return value.lower() in _YES_NO
    if name == "ssl_cert_reqs":
        return value in _CERT_REQS
    return True
