"""`check_redis_url`: the query options a Redis URL may carry here, each with a value of its
kind; anything else is refused by name, before redis-py turns it into a `TypeError` at the
first connect or lets it replace the server's own timeouts."""

from __future__ import annotations

from pathlib import Path

import pytest

from solrace.server.broker import BrokerError, RedisBroker, open_broker
from solrace.server.redis_url import ENCODE_THE_PASSWORD, check_redis_url
from solrace.server.store.base import StoreError, StoreUnavailableError
from solrace.server.store.redis import RedisStore
from solrace.server.url_redaction import redact
from tests.server.serve_command import serve

TCP = "db, client_name, health_check_interval, socket_keepalive"


@pytest.mark.parametrize(
    "url",
    [
        "redis://127.0.0.1:6379/0",
        "redis://:pw@10.0.0.5:6379/2?client_name=node-a&health_check_interval=30",
        "redis://h:6379/0?socket_keepalive=yes&db=3",
        "rediss://h:6380/0?ssl_cert_reqs=none&ssl_check_hostname=false",
        "rediss://h:6380/0?ssl_ca_certs=/etc/ca.pem&ssl_certfile=c.pem&ssl_keyfile=k.pem",
        "unix:///run/redis.sock?db=1",
        "redis://h:6379",
        "redis://h:6379/",
        "redis://h:6379/12",
    ],
)
def test_the_options_listed_are_taken(url: str) -> None:
    check_redis_url(url)


@pytest.mark.parametrize(
    ("url", "refusal"),
    [
        (
            "redis://127.0.0.1:6379/0?foo=bar",
            f"'foo' is not a query option of a redis:// URL here; accepted: {TCP}",
        ),
        (
            "redis://127.0.0.1:6379/0?ssl_cert_reqs=none",
            f"'ssl_cert_reqs' is not a query option of a redis:// URL here; accepted: {TCP}",
        ),
        (
            "redis://127.0.0.1:6379/0?socket_timeout=5",
            f"'socket_timeout' is not a query option of a redis:// URL here; accepted: {TCP}",
        ),
        (
            "unix:///run/redis.sock?socket_keepalive=yes",
            "'socket_keepalive' is not a query option of a unix:// URL here; accepted: db, "
            "client_name, health_check_interval",
        ),
        ("redis://h:6379/abc", "the database 'abc' is not a whole number (redis://HOST:PORT/DB"),
        ("rediss://h:6379/-1", "the database '-1' is not a whole number (rediss://HOST:PORT/DB"),
        ("redis://h:6379/1/2", "the database '1/2' is not a whole number"),
        ("redis://h:6379/0?db=one", "db='one': should be a whole number"),
        ("redis://h:6379/0?db=-1", "db='-1': should be a whole number"),
        ("redis://h:6379/0?db=", "db='': should be a whole number"),
        ("redis://h:6379/0?health_check_interval=1.5", "should be a whole number of seconds"),
        (
            "redis://h:6379/0?socket_keepalive=maybe",
            "socket_keepalive='maybe': should be yes or no",
        ),
        (
            "rediss://h:6380/0?ssl_cert_reqs=never",
            "ssl_cert_reqs='never': should be none, optional or required",
        ),
    ],
)
def test_other_options_and_wrong_values_are_refused_by_name(url: str, refusal: str) -> None:
    with pytest.raises(ValueError) as refused:
        check_redis_url(url)
    assert refusal in str(refused.value)


def test_a_password_in_the_query_is_refused_and_never_shown() -> None:
    url = "redis://127.0.0.1:6379/0?password=hunter2"
    with pytest.raises(ValueError) as refused:
        check_redis_url(url)
    assert "goes before the host" in str(refused.value)
    assert "hunter2" not in str(refused.value)
    assert redact(url) == "redis://127.0.0.1:6379/0?password=***"
    assert (
        redact("redis://:hunter2@h:1/0?db=1&password=x&a=b")
        == "redis://***@h:1/0?db=1&password=***"
    )


@pytest.mark.parametrize(
    "url", ["unix:///run/r.sock?db=0&password=pw", "unix:///run/r.sock?password=p%26w&db=2"]
)
def test_a_socket_url_takes_its_password_in_the_query(url: str) -> None:
    """The form redis-py documents for sockets (`unix:///PATH?db=0&password=PASSWORD`)."""
    check_redis_url(url)


@pytest.mark.parametrize(
    ("url", "refusal"),
    [
        (
            "unix:///run/r.sock?db=0&password=Zx9&Qw",
            "an option after the password in the query is not one a unix:// URL takes here, "
            "or has no value of its kind (not shown, as it may be a piece of the password: "
            "percent-encode a & in it as %26); accepted: db, client_name, health_check_interval",
        ),
        ("unix:///run/r.sock?db=0&password=Zx9&db=Qw", "an option after the password"),
        ("unix:///run/r.sock?db=0&password=Zx9#Qw", ENCODE_THE_PASSWORD),
        (
            "unix:///run/r.sock?username=Zx9",
            "the username goes before the path, not in the query: "
            "unix://[USER]:PASSWORD@/PATH?db=N (or unix:///PATH?db=N&password=PASSWORD)",
        ),
    ],
)
def test_what_follows_a_socket_urls_password_is_refused_unshown(url: str, refusal: str) -> None:
    """A raw `&` or `#` in a password in the query makes its rest look like options (or a
    fragment): refused, naming none of it; the log shows nothing after `password=`."""
    with pytest.raises(ValueError) as refused:
        check_redis_url(url)
    assert refusal in str(refused.value)
    assert "Qw" not in str(refused.value)
    assert "Qw" not in redact(url)


