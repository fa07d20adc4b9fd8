from __future__ import annotations

from solrace.server.protocol.ratelimit import CreditBucket


def test_the_budget_runs_out_and_refills_with_time() -> None:
    bucket = CreditBucket(capacity=3, refill_per_s=1, now=0.0)
    assert [bucket.spend(0.0) for _ in range(4)] == [True, True, True, False]
    assert bucket.spend(1.0)
    assert not bucket.spend(1.0)
    assert bucket.spend(100.0) and bucket.credits <= 3


def test_looking_at_the_budget_spends_nothing() -> None:
    bucket = CreditBucket(capacity=2, refill_per_s=4, now=0.0)
    assert bucket.spend(0.0) and bucket.spend(0.0)
    assert not bucket.can_spend(0.0) and bucket.wait_s(0.0) == 0.25
    assert bucket.credits_at(0.125) == 0.5 and bucket.wait_s(0.125) == 0.125
    assert bucket.can_spend(0.25) and bucket.can_spend(0.25)  # still there: nothing was spent
    assert bucket.credits_at(60.0) == 2 and bucket.wait_s(60.0) == 0.0  # no further than full
