"""The token bucket, driven by a fake clock."""

from __future__ import annotations

import pytest

from tfjob_provider.kube.ratelimit import RateLimit, TokenBucket, shared_bucket


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_burst_is_free_then_requests_are_spaced_at_the_rate() -> None:
    clock = FakeClock()
    bucket = TokenBucket(RateLimit(rate=5, burst=10), clock=clock)
    waits = [bucket.reserve() for _ in range(15)]
    assert waits[:10] == [0.0] * 10
    assert waits[10:] == pytest.approx([0.2, 0.4, 0.6, 0.8, 1.0])


def test_tokens_refill_with_time_up_to_the_burst() -> None:
    clock = FakeClock()
    bucket = TokenBucket(RateLimit(rate=5, burst=10), clock=clock)
    for _ in range(10):
        bucket.reserve()
    clock.now += 1.0  # five tokens back: five free requests, then the sixth waits one interval
    assert [bucket.reserve() for _ in range(6)] == pytest.approx([0.0] * 5 + [0.2])
    clock.now += 100.0  # far more than the burst's worth of time: the bucket holds ten, not more
    assert [bucket.reserve() for _ in range(11)] == pytest.approx([0.0] * 10 + [0.2])


def test_defaults_follow_client_go() -> None:
    assert RateLimit() == RateLimit(rate=5.0, burst=10)


def test_a_burst_of_fifty_takes_eight_seconds_at_five_per_second() -> None:
    bucket = TokenBucket(clock=FakeClock())
    assert max(bucket.reserve() for _ in range(50)) == pytest.approx(8.0)


def test_shared_bucket_is_one_per_key() -> None:
    first = shared_bucket("test-conn-a", RateLimit(rate=1, burst=1))
    assert shared_bucket("test-conn-a") is first
    assert shared_bucket("test-conn-b") is not first
    assert first.limit.rate == 1


def test_bad_limits_are_rejected() -> None:
    with pytest.raises(ValueError):
        RateLimit(rate=0)
