"""The retry policy: what is retried, how long to wait, when to stop."""

from __future__ import annotations

import pytest

from tfjob_provider.kube import errors
from tfjob_provider.kube.retry import Outage, RetryPolicy, is_retryable


def err(code: int, retry_after: float | None = None) -> errors.KubeApiError:
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
    return errors.error_from_response(code, b"", headers, request=None)


@pytest.mark.parametrize("code", [429, 500, 502, 503, 504])
def test_transient_statuses_are_retried(code: int) -> None:
    assert is_retryable(err(code))


@pytest.mark.parametrize("code", [400, 401, 403, 404, 409, 410, 422, 501])
def test_client_errors_are_never_retried(code: int) -> None:
    assert not is_retryable(err(code))
    assert RetryPolicy().wait_for(err(code), attempt=1) is None


def test_connection_errors_are_retried() -> None:
    assert is_retryable(errors.unavailable("connection reset", request=None))


def test_retry_after_is_a_minimum_and_bounded() -> None:
    policy = RetryPolicy(random=lambda: 0.0)
    assert policy.wait_for(err(429, retry_after=7), attempt=1) == 7.0
    assert policy.wait_for(err(503, retry_after=0), attempt=1) == 1.0  # the back-off step is longer
    assert policy.wait_for(err(503, retry_after=1), attempt=4) == 4.0  # "1 s" does not set the pace
    assert policy.wait_for(err(429, retry_after=86400), attempt=1) == policy.retry_after_max


def test_gives_up_once_the_outage_budget_is_spent() -> None:
    policy = RetryPolicy(budget=30.0, random=lambda: 0.0)
    assert policy.wait_for(err(503), attempt=9, elapsed=10.0) == 7.5
    assert policy.wait_for(err(503), attempt=9, elapsed=27.5) == 2.5  # the last wait ends on the budget
    assert policy.wait_for(err(503), attempt=2, elapsed=30.0) is None
    assert policy.wait_for(err(429, retry_after=5), attempt=2, elapsed=26.0) is None  # back after it
    assert policy.wait_for(err(429, retry_after=5), attempt=2, elapsed=25.0) == 5.0


def test_the_attempt_count_alone_never_ends_an_outage() -> None:
    policy = RetryPolicy(random=lambda: 0.0)
    assert policy.wait_for(err(503, retry_after=1), attempt=10_000, elapsed=100.0) == 7.5


def test_an_outage_is_measured_from_its_first_failure() -> None:
    now = [100.0]
    outage = Outage()
    assert outage.failed(lambda: now[0]) == (1, 0.0)
    now[0] = 112.5
    assert outage.failed(lambda: now[0]) == (2, 12.5)
    outage.over()
    now[0] = 200.0
    assert outage.failed(lambda: now[0]) == (1, 0.0)


@pytest.mark.parametrize("jitter", [0.0, 0.5, 0.999])
def test_backoff_grows_exponentially_within_bounds(jitter: float) -> None:
    policy = RetryPolicy(wait_min=1.0, wait_max=15.0, random=lambda: jitter)
    waits = [policy.backoff(attempt) for attempt in range(1, 9)]
    assert all(1.0 <= wait <= 15.0 for wait in waits)
    assert waits == sorted(waits)
    assert waits[3] >= 4.0  # step 8 -> at least half of it
    assert waits[-1] >= 7.5  # capped step 15 -> at least half of it


def test_jitter_spreads_waits() -> None:
    low = RetryPolicy(random=lambda: 0.0).backoff(4)
    high = RetryPolicy(random=lambda: 0.99).backoff(4)
    assert low == 4.0 and 7.9 < high <= 8.0


def test_invalid_settings_are_rejected() -> None:
    with pytest.raises(ValueError, match="outage budget"):
        RetryPolicy(budget=-1)
    with pytest.raises(ValueError):
        RetryPolicy(wait_min=5, wait_max=1)