#: Pieces of the password `Zx9?Qw+Secr3t=` (or with `/`, `#`): none may be shown.
PIECES = ("Zx9", "Qw", "Secr3t")


@pytest.mark.parametrize("raw", ["/", "?", "#"])
async def test_a_password_with_a_character_to_percent_encode_is_refused_unshown(
    raw: str,
) -> None:
    """A raw `/`, `?` or `#` (`openssl rand -base64` gives `/`) ends the host part: the rest
    of the password was read as the database, a query option or, by redis-py, the port; each
    refusal showed a piece of it. It is refused saying what to percent-encode, showing none
    of it, by `check_redis_url`, the store and the broker (before any connection: no Redis
    is needed at that port)."""
    url = f"redis://:Zx9{raw}Qw+Secr3t=@127.0.0.1:6379/3"
    with pytest.raises(ValueError) as refused:
        check_redis_url(url)
    with pytest.raises(StoreError) as store_refused:
        await RedisStore(url).open()
    with pytest.raises(BrokerError) as broker_refused:
        await RedisBroker(url).open()
    said = [str(refused.value), str(store_refused.value), str(broker_refused.value)]
    assert said == [
        ENCODE_THE_PASSWORD,
        f"invalid Redis URL: {ENCODE_THE_PASSWORD}",
        f"invalid Redis URL: {ENCODE_THE_PASSWORD}",
    ]
    assert ENCODE_THE_PASSWORD == (
        "the password has a character to percent-encode (/ -> %2F, ? -> %3F, # -> %23, @ -> %40)"
    )
    assert not [line for line in said for piece in PIECES if piece in line]


async def test_a_password_without_its_host_is_not_shown_as_the_port() -> None:
    """`redis://:PASSWORD/0` (the `@HOST:PORT` left out): redis-py read the password as the
    port and named it (`Port could not be cast to integer value as '...'`)."""
    url = "rediss://:Zx9Qw+Secr3t=/0"
    with pytest.raises(StoreError) as refused:
        await RedisStore(url).open()
    assert str(refused.value) == (
        "invalid Redis URL: no host, and no port number after the ':' (not shown): a password "
        "goes before an @, rediss://[USER]:PASSWORD@HOST:PORT/DB"
    )
    check_redis_url("redis://:6379/0")  # no host (localhost) and a port: taken


@pytest.mark.usefixtures("no_solrace_environment")
@pytest.mark.parametrize("raw", ["/", "?", "#"])
def test_solrace_serve_refuses_such_a_password_unshown(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, raw: str
) -> None:
    url = f"redis://:Zx9{raw}Qw+Secr3t=@127.0.0.1:6379/3"
    argv = ["--port", "0", "--data-dir", str(tmp_path), "--secret", "s" * 16, "--redis", url]
    assert serve(capsys, *argv) == (
        1,
        [
            "solrace serve: error: redis://***@127.0.0.1:6379/3: invalid Redis URL: "
            f"{ENCODE_THE_PASSWORD}"
        ],
    )


@pytest.mark.usefixtures("no_solrace_environment")
def test_a_store_url_of_another_scheme_is_named_without_its_password(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A scheme neither store nor broker takes (`redis+unix://`, a one-slash `redis:/`): the
    refusal names the URL, its password hidden."""
    url = "redis+unix://:Zx9Qw@h/0"
    argv = ["--port", "0", "--data-dir", str(tmp_path), "--store", url]
    assert serve(capsys, *argv) == (
        1,
        [
            "solrace serve: error: unsupported store URL 'redis+unix://***@h/0'; accepted: "
            "memory:, sqlite:PATH, redis://[:PASSWORD@]HOST:PORT/DB, rediss://... (TLS) or "
            "unix://PATH (a Redis socket)"
        ],
    )
    with pytest.raises(ValueError) as refused:
        open_broker("redis:/:Zx9Qw@h/0")
    assert str(refused.value).startswith("unsupported broker URL 'redis:/***@h/0'; accepted: ")


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://:Zx9/Qw+Secr3t=@127.0.0.1:1/3", "redis://***@127.0.0.1:1/3"),
        ("redis://:Zx9@Qw+Secr3t=@127.0.0.1:1/3", "redis://***@127.0.0.1:1/3"),
        ("redis:/:Zx9Qw+Secr3t=@127.0.0.1:1/3", "redis:/***@127.0.0.1:1/3"),
        ("unix:///run/r.sock?db=0&password=Zx9@Qw", "unix:///run/r.sock?db=0&password=***"),
        ("sqlite:/home/me@work/solrace.sqlite3", "sqlite:/home/me@work/solrace.sqlite3"),
        ("/home/me@work", "/home/me@work"),
    ],
)
def test_redact_hides_everything_before_the_last_at(url: str, shown: str) -> None:
    """A password may hold an `@`, or a `/` that ends the host part before it: everything
    between the scheme and the last `@` is hidden. A file's path is shown as it is."""
    assert redact(url) == shown


@pytest.mark.redis
async def test_a_database_that_is_no_number_is_refused_by_the_store_and_the_broker(
    redis_url: str,
) -> None:
    """redis-py reads `/abc` as database 0: a node given it joined the data of the nodes on
    database 0. The store and the broker refuse it at open, as a URL that does not parse
    (not as Redis away: retrying would not help)."""
    url = redis_url.rsplit("/", 1)[0] + "/abc"
    refusal = "invalid Redis URL: the database 'abc' is not a whole number"
    with pytest.raises(StoreError, match=refusal) as refused:
        await RedisStore(url).open()
    assert not isinstance(refused.value, StoreUnavailableError)
    with pytest.raises(BrokerError, match=refusal):
        await RedisBroker(url).open()
