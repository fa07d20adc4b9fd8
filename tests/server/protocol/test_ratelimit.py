from __future__ import annotations

from solrace.server.protocol.ratelimit import CreditBucket


def test_the_budget_runs_out_and_refills_with_time() -> None:
    bucket = CreditBucket(capacity=3, refill_per_s=1, now=0.0)
    assert [bucket.spend(0.0) for _ in range(4)] == [True, True, True, False]
    assert bucket.spend(1.0)
    assert not bucket.spend(1.0)
    assert bucket.spend(100.0) and bucket.credits <= 3


def test_a_bucket_is_full_once_refilled_to_its_capacity() -> None:
    bucket = CreditBucket(capacity=3, refill_per_s=1, now=0.0)
    assert bucket.is_full(0.0)
    assert bucket.spend(0.0, 2)
    assert not bucket.is_full(1.0)  # one credit back of the two
    assert bucket.is_full(2.0)
