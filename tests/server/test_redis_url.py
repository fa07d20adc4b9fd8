"""`check_redis_url`: the query options a Redis URL may carry here, each with a value of its
kind; anything else is refused by name, before redis-py turns it into a `TypeError` at the
first connect or lets it replace the server's own timeouts."""

from __future__ import annotations

import pytest

from solrace.server.broker import BrokerError, RedisBroker
from solrace.server.redis_url import check_redis_url
from solrace.server.store.base import StoreError, StoreUnavailableError
from solrace.server.store.redis import RedisStore
from solrace.server.url_redaction import redact

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
        == "redis://***@h:1/0?db=1&password=***&a=b"
    )


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
