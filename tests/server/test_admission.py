"""The admission limits on their own: counts per address and in all, the handshake pace."""

from __future__ import annotations

import subprocess
import sys
from http import HTTPStatus

from solrace.server.admission import Admission, RefusalKind, client_key
from solrace.server.settings import Settings


def test_each_limit_comes_from_its_own_setting() -> None:
    settings = Settings(
        max_connections=1001,
        max_connections_per_address=7,
        connect_burst=3.5,
        connect_per_s=2.25,
        register_burst=11.0,
        register_per_s=0.125,
        register_node_burst=13.0,
        register_node_per_s=0.75,
    )
    admission = Admission.from_settings(settings)
    assert (admission.max_connections, admission.per_address) == (1001, 7)
    assert (admission.burst, admission.per_s) == (3.5, 2.25)
    assert (admission.register_burst, admission.register_per_s) == (11.0, 0.125)
    assert (admission.register_node_burst, admission.register_node_per_s) == (13.0, 0.75)


def test_an_address_past_its_cap_is_refused_until_one_of_its_connections_closes() -> None:
    admission = Admission(max_connections=100, per_address=2, burst=50, per_s=1)
    assert admission.arrive("10.0.0.1", 0) is None
    assert admission.arrive("10.0.0.1", 0) is None
    refusal = admission.arrive("10.0.0.1", 0)
    assert refusal is not None and refusal.kind is RefusalKind.ADDRESS_FULL
    assert refusal.status == HTTPStatus.TOO_MANY_REQUESTS and "at most 2 open" in refusal.text
    assert admission.arrive("10.0.0.2", 0) is None  # another address has its own cap
    admission.leave("10.0.0.1")  # the refused one closes
    admission.leave("10.0.0.1")  # and one that was let in
    assert admission.arrive("10.0.0.1", 0) is None
    assert admission.open == {"10.0.0.1": 2, "10.0.0.2": 1} and admission.total == 3


def test_handshakes_past_the_burst_wait_for_the_pace() -> None:
    admission = Admission(max_connections=100, per_address=50, burst=3, per_s=2)
    for _ in range(3):
        assert admission.arrive("10.0.0.1", 10.0) is None
    refusal = admission.arrive("10.0.0.1", 10.0)
    assert refusal is not None and refusal.kind is RefusalKind.TOO_OFTEN
    assert refusal.retry_after_s == 1
    assert admission.arrive("10.0.0.1", 10.5) is None  # one credit back after half a second
    assert admission.arrive("10.0.0.2", 10.5) is None


def test_the_node_cap_counts_every_address() -> None:
    admission = Admission(max_connections=2, per_address=0, burst=1, per_s=1)
    assert admission.arrive("10.0.0.1", 0) is None
    assert admission.arrive("10.0.0.2", 0) is None
    refusal = admission.arrive("10.0.0.3", 0)
    assert refusal is not None and refusal.kind is RefusalKind.NODE_FULL
    assert refusal.status == HTTPStatus.SERVICE_UNAVAILABLE


def test_no_per_address_limits_at_zero() -> None:
    admission = Admission(max_connections=1000, per_address=0, burst=1, per_s=0.001)
    assert all(admission.arrive("10.0.0.1", 0) is None for _ in range(500))
    assert not admission.openings


def test_far_past_a_cap_is_hopeless_and_just_past_it_is_answered() -> None:
    admission = Admission(max_connections=100, per_address=2, burst=50, per_s=1)
    for _ in range(4):
        admission.arrive("10.0.0.1", 0)
    assert not admission.hopeless("10.0.0.1")
    admission.arrive("10.0.0.1", 0)
    assert admission.hopeless("10.0.0.1")
    assert not admission.hopeless("10.0.0.2")
    node = Admission(max_connections=100, per_address=0, burst=50, per_s=1)
    for n in range(116):  # the cap and its tenth, at least 16
        node.arrive(f"10.0.1.{n}", 0)
    assert not node.hopeless("10.0.2.1")
    node.arrive("10.0.2.1", 0)
    assert node.hopeless("10.0.2.1")


def test_refilled_handshake_budgets_are_forgotten() -> None:
    admission = Admission(max_connections=100, per_address=10, burst=4, per_s=2)
    admission.arrive("10.0.0.1", 0)
    admission.arrive("10.0.0.2", 0.9)
    admission.forget_refilled(1.0)  # 10.0.0.1 spent one credit 1 s ago: back to 4
    assert set(admission.openings) == {"10.0.0.2"}
    admission.forget_refilled(1.5)
    assert not admission.openings


