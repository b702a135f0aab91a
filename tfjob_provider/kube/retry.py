"""The one retry policy for every Kubernetes request the provider makes.

Deciding *whether* and *how long* to wait is pure arithmetic on an error and an attempt number,
so it is written once here and used by both transports (and by the watch loop for reconnects).

What is retried, and why:

* **429 Too Many Requests** — API Priority and Fairness shed the request; the server says when
  to come back (``Retry-After``, or the older ``details.retryAfterSeconds``) and we obey it.
* **500, 502, 503, 504** and **connection errors / timeouts** (:class:`UnavailableError`) — an
  API server restarting, a load balancer failing over, etcd leader election.  A 503/504 with
  ``Retry-After`` is honoured the same way (the watch cache answers 504 + Retry-After when asked
  for a resourceVersion that is too new).

What is never retried: every other 4xx.  A 422 will be just as invalid next time, a 403 needs an
administrator, a 404/409 is an answer.  (Airflow's ``generic_api_retry`` also retries 409; for a
create that would turn "already exists" into five identical failures, so we do not.)

Back-off is exponential, bounded by ``wait_min``/``wait_max``, with "equal jitter": half the
step is fixed, the other half random, so many triggers that failed together do not come back
together, yet no wait is shorter than half the step.  Defaults follow Airflow's
``[workers] api_retries = 5``, ``api_retry_wait_min = 1``, ``api_retry_wait_max = 15``.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from tfjob_provider.kube.errors import KubeApiError, TooManyRequestsError, UnavailableError

#: HTTP statuses worth another attempt (besides 429, which has its own class).
RETRYABLE_SERVER_STATUSES = frozenset({500, 502, 503, 504})


def is_retryable(error: BaseException) -> bool:
    """True for 429, 500/502/503/504 and transport failures (no status); False for everything else."""
    if isinstance(error, TooManyRequestsError):
        return True
    if isinstance(error, UnavailableError):
        return error.status is None or error.status in RETRYABLE_SERVER_STATUSES
    return False


@dataclass(frozen=True)
class RetryPolicy:
    """How many times to try a request and how long to wait in between.

    ``wait_for(error, attempt=n)`` answers, after the ``n``-th failed attempt (1-based), how many
    seconds to sleep before the next one, or ``None`` to give up and raise ``error``.
    """

    attempts: int = 5
    """Total tries including the first (Airflow's ``[workers] api_retries`` default)."""

    wait_min: float = 1.0
    """First back-off step in seconds (``api_retry_wait_min``): long enough for a connection reset
    by a restarting API server to be followed by a listening one."""

    wait_max: float = 15.0
    """Cap of one back-off step (``api_retry_wait_max``): five tries then span ~30 s, enough to ride
    out an API server rollout without hiding a real outage for minutes."""

    retry_after_max: float = 120.0
    """Upper bound on a server-sent ``Retry-After``: obeyed as sent up to this, so a buggy proxy
    answering ``Retry-After: 86400`` cannot park a task for a day."""

    random: Callable[[], float] = field(default=random.random, compare=False, repr=False)
    """Source of jitter in [0, 1); injected so tests are deterministic."""

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("attempts must be >= 1")
        if not 0 <= self.wait_min <= self.wait_max:
            raise ValueError("need 0 <= wait_min <= wait_max")

    def backoff(self, attempt: int) -> float:
        """Jittered exponential step after the ``attempt``-th failure.

        step = min(wait_max, wait_min * 2**(attempt-1)); the wait is uniform in [step/2, step] and
        never below ``wait_min``, so it always lies within [wait_min, wait_max].
        """
        step = min(self.wait_max, self.wait_min * (2 ** max(0, attempt - 1)))
        jitter: float = self.random()
        return float(max(self.wait_min, step / 2 * (1.0 + jitter)))

    def wait_for(self, error: BaseException, *, attempt: int) -> float | None:
        """Seconds to wait before retrying after ``error`` ended the ``attempt``-th try, or ``None``."""
        if attempt >= self.attempts or not is_retryable(error):
            return None
        retry_after = getattr(error, "retry_after", None)
        if isinstance(retry_after, (int, float)) and retry_after >= 0:
            # The server knows its load better than our back-off does; obey it, bounded.
            return float(min(retry_after, self.retry_after_max))
        return self.backoff(attempt)


def describe_retry(error: KubeApiError, *, attempt: int, wait: float) -> str:
    """Log line for a retry, e.g. ``attempt 2 failed (503 ServiceUnavailable …); retrying in 2.3 s``."""
    return f"attempt {attempt} failed ({error.message}); retrying in {wait:.1f} s"


__all__ = ["RETRYABLE_SERVER_STATUSES", "RetryPolicy", "describe_retry", "is_retryable"]
