from __future__ import annotations

from solrace.server.protocol.ratelimit import CreditBucket


def test_the_budget_runs_out_and_refills_with_time() -> None:
    bucket = CreditBucket(capacity=3, refill_per_s=1, now=0.0)
    assert [bucket.spend(0.0) for _ in range(4)] == [True, True, True, False]
    assert bucket.spend(1.0)
    assert not bucket.spend(1.0)
    assert bucket.spend(100.0) and bucket.credits <= 3