def test_client_keys() -> None:
    assert client_key("192.0.2.7") == "192.0.2.7"
    # One IPv6 host usually has a whole /64: it counts as one address.
    assert client_key("2001:db8:1:2:aaaa::1") == client_key("2001:db8:1:2:bbbb::9")
    assert client_key("2001:db8:1:2:aaaa::1") == "2001:db8:1:2::/64"
    assert client_key("2001:db8:1:3::1") != client_key("2001:db8:1:2::1")
    assert client_key("::ffff:192.0.2.7") == "192.0.2.7"
    assert client_key("not-an-ip") == "not-an-ip"


FIT = """
import logging, resource, sys
from solrace.server.admission import fit_to_descriptors
from solrace.server.settings import Settings
logging.basicConfig(level=logging.WARNING, format="%(message)s", stream=sys.stdout)
soft, hard, cap = (int(x) for x in sys.argv[1:])
resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
fitted = fit_to_descriptors(Settings(max_connections=cap))
print(fitted.max_connections, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
"""


def fit_in_a_process(soft: int, hard: int, cap: int) -> list[str]:
    """`fit_to_descriptors` in a process of its own (the limit is the process's): its log
    and the cap and soft limit it ends with."""
    done = subprocess.run(
        [sys.executable, "-c", FIT, str(soft), str(hard), str(cap)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.splitlines()


def test_the_connection_cap_fits_the_open_files_limit() -> None:
    # Room under the hard limit: the soft one is raised, the cap stays.
    assert fit_in_a_process(300, 5000, 1000) == ["1000 1164"]
    # No room: the cap is lowered so that its hard cap and the reserve fit, said in the log.
    assert fit_in_a_process(200, 200, 10_000) == [
        "max_connections lowered from 10000 to 120: the open-files limit is 200 (ulimit -n)",
        "120 200",
    ]


def test_new_names_have_a_budget_per_address_and_none_behind_a_proxy() -> None:
    admission = Admission(
        max_connections=100,
        per_address=64,
        burst=60,
        per_s=10,
        register_burst=2,
        register_per_s=0.1,
    )
    assert admission.register("a", 0.0) is None and admission.register("a", 0.0) is None
    assert admission.register("a", 0.0) == "too many new names from your address"
    assert admission.register("b", 0.0) is None  # another address has its own
    assert admission.register("a", 10.0) is None  # ten seconds later: one more
    admission.forget_refilled(100.0)
    assert not admission.registrations  # refilled budgets are dropped
    behind_proxy = Admission(
        max_connections=100, per_address=0, burst=60, per_s=10, register_burst=1, register_per_s=0.1
    )
    assert all(behind_proxy.register("proxy", 0.0) is None for _ in range(10))


def test_new_names_have_a_budget_on_the_node_whatever_their_addresses() -> None:
    admission = Admission(
        max_connections=100,
        per_address=64,
        burst=60,
        per_s=10,
        register_node_burst=3,
        register_node_per_s=0.5,
    )
    assert [admission.register(key, 0.0) for key in "abcd"] == [None, None, None, NODE_FULL]
    # The address refused by the node kept its own credit: it registers once the node refills.
    assert admission.register("d", 2.0) is None
    assert admission.register("e", 2.0) == NODE_FULL
    behind_proxy = Admission(
        max_connections=100,
        per_address=0,
        burst=60,
        per_s=10,
        register_node_burst=2,
        register_node_per_s=0.1,
    )
    assert [behind_proxy.register("proxy", 0.0) for _ in range(3)] == [None, None, NODE_FULL]


NODE_FULL = "too many new names on this server"


def test_a_name_not_made_gives_its_credits_back() -> None:
    admission = Admission(
        max_connections=100,
        per_address=64,
        burst=60,
        per_s=10,
        register_node_burst=1,
        register_node_per_s=0.001,
    )
    assert admission.register("10.0.0.1", 0.0) is None
    assert admission.register("10.0.0.2", 0.0) == "too many new names on this server"
    admission.unregister("10.0.0.1")
    assert admission.register("10.0.0.2", 0.0) is None
